"""NVIDIA's own cuda-bindings runtime tests, run unchanged through the simulator.

cuda-bindings' ``cuda_bindings/tests/test_cudart.py`` (github.com/NVIDIA/cuda-python) runs on
GPUs in NVIDIA's CI. Its tests of the calls the course simulates run here with
``cuda.bindings.runtime`` swapped for ``labkit.sim.runtime`` (``nvidia_runtime_shim``), and must all
pass, none skipped: a skip would mean the simulator reports an old driver or lacks an attribute
the test asks for. Their code is NVIDIA's and is not copied into this project: point
``LABKIT_CUDA_PYTHON`` at a checkout of cuda-python (``git clone
https://github.com/NVIDIA/cuda-python``) to run them; without one this test is skipped and says
so. On a GPU they need no simulator: run them there with cuda-python's own instructions.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import labkit
import pytest

# the tests of calls the simulator implements (the rest need CUDA arrays, textures, green
# contexts and other things the course does not simulate)
SELECTED = [
    "test_cudart_memcpy", "test_cudart_hostRegister", "test_cudart_graphs",
    "test_cudart_both_type", "test_cudart_MemPool_attr", "test_cudart_make_api",
    "test_cudart_cudaStreamGetCaptureInfo", "test_cudart_cudaMemset3D",
    "test_cudart_cudaMemset3D_2D", "test_cudart_cudaGraphAddMemcpyNode1D",
    "test_cudart_cudaGraphAddMemsetNode", "test_cudart_func_callback", "test_cudart_conditional",
    "test_struct_pointer_comparison", "test_cudaGraphGetId", "test_cudaGraphExecGetId",
    "test_cudaGraphNodeGetLocalId", "test_cudaGraphNodeGetToolsId",
    "test_cudaGraphNodeGetContainingGraph", "test_cudaGraphConditionalHandleCreate_v2",
]
CHECKOUT = os.environ.get("LABKIT_CUDA_PYTHON", "")
TESTS = Path(CHECKOUT) / "cuda_bindings" / "tests" / "test_cudart.py"


@pytest.mark.skipif(labkit.backend != "sim", reason="on a GPU, run NVIDIA's tests directly")
@pytest.mark.skipif(not TESTS.is_file(), reason="set LABKIT_CUDA_PYTHON to a checkout of "
                                                "github.com/NVIDIA/cuda-python to run them")
def test_nvidias_runtime_tests_of_the_simulated_calls_pass_with_none_skipped(tmp_path):
    here = Path(__file__).resolve().parent
    env = dict(os.environ, LABKIT_BACKEND="sim",
               PYTHONPATH=os.pathsep.join([str(here), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", str(TESTS), "-p", "nvidia_runtime_shim", "-q", "-rs",
         "-p", "no:cacheprovider", "--rootdir", str(tmp_path), "-c", os.devnull,
         "-k", " or ".join(SELECTED)],
        env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    assert "skipped" not in out, out[-4000:]
    ran = {name for name in SELECTED if f"{name}" in TESTS.read_text()}
    assert ran == set(SELECTED), f"not in NVIDIA's file: {set(SELECTED) - ran}"
