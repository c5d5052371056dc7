"""A calibration file follows the versioned schema, and a file that does not is refused by name."""
import copy
import json

import pytest

from labkit import _calibration
from labkit._calibration import DEFAULT, SCHEMA_NAME, CalibrationError, validate


@pytest.fixture
def packaged():
    return json.loads(DEFAULT.read_text())


def test_the_packaged_h200_calibration_matches_the_schema(packaged):
    assert packaged["schema"] == SCHEMA_NAME
    validate(packaged)


def test_no_figure_cites_a_probe_script_and_none_is_called_a_median(packaged):
    for name, fig in packaged["params"].items():
        assert ".probe" not in fig["source"], name
        assert "median" not in fig, f"{name}: a figure's charged number is its 'value'"


def test_a_file_without_a_figure_the_simulator_charges_is_refused_naming_it(packaged):
    del packaged["params"]["capture_launch_us"]
    with pytest.raises(CalibrationError, match=r"(?s)^calibration does not match labkit\.calibration/2.*"
                                               r"at params: 'capture_launch_us' is a required property"):
        validate(packaged)


def test_a_layout_1_file_is_refused_with_the_command_that_writes_a_new_one(packaged):
    old = copy.deepcopy(packaged)
    del old["schema"]
    old["params"]["numba_launch_us"] = {"median": 15.9}
    with pytest.raises(CalibrationError, match=r"^calibration is not a labkit\.calibration/2 file \(its "
                                               r"\"schema\" is None\).*python -m labkit calibrate"):
        validate(old)


def test_a_figure_under_another_name_is_refused_where_it_is(packaged):
    fig = packaged["params"]["api_us"]
    fig["median"] = fig.pop("value")
    with pytest.raises(CalibrationError, match=r"(?s)at params/api_us: 'value' is a required property"):
        validate(packaged)


def test_host_noise_needs_its_warmups(packaged):
    del packaged["host_noise"]["warmup_us"]["stream_first_use"]
    with pytest.raises(CalibrationError,
                       match=r"(?s)at host_noise/warmup_us: 'stream_first_use' is a required property"):
        validate(packaged)


def test_loading_a_bad_file_names_the_file(tmp_path, monkeypatch, packaged):
    bad = tmp_path / "mine.json"
    packaged["host_noise"]["stretch_us"] = 0
    bad.write_text(json.dumps(packaged))
    with pytest.raises(CalibrationError, match=rf"(?s)^calibration file {bad} does not match.*"
                                               r"at host_noise/stretch_us: 0 is less than or equal"):
        _calibration.load(str(bad))
