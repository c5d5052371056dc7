"""The timing claims of notebook 08 (conditional nodes and the device loop)."""
from labkit.measure.claims import claim

__all__ = ["loop_frees_the_host", "loop_near_back_to_back", "gain_small_at_a_large_step",
           "stream_is_steady"]


@claim("the device loop costs the host at most a tenth of the CPU per token of one graph per token",
       why="one launch per generation, and the host sleeps while the GPU decodes; a host that "
           "spins instead of sleeping pays the whole wait", look="the host-CPU bars (08-2)")
def loop_frees_the_host(loop_cpu_us, graph_cpu_us):
    return loop_cpu_us <= 0.1 * graph_cpu_us, (f"{loop_cpu_us:.1f} µs vs {graph_cpu_us:.1f} µs of "
                                               "host CPU per token")


@claim("the device loop makes at least 0.85× the back-to-back limit's tokens per second",
       why="each WHILE iteration adds a few µs to the step; on a GPU whose steps are much shorter "
           "that share grows", look="the throughput bars (08-2)")
def loop_near_back_to_back(loop_tokens_per_s, b2b_tokens_per_s):
    r = loop_tokens_per_s / b2b_tokens_per_s
    return r >= 0.85, f"{r:.2f}× ({loop_tokens_per_s:,.0f} vs {b2b_tokens_per_s:,.0f} tokens/s)"


@claim("at the full step the device loop is within 10% of one graph per token in tokens/s",
       why="this host's round trip is much longer (a busy or slow host), or this GPU's WHILE "
           "iteration much dearer, than the calibration's", look="the step-size bars (08-3)")
def gain_small_at_a_large_step(kernels, ratio):
    return abs(ratio - 1) < 0.1, f"{ratio:.3f}× at {kernels} kernels per token"


@claim("the streaming loop hands the host each token about one step after the last",
       why="the host thread that watches the mapped memory was descheduled or slow to read it",
       look="the arrival plot (08-4)")
def stream_is_steady(inter_token_p50_us, step_us):
    return inter_token_p50_us < 1.5 * step_us, (f"median gap {inter_token_p50_us:.1f} µs, a step "
                                                f"{step_us:.1f} µs")
