"""``python -m labkit bench``'s options: a count that cannot be measured is a usage error."""
from __future__ import annotations

import re

import pytest

from labkit.cli import bench


@pytest.mark.parametrize("argv, message", [
    (["--repeat", "0"], r"argument --repeat: must be 1 or more, got 0"),
    (["--repeat", "-3"], r"argument --repeat: must be 1 or more, got -3"),
    (["--kernels", "0"], r"argument --kernels: must be 1 or more, got 0"),
    (["--kernels", "ten"], r"argument --kernels: 'ten' is not a whole number"),
])
def test_a_count_below_one_or_not_a_number_is_a_usage_error(argv, message, capsys):
    with pytest.raises(SystemExit) as stop:
        bench.main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: python -m labkit bench") and "Traceback" not in err
    assert re.search(message, err), err


def test_a_count_of_one_or_more_is_accepted():
    assert bench.at_least_one("1") == 1 and bench.at_least_one("200") == 200
