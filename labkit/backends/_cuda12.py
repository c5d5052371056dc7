"""cuda.bindings.runtime of CUDA 12, seen through CUDA 13's signatures.

labkit and the course are written against cuda-bindings 13, where a few runtime calls took
the signatures that CUDA 12 shipped under ``_v2`` / ``_v3`` names (edge data on graph edges and
capture dependencies, a ``cudaMemLocation`` for memory advice). A CUDA 12 driver can only run
cuda-bindings 12 (the ``cu12`` extra), so on it ``labkit.rt`` is this view: every name is
cuda.bindings.runtime 12's own, except those below, which are their CUDA 13 shapes. A
learner's raw-API cell then runs unchanged on a CUDA 12 or 13 machine.

Not covered: cudaMemcpyBatchAsync and cudaMemcpy3DBatchAsync, whose 12.x forms return a
``failIdx`` that 13 dropped (the course uses neither).
"""
from __future__ import annotations

# CUDA 13 name -> the CUDA 12 function with that signature (same arguments, same results).
SAME_AS_IN_13 = {
    "cudaGraphAddDependencies": "cudaGraphAddDependencies_v2",
    "cudaGraphAddNode": "cudaGraphAddNode_v2",
    "cudaGraphGetEdges": "cudaGraphGetEdges_v2",
    "cudaGraphNodeGetDependencies": "cudaGraphNodeGetDependencies_v2",
    "cudaGraphNodeGetDependentNodes": "cudaGraphNodeGetDependentNodes_v2",
    "cudaGraphRemoveDependencies": "cudaGraphRemoveDependencies_v2",
    "cudaMemAdvise": "cudaMemAdvise_v2",
    "cudaMemPrefetchAsync": "cudaMemPrefetchAsync_v2",
    "cudaStreamGetCaptureInfo": "cudaStreamGetCaptureInfo_v3",
    "cudaStreamUpdateCaptureDependencies": "cudaStreamUpdateCaptureDependencies_v2",
}


class Runtime12:
    """Attribute access to a CUDA 12 runtime module, with CUDA 13's signatures.

    Parameters
    ----------
    module : module
        ``cuda.bindings.runtime`` of cuda-bindings 12.x (tests pass a stand-in).
    """

    def __init__(self, module):
        self._module = module
        self.__name__ = getattr(module, "__name__", "cuda.bindings.runtime")

    def __getattr__(self, name):
        return getattr(self._module, SAME_AS_IN_13.get(name, name))

    def __dir__(self):
        return sorted(set(dir(self._module)) | set(SAME_AS_IN_13))

    def cudaGraphKernelNodeCopyAttributes(self, hDst, hSrc):
        """CUDA 13's argument order (destination first); CUDA 12 took the source first."""
        return self._module.cudaGraphKernelNodeCopyAttributes(hSrc, hDst)


def cuda_runtime(module=None, version: str | None = None):
    """The runtime for the "cuda" backend: cuda.bindings.runtime itself from 13 on, else the view.

    Parameters
    ----------
    module : module, optional
        The runtime module; ``cuda.bindings.runtime`` by default.
    version : str, optional
        cuda-bindings' version; the installed one by default.
    """
    if module is None:
        from cuda.bindings import runtime as module
    if version is None:
        import cuda.bindings
        version = cuda.bindings.__version__
    return module if int(version.split(".")[0]) >= 13 else Runtime12(module)
