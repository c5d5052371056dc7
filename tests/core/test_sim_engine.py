"""The simulator's engine: work takes effect in time order; ties between unordered work follow
LABKIT_SIM_SEED, so a rerun repeats them; reads happen at an op's start and writes at its end."""
import labkit  # noqa: F401  (before numba.cuda)
import numpy as np

from labkit.sim import _engine


def _order(seed, monkeypatch, n=8):
    """The order n ops that all start at one instant take effect in, under ``seed``."""
    monkeypatch.setenv("LABKIT_SIM_SEED", str(seed))
    monkeypatch.setattr(_engine, "_rng", [])
    monkeypatch.setitem(_engine._state, "now", _engine._state["now"])   # the clock goes back after
    done = []
    t = _engine._state["now"] + 1e9
    for i in range(n):
        _engine.schedule(_engine.Op(f"op{i}", None, t, t, lambda i=i: (done.append(i), [])[1]))
    _engine.advance(t)
    return done


def test_tied_ops_take_effect_in_an_order_the_seed_fixes(monkeypatch):
    first = _order(7, monkeypatch)
    assert sorted(first) == list(range(8))
    assert _order(7, monkeypatch) == first           # the same seed, the same order
    others = {tuple(_order(s, monkeypatch)) for s in range(1, 6)}
    assert len(others) > 1                           # another seed, another order


def test_an_op_reads_at_its_start_and_writes_at_its_end(monkeypatch):
    monkeypatch.setitem(_engine._state, "now", _engine._state["now"])
    buf = np.zeros(4, np.uint32)
    t0 = _engine._state["now"] + 2e9
    writer = _engine.Op("writer", None, t0, t0 + 10, None)
    writer.begin = lambda: [(buf, slice(0, 4), np.full(4, 7, np.uint32), "buf", 0)]
    seen = []
    reader = _engine.Op("reader", None, t0 + 5, t0 + 6,
                        lambda: (seen.append(buf.copy()), [])[1])
    late = _engine.Op("late", None, t0 + 10, t0 + 11,
                      lambda: (seen.append(buf.copy()), [])[1])
    for op in (writer, reader, late):
        _engine.schedule(op)
    _engine.advance(t0 + 9)
    assert buf.tolist() == [0, 0, 0, 0] and seen[0].tolist() == [0, 0, 0, 0]
    _engine.advance(t0 + 20)
    assert buf.tolist() == [7, 7, 7, 7]
    assert seen[1].tolist() == [7, 7, 7, 7]          # at one instant, writes land first
