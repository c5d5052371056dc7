"""Check for notebook 11's exercise: a sampler graph whose every replay draws new numbers."""
from __future__ import annotations

import numpy as np

from ..._capture import capture
from ..._kernel import device_array, to_device
from ..production import uniform_reference

__all__ = ["check_sampler", "SEED", "N", "REPLAYS"]

SEED, N, REPLAYS = 2026, 512, 4


def check_sampler(record, stream, seed: int = SEED, n: int = N, replays: int = REPLAYS) -> list:
    """Check ``record(stream, out, state)``, the work of one draw of ``n = out.size`` numbers.

    The check captures ``record`` once, instantiates the graph and replays it ``replays`` times,
    with ``state`` a device array ``[seed, 0]`` (uint64: the generator's seed and offset). Replay
    ``k`` (from 0) must leave in ``out`` numbers ``k·n`` … ``k·n + n - 1`` of the seed's stream
    (`labkit.course.production.uniform_reference`): every replay new numbers, none repeated,
    none skipped, as an eager loop would draw them. Returns the draws, one array per replay.
    """
    if not callable(record):
        raise TypeError("record must be a function record(stream, out, state)")
    out = device_array(n, np.float32)
    state = to_device(np.array([seed, 0], np.uint64))
    with capture(stream) as cap:
        record(stream, out, state)
    draws = []
    with cap.graph, cap.graph.instantiate() as ex:
        for _ in range(replays):
            ex.launch(stream)
            stream.synchronize()
            draws.append(out.copy_to_host())
    stream_of = uniform_reference(seed, 0, (replays + 1) * n)
    if np.array_equal(draws[0], draws[1]):
        raise AssertionError(
            "replays 1 and 2 drew the same numbers. A replay runs only what the graph recorded: "
            "a seed or offset passed as a kernel argument, or copied from the host during the "
            "capture, was frozen then. What inside the graph could move the generator on?")
    first = _where(draws[0], stream_of)
    if first is None:
        raise AssertionError(
            f"replay 1 drew numbers that are not from the stream of seed {seed} (the seed is "
            "state[0]): draw with the seed and offset the graph reads from state")
    if first != 0:
        raise AssertionError(
            f"replay 1 drew numbers {first} … {first + n - 1} of the stream, not 0 … {n - 1}: "
            "the first replay should start where the generator's offset starts. In which order "
            "do your draw and your advance run?")
    for k in range(1, replays):
        at = _where(draws[k], stream_of)
        if at != k * n:
            where = "numbers from elsewhere" if at is None else f"numbers {at} … {at + n - 1}"
            overlap = (f", repeating {max(0, k * n - at)} numbers of the replay before"
                       if at is not None and at < k * n else "")
            raise AssertionError(
                f"replay {k + 1} drew {where}{overlap}, not {k * n} … {k * n + n - 1}: each "
                f"replay should continue where the last one stopped. By how much must the "
                "offset move per replay?")
    return draws


def _where(draw, stream_of):
    """The offset at which ``draw`` appears in ``stream_of``, or None."""
    n = draw.size
    hits = np.flatnonzero(stream_of[:stream_of.size - n + 1] == draw[0])
    for h in hits:
        if np.array_equal(stream_of[h:h + n], draw):
            return int(h)
    return None
