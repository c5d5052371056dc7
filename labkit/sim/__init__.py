"""The CPU simulator of the CUDA runtime.

* `rt`: what ``labkit.rt`` is on the simulator: cuda.bindings.runtime's names, nothing else;
* `runtime`: the implementation, and what it covers and what not (its docstring);
* `clock`: the virtual clock and its calibrated cost model;
* `_hooks`: labkit's own way in (allocations, function handles, launches), which CUDA's runtime
  API has no names for.
"""
