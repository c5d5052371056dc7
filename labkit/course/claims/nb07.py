"""The timing claims of notebook 07 (the capstone decoder)."""
from labkit.measure.claims import claim

__all__ = ["graph_decodes_faster", "graph_pays_back_within_a_generation"]


@claim("one graph launch per token decodes over twice as fast as dozens of eager launches",
       why="this GPU's kernels take longer than a launch here, so a token costs the GPU's time "
           "either way", look="the throughput bars (07-1)")
def graph_decodes_faster(eager_tokens_per_s, graph_tokens_per_s):
    r = graph_tokens_per_s / eager_tokens_per_s
    return r > 2, (f"graph {graph_tokens_per_s:,.0f}, eager {eager_tokens_per_s:,.0f} tokens/s "
                   f"({r:.1f}×)")


@claim("the graph's setup is paid back within one generation",
       why="this GPU's kernels take longer than a launch here, so each token saves little and the "
           "setup takes longer to pay back", look="the amortization plot (07-3)")
def graph_pays_back_within_a_generation(breakeven_tokens, tokens):
    be = breakeven_tokens
    return be is not None and be < tokens, (
        "no break-even (the graph saves nothing per token)" if be is None
        else f"break-even after {be:.1f} tokens, a generation of {tokens}")
