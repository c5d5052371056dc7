"""The capture-mode matrix figure: one square per cell, coloured by what the call did to the
capture, the call's code written on it, and a title that says where the codes come from."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # before pyplot: CI has no display

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402

from labkit.course import capture_figure, capture_modes  # noqa: E402

SOURCE = "error codes returned by the CUDA runtime on Test GPU"
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
    ax = capture_modes.plot_matrix(CELLS, source=SOURCE)
    ax.figure.canvas.draw()
    rgba = ax.get_images()[0].to_rgba(ax.get_images()[0].get_array())
    colour = {k: to_rgba(c) for k, (_, c) in capture_figure.CAPTURE_OUTCOMES.items()}
    np.testing.assert_allclose(rgba[0, 0], colour["invalidated"])
    np.testing.assert_allclose(rgba[0, 1], colour["allowed"])
    np.testing.assert_allclose(rgba[1, 0], colour["refused"])
    assert [t.get_text() for t in ax.texts if t.get_text().isdigit()] == ["900", "0", "1", "1"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["cudaMalloc", "cudaFreeAsync(capturing)"]
    assert SOURCE in ax.get_title()


def test_the_matrix_is_titled_by_where_its_codes_come_from_not_by_a_timing_provenance():
    title = capture_modes.plot_matrix(CELLS).get_title()
    assert title.splitlines()[-1] == capture_modes.codes_from()
    assert title.splitlines()[-1].startswith("error codes returned by the")
    assert "calibrated" not in title and "measured" not in title


def test_no_cells_is_an_error_that_names_what_to_pass():
    with pytest.raises(ValueError, match=r"^capture_matrix got no cells; pass labkit\.course\.capture_modes"):
        capture_figure.capture_matrix([], SOURCE)
