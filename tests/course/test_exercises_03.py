"""Notebook 03's check measures the costs itself, accepts the break-even or the whole number of
iterations, rejects each usual wrong answer with its own explanation, and judges the figures
the exercise cell prints."""
import math

import labkit  # noqa: F401  (before numba.cuda)
import pytest

from labkit.course.exercises import nb03
from labkit.course.exercises.nb03 import check_pays_off
from tests.notebook_sources import run_cell


def _setup(ph, parts=("capture", "instantiate", "upload")):
    return sum(ph[k].median for k in parts)


def _answer(setup, saving, whole=True):
    if saving <= 0:
        return None
    return math.ceil(setup / saving) if whole else setup / saving


def test_accepts_the_whole_number_of_iterations(capsys):
    check_pays_off(lambda ph, e: _answer(_setup(ph), e - ph["steady_launch"].median))
    assert capsys.readouterr().out.startswith("correct. The 10-kernel chain of chain_costs()")


def test_accepts_the_break_even_itself():
    check_pays_off(lambda ph, e: _answer(_setup(ph), e - ph["steady_launch"].median, whole=False))


def test_rejects_the_break_even_rounded_down():
    with pytest.raises(AssertionError, match=r"^for a made-up graph .* your function gives 10: after 10 "
                                             r"iterations the graph has not yet paid .* Round up"):
        check_pays_off(lambda ph, e: math.floor(_setup(ph) / (e - ph["steady_launch"].median)))


def test_rejects_the_starters_instantiate_over_eager():
    with pytest.raises(AssertionError, match=r"your function gives 1\.28571: you divided the setup by "
                                             r"the eager iteration's cost, as the starting code does"):
        check_pays_off(lambda ph, e: ph["instantiate"].median / e)


def test_rejects_the_whole_setup_over_the_eager_cost():
    with pytest.raises(AssertionError, match=r"gives 5\.85714: you divided the setup by the eager "
                                             r"iteration's cost, but a graph iteration is not free"):
        check_pays_off(lambda ph, e: _setup(ph) / e)


def test_rejects_the_setup_over_the_graph_cost():
    with pytest.raises(AssertionError, match=r"gives 14: you divided the setup by the graph iteration's"):
        check_pays_off(lambda ph, e: math.ceil(_setup(ph) / ph["steady_launch"].median))


def test_rejects_the_launch_call_alone_as_the_graph_iteration():
    # what setting graph10 to the launch call's median did: it passed the old check
    with pytest.raises(AssertionError, match=r"gives 7: you took the graph iteration as the launch "
                                             r"call alone, .* compare like with like"):
        check_pays_off(lambda ph, e: _answer(_setup(ph), e - ph["launch_call"].median))


def test_rejects_a_setup_of_instantiation_alone():
    with pytest.raises(AssertionError, match=r"gives 3: your setup is only the instantiation"):
        check_pays_off(lambda ph, e: _answer(ph["instantiate"].median, e - ph["steady_launch"].median))


def test_rejects_a_setup_without_the_upload():
    with pytest.raises(AssertionError, match=r"gives 9: your setup leaves out the upload"):
        check_pays_off(lambda ph, e: _answer(_setup(ph, ("capture", "instantiate")),
                                             e - ph["steady_launch"].median))


def test_rejects_a_setup_without_the_capture():
    with pytest.raises(AssertionError, match=r"gives 4\.25: your setup leaves out the capture"):
        check_pays_off(lambda ph, e: _answer(_setup(ph, ("instantiate", "upload")),
                                             e - ph["steady_launch"].median, whole=False))


def test_rejects_a_setup_that_counts_the_first_launch():
    with pytest.raises(AssertionError, match=r"gives 13: your setup counts the first launch too"):
        check_pays_off(lambda ph, e: _answer(
            _setup(ph, ("capture", "instantiate", "upload", "first_launch")),
            e - ph["steady_launch"].median))


def test_rejects_the_first_launch_after_upload_as_the_graph_iteration():
    with pytest.raises(AssertionError, match=r"gives 12: your graph iteration is the first launch "
                                             r"after the upload"):
        check_pays_off(lambda ph, e: _answer(_setup(ph), e - ph["uploaded_first_launch"].median))


