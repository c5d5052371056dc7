"""The CPU simulator of the CUDA runtime.

* `rt`: what ``labkit.rt`` is on the simulator: cuda.bindings.runtime's names, nothing else;
* `runtime`: the implementation's public face, and what it covers and what not (its
  docstring); its modules are one concept each (`_state`, `_heap`, `_memory`, `_streams`,
  `_capture`, `_graphs`, `_exec`, `_conditional`, `_work`, `_engine`, `_races`, `_device`);
* `clock`: the virtual clock, its calibrated cost model and the seeded host noise (warm-up,
  stretches of speed, jitter; `LABKIT_SIM_NOISE=0` for the exact model);
* `_hooks`: labkit's own way in (allocations, function handles, launches), which CUDA's runtime
  API has no names for.
"""
