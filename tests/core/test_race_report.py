

def test_a_race_warning_reads_as_a_line_of_the_cell_not_a_temporary_file():
    import warnings
    from labkit.sim._races import RaceWarning
    text = warnings.formatwarning("data race on x", RaceWarning,
                                  "/tmp/ipykernel_4242/123456.py", 9, "    k[1, 1, s](x)")
    assert text == "RaceWarning (line 9): data race on x\n"
    in_file = warnings.formatwarning("data race on x", RaceWarning, "/work/step.py", 3)
    assert in_file == "RaceWarning (step.py, line 3): data race on x\n"
    other = warnings.formatwarning("careful", UserWarning, "/work/step.py", 3, "x = 1")
    assert other.startswith("/work/step.py:3: UserWarning: careful")
