"""A pytest plugin (``-p nvidia_runtime_shim``) that runs NVIDIA's cuda-bindings runtime tests
on labkit's simulator: ``cuda.bindings.runtime`` becomes ``labkit.sim.runtime`` before their test
module is imported, so ``import cuda.bindings.runtime as cudart`` and
``from cuda.bindings import runtime`` both name the simulator. ``cuda.bindings.driver`` stays
the real module (the tests use it for ``cuuint64_t`` only). See test_nvidia_runtime_tests.py.
"""
import os
import sys

os.environ["LABKIT_BACKEND"] = "sim"

import cuda.bindings  # noqa: E402
import labkit  # noqa: E402,F401  (sets up the simulator first)
from labkit.sim import runtime as _sim_rt  # noqa: E402

sys.modules["cuda.bindings.runtime"] = _sim_rt
cuda.bindings.runtime = _sim_rt