def test_rejects_pythons_round_which_rounds_a_quarter_down():
    # 10.25 iterations: round() gives 10, after which the graph has not yet paid
    with pytest.raises(AssertionError, match=r"^for a made-up graph .* your function gives 10: after 10 "
                                             r"iterations the graph has not yet paid .* Round up"):
        check_pays_off(lambda ph, e: round(_setup(ph) / (e - ph["steady_launch"].median)))


def test_rejects_a_division_by_a_saving_of_exactly_zero():
    def no_guard_for_zero(ph, e):
        saving = e - ph["steady_launch"].median
        if saving < 0:                       # forgets the iteration that saves exactly nothing
            return None
        return math.ceil(_setup(ph) / saving)
    with pytest.raises(AssertionError, match=r"^for the same made-up graph against an eager iteration "
                                             r"of 150 µs, exactly its steady launch, your function "
                                             r"divided by zero"):
        check_pays_off(no_guard_for_zero)


def test_rejects_infinity_where_a_saving_of_zero_never_pays_off():
    def infinite(ph, e):
        saving = e - ph["steady_launch"].median
        if saving < 0:
            return None
        return math.inf if saving == 0 else math.ceil(_setup(ph) / saving)
    with pytest.raises(AssertionError, match=r"^for the same made-up graph against an eager iteration "
                                             r"of 150 µs, .* Return None there \(your function gave inf"):
        check_pays_off(infinite)


def test_rejects_a_count_where_the_graph_never_pays_off():
    with pytest.raises(AssertionError, match=r"^for the same made-up graph against an eager iteration "
                                             r"of 100 µs, .* Return None there \(your function gave -41"):
        check_pays_off(lambda ph, e: _setup(ph) / (e - ph["steady_launch"].median))


def test_rejects_none_where_the_graph_pays_off():
    with pytest.raises(AssertionError, match=r"^for a made-up graph .* the setup is paid back "
                                             r"eventually: return the number of iterations, not None"):
        check_pays_off(lambda ph, e: None)


def test_rejects_a_number_fitted_to_the_made_up_graph_alone():
    # right on the made-up costs, a constant elsewhere: the measured chain catches it
    def fitted(ph, e):
        if ph["capture"].median == nb03.MADE_UP["capture"]:
            return _answer(_setup(ph), e - ph["steady_launch"].median)
        return 1000
    with pytest.raises(AssertionError, match=r"^for the 10-kernel chain of chain_costs\(\) your "
                                             r"function gives 1000, which is not the break-even"):
        check_pays_off(fitted)


def test_asks_for_the_function_not_its_result():
    with pytest.raises(ValueError, match=r"^pass your function itself, check_pays_off\(pays_off_after\)"):
        check_pays_off(3.0)


def test_the_made_up_costs_give_every_mistake_its_own_answer():
    ph = {k: v for k, v in nb03.MADE_UP.items()}
    right = _setup({k: type("S", (), {"median": v}) for k, v in ph.items()}) / (
        nb03.MADE_UP_EAGER_US - ph["steady_launch"])
    wrongs = [w for w, _ in nb03._mistakes(ph, nb03.MADE_UP_EAGER_US)]
    answers = [math.ceil(right), math.floor(right)] + [math.ceil(w) for w in wrongs]
    assert len(set(answers)) == len(answers), answers


def _notebooks_exercise(role):
    """The notebook's starter or solution cell, then its check (on the chain of chain_costs)."""
    return run_cell("03", "check", run_cell("03", role, {}))


def test_accepts_the_notebooks_solution(capsys):
    ns = _notebooks_exercise("solution")
    assert "correct. The 10-kernel chain of chain_costs()" in capsys.readouterr().out
    paid = ns["pays_off_after"](ns["ph10"], ns["eager10"])
    assert isinstance(paid, int) and paid > 0, paid


def test_the_exercise_cell_prints_the_figures_the_check_judges(capsys):
    _notebooks_exercise("solution")
    setup_line, paid_line, verdict = capsys.readouterr().out.strip().splitlines()[-3:]
    ph, eager = nb03.chain_costs()
    setup = _setup(ph)
    paid = math.ceil(setup / (eager - ph["steady_launch"].median))
    assert setup_line.endswith(f"{setup:.0f} µs, graph iteration "
                               f"{ph['steady_launch'].median:.1f} µs, eager iteration {eager:.1f} µs")
    assert paid_line == f"its graph pays off after {paid} iterations"
    assert f"setup {setup:.0f} µs" in verdict and f"paid off after {paid} iterations" in verdict
