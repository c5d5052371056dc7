"""numba-cuda's private kernel internals, in one place, pinned to the versions they are known in.

labkit builds a kernel's parameter block once (a prepared launch, a graph node's parameters)
from what numba's own launch does on every call: it flattens each argument into the values the
kernel expects (``_Kernel._prepare_args``) and launches the compiled function
(``_Kernel._codelibrary.get_cufunc()``). Both are private to numba-cuda, so `compiled_parts` is
the only caller, and it refuses a numba-cuda outside `SUPPORTED`, whose internals may differ.
`entry_names` reads the symbols numba compiled a kernel to (``overloads``, ``entry_name``), so
a trace or a graph drawing can name a kernel by its Python name, with no demangler.
"""
from __future__ import annotations

from importlib import metadata
from typing import NamedTuple

__all__ = ["SUPPORTED", "KernelParts", "compiled_parts", "entry_names", "check_version"]

# numba-cuda minor versions whose private launch internals labkit was written against; keep in
# step with pyproject.toml's numba-cuda pin (a test holds the two together).
SUPPORTED = ("0.30",)


class KernelParts(NamedTuple):
    """What the driver needs to launch a compiled numba kernel with given arguments."""

    cufunc_handle: int     # the compiled function's handle (a CUkernel for library kernels)
    flat_args: list        # the flattened argument values, in kernel-parameter order
    symbol: str            # the compiled function's symbol (numba's mangled entry name)


def check_version(version: str | None = None) -> None:
    """Raise if numba-cuda's version (installed, or ``version``) is not one of `SUPPORTED`."""
    if version is None:
        try:
            version = metadata.version("numba-cuda")
        except metadata.PackageNotFoundError:
            version = "not installed"
    if not any(version == v or version.startswith(v + ".") for v in SUPPORTED):
        raise RuntimeError(
            f"labkit's prepared launches and graph-node parameters use numba-cuda's private "
            f"argument packing, known in numba-cuda {', '.join(v + '.x' for v in SUPPORTED)}; "
            f"this one is {version}: install a supported one "
            f"(pip install 'numba-cuda>={SUPPORTED[0]},<{_next_minor(SUPPORTED[-1])}')")


def _next_minor(version: str) -> str:
    major, minor = version.split(".")[:2]
    return f"{major}.{int(minor) + 1}"


_checked = False


def compiled_parts(dispatcher, args) -> KernelParts:
    """Compile ``dispatcher`` for ``args`` (once, as numba's own launch would) and flatten the
    arguments as numba's launch does; device arrays only (a host array would need a copy)."""
    global _checked
    if not _checked:
        check_version()
        _checked = True
    types = tuple(dispatcher.typeof_pyval(a) for a in args)
    compiled = dispatcher.compile(types)
    flat, retr = [], []
    for t, v in zip(types, args):
        compiled._prepare_args(t, v, 0, retr, flat)
    if retr:   # numba would have copied something and copied it back: not a device array
        raise TypeError("a parameter block takes device arrays only; use labkit.to_device")
    handle = int(compiled._codelibrary.get_cufunc().handle)
    return KernelParts(handle, flat, compiled.entry_name)


def entry_names(dispatcher) -> list[str]:
    """The symbols of every overload ``dispatcher`` compiled so far (none before a launch, and
    none under a simulator, whose dispatchers compile nothing)."""
    overloads = getattr(dispatcher, "overloads", None) or {}
    return [name for name in (getattr(o, "entry_name", None) for o in overloads.values()) if name]
