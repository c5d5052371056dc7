"""labkit.plot.capture_matrix: one square per cell, coloured by what the call did to the
capture, the call's code written on it, the provenance in the title."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # before pyplot: CI has no display

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402

from labkit import plot  # noqa: E402

PROV = "simulated, calibrated on Test GPU"
ACTIVE, INVALID, NONE = ("cudaStreamCaptureStatus" + s for s in ("Active", "Invalidated", "None"))


def _rec(call, mode, where, rc, status, end):
    return {"call": call, "mode": mode, "where": where, "rc": rc, "status": status, "end": end,
            "clean": "ok"}


CELLS = [
    _rec("cudaMalloc", "global", "capturing", "cudaErrorStreamCaptureUnsupported", INVALID,
         "cudaErrorStreamCaptureInvalidated"),
    _rec("cudaMalloc", "global", "other", "cudaSuccess", ACTIVE, "cudaSuccess"),
    _rec("cudaFreeAsync(capturing)", "global", "capturing", "cudaErrorInvalidValue", ACTIVE,
         "cudaSuccess"),
    _rec("cudaFreeAsync(capturing)", "global", "other", "cudaErrorInvalidValue", ACTIVE,
         "cudaSuccess"),
]


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_each_cell_is_coloured_by_its_outcome_and_shows_its_code():
    from labkit.course import capture_modes
    ax = capture_modes.plot_matrix(CELLS, provenance=PROV)
    ax.figure.canvas.draw()
    rgba = ax.get_images()[0].to_rgba(ax.get_images()[0].get_array())
    colour = {k: to_rgba(c) for k, (_, c) in plot.CAPTURE_OUTCOMES.items()}
    np.testing.assert_allclose(rgba[0, 0], colour["invalidated"])
    np.testing.assert_allclose(rgba[0, 1], colour["allowed"])
    np.testing.assert_allclose(rgba[1, 0], colour["refused"])
    assert [t.get_text() for t in ax.texts if t.get_text().isdigit()] == ["900", "0", "1", "1"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["cudaMalloc", "cudaFreeAsync(capturing)"]
    assert PROV in ax.get_title()


def test_no_cells_is_an_error_that_names_what_to_pass():
    with pytest.raises(ValueError, match=r"^capture_matrix got no cells; pass labkit\.course\.capture_modes"):
        plot.capture_matrix([], provenance=PROV)


def test_the_courses_matrix_says_where_its_codes_come_from_not_a_timing_provenance():
    import labkit
    from labkit.course import capture_modes
    ax = capture_modes.plot_matrix(CELLS)
    title = ax.get_title()
    assert "error codes returned by" in title and "calibrated" not in title
    assert ("CUDA on" if labkit.backend == "cuda" else "simulated runtime") in title
