"""Measurement: how labkit times work and shows it.

* `timing`: host and GPU timing of a callable, a stream, a graph replay; timelines.
* `stats`: the summaries (median, spread, throughput) every figure and table quotes.
* `_spans`: the `Timeline` of spans that timing records and `plot.timeline` draws.
* `trace_export`: a `Timeline` as Chrome trace-event JSON (Perfetto, ``chrome://tracing``).
* `_cupti`: kernel traces through CUPTI on a real GPU (optional, ``cupti-python``).
* `plot`: the course's figures, one shared style, provenance in every title.
* `claims`: the course's timing claims (`labkit.expect`): strict under test, a note for learners.

``labkit.timing`` and ``labkit.plot`` are the public names of the first and last (see
``labkit/__init__.py``). Nothing is imported here, so ``import labkit.measure.stats`` does not
load matplotlib.
"""
