"""labkit.course.show: the course's code as the learner reads it, and streams named by role."""
import labkit
from labkit import timing
from labkit.course import decoder as dec, show


def test_source_shows_a_kernels_python_body_with_its_decorator():
    text = repr(show.source(dec.matvec))
    assert text.startswith("@kernel(reference=_matvec_ref") and "def matvec(W, x, y):" in text


def test_the_stream_with_the_kernels_is_the_decode_stream_and_the_copies_are_named_apart():
    m = dec.make_model(seed=0)
    with labkit.Stream() as s:
        ex = dec.capture_step(m, s)
        with timing.timeline("two tokens") as rec:
            dec.generate_graph(m, 1, 2, s, exec_=ex)
        row = f"stream {labkit.stream_handle(s)}"
    names = show.stream_roles(rec.timeline)
    assert sorted(names.values()) == ["copies", "decode stream"]
    assert names[row] == "decode stream"
