"""Measurement: how labkit times work and shows it.

* `timing`: host and GPU timing of a callable, a stream, a graph replay; timelines.
* `stats`: the summaries (median, spread, throughput) every figure and table quotes, and
  `breakeven`, the iterations after which a graph's setup has paid for itself.
* `timeline`: the `Timeline` of spans (`labkit._span.Span`) that timing records and
  `plot.timeline` draws.
* `_trace`: how a timeline is recorded on each backend, and what a GPU trace adds.
* `trace_export`: a `Timeline` as Chrome trace-event JSON (Perfetto, ``chrome://tracing``).
* `_cupti`: kernel traces through CUPTI on a real GPU (optional, ``cupti-python``).
* `plot`: the course's figures, a package of one-job modules, provenance in every title.
* `claims`: the course's timing claims (`labkit.measure.claims.expect`): strict under test, a note for learners.

``labkit.timing`` and ``labkit.plot`` are the public names of the first and last (see
``labkit/__init__.py``). Nothing is imported here, so ``import labkit.measure.stats`` does not
load matplotlib.
"""
