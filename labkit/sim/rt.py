"""``labkit.rt`` on the simulator: the simulated runtime under ``cuda.bindings.runtime``'s names,
and no others.

Every public name here exists in ``cuda.bindings.runtime`` (a test holds it). The functions are
the simulator's (`labkit.sim.runtime`); enum classes, structs and constants it does not define
itself come from cuda-python, which imports without a GPU. A CUDA function the simulator does
not implement raises ``NotImplementedError`` naming the sim backend; a name CUDA does not have
is an ``AttributeError``, as it is on a GPU.
"""
import functools as _functools
from types import ModuleType as _ModuleType

from cuda.bindings import runtime as _cuda

from . import _engine
from . import runtime as _impl

_UNWRAPPED = ("cudaGetErrorName", "cudaGetErrorString")


def _sticky(fn):
    """After a fault (`labkit.sim._engine`), every call returns it, as on a GPU whose context is
    lost: the call's outputs are None."""
    @_functools.wraps(fn)
    def call(*args, **kwargs):
        out = fn(*args, **kwargs)
        code = _engine.sticky()
        if code is None or not isinstance(out, tuple):
            return out
        return (_cuda.cudaError_t(code),) + (None,) * (len(out) - 1)
    return call


globals().update({n: (_sticky(v) if callable(v) and n.startswith("cuda") and n not in _UNWRAPPED
                      and not isinstance(v, type) else v)
                  for n, v in vars(_impl).items()
                  if not n.startswith("_") and hasattr(_cuda, n)
                  and not isinstance(v, _ModuleType)})


def __getattr__(name):
    value = getattr(_cuda, name, None)
    if value is None:
        raise AttributeError(f"cuda.bindings.runtime has no {name!r}, so neither has labkit.rt")
    if isinstance(value, type) or not callable(value):
        return value           # an enum, a struct or a constant: data, no GPU needed
    raise NotImplementedError(
        f"{name} is not part of labkit's simulated runtime (backend 'sim'); it covers the "
        "calls the course uses. Run on a GPU with LABKIT_BACKEND=cuda to use it")
