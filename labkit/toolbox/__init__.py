"""The maintainers' procedures, which the CLI's verbs call thinly.

- `chain`: the chain benchmark (``python -m labkit bench``) and labkit's share beside the raw
  calls (``--wrapper``);
- `probes`: what a programmatic edge saves (``bench --pdl``) and labkit's share of a one-kernel
  capture (``bench --capture-share``);
- `calibrate`: the simulator's cost model measured on a GPU (``python -m labkit calibrate``);
- `measurements`: the maintainers' measurements document from its data
  (``python -m labkit measurements``).

Above the course in labkit's layers: the benchmarks use the course's kernels and decoder. The
library and the course never import this package.
"""
