"""Check for notebook 07's exercise: the capstone's capture (k steps per graph) and replay loop."""
from __future__ import annotations

import numpy as np

from .. import decoder as dec
from ..._errors import check
from ..._handles import stream_handle
from ..._streams import Stream
from ...backends import host_us, rt

__all__ = ["check_capstone", "KS", "PROMPT"]

KS = (1, 3, 5)                   # several k: a build that ignores its k is right for one at most
PROMPT = (7, 3, 11, 2)           # the capstone check's prompt (prefilled eagerly by the check)


def _is_exec(x) -> bool:
    return hasattr(x, "launch") and hasattr(x, "graph")


SLOW = 1                         # the replay whose launch call the check makes slow on purpose


class _CountingExec:
    """The learner's executable, counting its launches (what a replay loop must do once per
    token); everything else is the executable's own.

    Launch number ``SLOW`` (from 0) spends ``delay_us`` of host time in API calls before it
    launches, as a slow launch path would: a replay's latency, timed from before its launch
    (by the host's clock or by CUDA events), must show it; a clock started after the launch
    call, or one figure repeated for every replay, cannot."""

    def __init__(self, ex, delay_us: float = 0.0):
        self._ex, self.launches, self.at_us = ex, 0, []
        self.delay_us = float(delay_us)
        self._idle = None

    def launch(self, *args, **kwargs):
        self.at_us.append(host_us())
        if self.launches == SLOW and self.delay_us > 0:
            if self._idle is None:
                self._idle = Stream()
            t0 = host_us()
            while host_us() - t0 < self.delay_us:       # real API calls: both backends' clocks
                rt.cudaStreamQuery(stream_handle(self._idle))
        self.launches += 1
        return self._ex.launch(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._ex, name)


def check_capstone(build, decode, stream, ks=KS, launches: int = 3, seed: int = 5) -> dict:
    """Check the capstone's two functions, for every ``k`` in ``ks``:

    * ``build(model, stream, k)`` returns an executable graph of ``k`` decode steps;
    * ``decode(exec_, launches, stream)`` replays it ``launches`` times, one after another (each
      waited for before the next is launched), and returns each replay's latency (µs, from before the launch until its tokens are ready).

    For each ``k`` a fresh model is made and a prompt prefilled eagerly
    (`labkit.course.decoder.prefill`); the ``k * launches`` tokens the learner's loop makes
    must equal numpy's. Returns ``{k: "what was checked"}``.
    """
    out = {}
    for k in ks:
        m = dec.make_model(seed=seed)
        ex = build(m, stream, k)
        if not _is_exec(ex):
            raise AssertionError(f"build(...) must return an executable graph (what "
                                 f"graph.instantiate() returns), got {type(ex).__name__}")
        per = m.cfg.kernels_per_token
        nodes = len(ex.graph.kernel_nodes())
        if nodes != k * per:
            raise AssertionError(
                f"for k = {k} your graph holds {nodes} kernel nodes, {nodes / per:g} decode "
                f"steps' worth ({per} kernels per step), so one launch makes {nodes / per:g} "
                f"tokens, not {k}. Does what you capture depend on k?")
        dec.prefill(m, PROMPT, stream)
        # what one replay takes when it is waited for: the learner's latencies must cover it
        t0 = host_us()
        ex.launch(stream)
        check(rt.cudaStreamSynchronize(stream_handle(stream)), "synchronize")
        full = host_us() - t0
        dec.prefill(m, PROMPT, stream)             # that replay moved the position: start again
        delay = max(3 * full, 200.0)
        counted = _CountingExec(ex, delay if launches > SLOW + 1 else 0.0)
        lat = decode(counted, launches, stream)
        check(rt.cudaStreamSynchronize(stream_handle(stream)), "synchronize")
        if counted.launches != launches:
            raise AssertionError(
                f"decode(exec_, {launches}, stream) launched the graph {counted.launches} "
                f"times: each of the {launches} replays is one launch of exec_")
        if lat is None or len(lat) != launches:
            raise AssertionError(f"decode must return one latency per replay ({launches}), got "
                                 f"{'nothing' if lat is None else len(lat)}")
        n = k * launches
        got = dec.generated(m, PROMPT, n)
        want = dec.reference_generate(m, PROMPT, n)
        if not np.array_equal(got, want):
            i = int(np.argmax(got != want))
            raise AssertionError(
                f"for k = {k} the tokens differ from numpy's from token {i} on (got {got[i]}, "
                f"expected {want[i]}). Does each replay continue from the position the last "
                "one left in device memory?")
        lat = np.asarray(lat, float)
        if not np.median(lat) > 0.5 * full:
            raise AssertionError(
                f"for k = {k} your replays' median latency is {np.median(lat):.1f} µs, but a "
                f"replay takes about {full:.0f} µs until its tokens are ready: what does your "
                "timer measure, the launch call alone? (and in µs?)")
        if np.median(lat) > 100 * full:
            raise AssertionError(
                f"for k = {k} your replays' median latency is {np.median(lat):,.0f}, but a "
                f"replay takes about {full:.0f} µs until its tokens are ready: your figures are "
                "a thousand times too large. In what unit does your clock count?")
        gaps = np.diff(counted.at_us)
        if len(gaps) and np.min(gaps) < 0.5 * full:     # min: the slowed launch widens one gap
            raise AssertionError(
                f"for k = {k} your loop launched each replay about {np.min(gaps):.1f} µs after "
                f"the one before, but a replay takes about {full:.0f} µs until its tokens are "
                "ready: the replays overlapped, so no latency you return is one replay's. What "
                "must happen between one replay's launch and the next one's?")
        if len(lat) > 2 and np.all(np.diff(lat) > 0) and lat[-1] > 2.5 * lat[0]:
            raise AssertionError(
                f"for k = {k} your latencies grow with every replay "
                f"({', '.join(f'{v:.0f}' for v in lat)} µs), as if each counted the replays before it: where does each one's clock "
                "start?")
        if counted.delay_us:
            others = np.delete(lat, SLOW)
            grew = lat[SLOW] - np.median(others)
            same = np.ptp(lat) <= 1e-9 * max(abs(lat).max(), 1.0)
            # a mean over the loop holds a share of the slowed call; a clock started after the
            # launch holds none (on a steady simulated host its figures are equal too)
            if same and lat[0] > full + delay / (2 * launches):
                raise AssertionError(
                    f"for k = {k} every replay has the same latency, {lat[0]:.1f} µs, but the "
                    f"check made replay {SLOW + 1}'s launch call about {delay:.0f} µs slower on "
                    "purpose: one figure for all of them (a mean?) cannot show it. Time each "
                    "replay on its own")
            if grew < 0.5 * delay:
                raise AssertionError(
                    f"for k = {k} the check made replay {SLOW + 1}'s launch call about "
                    f"{delay:.0f} µs slower on purpose, but your latency for it is only "
                    f"{grew:.1f} µs above the others': a replay's latency starts before its "
                    "launch. Where does your clock start?")
        out[k] = (f"{n} tokens equal numpy's; {np.median(lat) / k:.1f} µs per token "
                  f"(the median replay's; the check slowed replay {SLOW + 1} on purpose)")
        ex.close()
    return out
