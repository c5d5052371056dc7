"""``labkit.rt`` on the simulator: the simulated runtime under ``cuda.bindings.runtime``'s names,
and no others.

Every public name here exists in ``cuda.bindings.runtime`` (a test holds it). The functions are
the simulator's (`labkit.sim.runtime`); enum classes, structs and constants it does not define
itself come from cuda-python, which imports without a GPU. A CUDA function the simulator does
not implement raises ``NotImplementedError`` naming the sim backend; a name CUDA does not have
is an ``AttributeError``, as it is on a GPU.
"""
from types import ModuleType as _ModuleType

from cuda.bindings import runtime as _cuda

from . import runtime as _impl

globals().update({n: v for n, v in vars(_impl).items()
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
