"""labkit's imports run one way: each module imports only its own layer or the layers below.

The import graph is read from the source with ``ast`` (module-level and function-level imports
alike), so nothing here imports labkit. To place a new module, add it (or a pattern for its
package) to `LAYERS`.
"""
from __future__ import annotations

import ast
import fnmatch
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[2] / "labkit"

# Bottom first. A module may import modules of its own layer and of the layers below it.
LAYERS = [
    # labkit._span (the one Span type) imports nothing: it sits at the bottom, for the simulator too
    ("runtime", ["labkit._span", "labkit.sim", "labkit.sim.*", "labkit._calibration"]),
    ("leaves", ["labkit._errors", "labkit._handles", "labkit._open_captures",
                "labkit._host_calls", "labkit._nvtx"]),
    ("backend", ["labkit.backends", "labkit.backends.*"]),
    ("kernels, streams, prepared", ["labkit._kernel", "labkit._streams", "labkit._prepared",
                                    "labkit._mapped"]),
    ("capture, graphs, cache", ["labkit._capture", "labkit._graph", "labkit.cache",
                                "labkit.explicit", "labkit.conditional", "labkit._graphed",
                                "labkit._eager", "labkit._compare"]),
    ("public API", ["labkit"]),
    # above the public API core, and free to import it
    ("measure", ["labkit.measure", "labkit.measure.*", "labkit.timing", "labkit.plot",
                 "labkit.plot.*"]),
    ("course", ["labkit.course", "labkit.course.*"]),
    ("toolbox", ["labkit.toolbox", "labkit.toolbox.*"]),
    ("cli", ["labkit.cli", "labkit.cli.*", "labkit.__main__"]),
]
# Import nothing of labkit but the bottom's leaf, labkit._span.
LEAVES = {"labkit._span", "labkit._errors", "labkit._handles", "labkit._open_captures",
          "labkit._host_calls", "labkit._nvtx"}
CORE = {name for name, _ in LAYERS[:LAYERS.index(("public API", ["labkit"])) + 1]}
# Where a comparison with a backend's name is no branch on the active backend.
NAME_COMPARISONS_ALLOWED = {
    "kernel_env": "the backend a child notebook kernel is asked to choose (labkit run)",
    "headline": "doctor words its first line after the backend that was chosen (a report, not a branch)",
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PKG.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PKG.rglob("*.py"))}


MODULES = _modules()


def _layer(mod: str) -> int:
    hits = [i for i, (_, pats) in enumerate(LAYERS) for p in pats if fnmatch.fnmatchcase(mod, p)]
    assert hits, f"{mod} is in no layer: add it to LAYERS in tests/core/test_layering.py"
    return max(hits) if mod in ("labkit",) else min(hits)


def _is_package(mod: str) -> bool:
    return MODULES.get(mod, Path()).name == "__init__.py"


def _imports(mod: str):
    """(imported labkit module, line, inside a function) for each import in ``mod``."""
    tree = ast.parse(MODULES[mod].read_text())
    here = mod if _is_package(mod) else mod.rpartition(".")[0]
    out = []

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            fn = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                for a in child.names:
                    if a.name == "labkit" or a.name.startswith("labkit."):
                        out.append((a.name, child.lineno, in_function))
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = here.split(".")
                    base = base[:len(base) - (child.level - 1)]
                    target = ".".join(base + ([child.module] if child.module else []))
                else:
                    target = child.module or ""
                if target == "labkit" or target.startswith("labkit."):
                    for a in child.names:
                        sub = f"{target}.{a.name}"
                        out.append((sub if sub in MODULES else target, child.lineno, in_function))
            visit(child, fn)
    visit(tree, False)
    return out


EDGES = {mod: _imports(mod) for mod in MODULES}


def test_every_module_has_a_layer():
    for mod in MODULES:
        _layer(mod)


@pytest.mark.parametrize("mod", sorted(MODULES))
def test_a_module_imports_only_its_layer_and_below(mod):
    mine = _layer(mod)
    up = [f"line {line}: {target} ({LAYERS[_layer(target)][0]})"
          for target, line, _ in EDGES[mod] if _layer(target) > mine]
    assert not up, f"{mod} ({LAYERS[mine][0]}) imports upwards: " + "; ".join(up)


def test_leaf_modules_import_nothing_from_labkit():
    bad = {m: [t for t, _, _ in EDGES[m] if t != "labkit._span"] for m in LEAVES}
    bad = {m: targets for m, targets in bad.items() if targets}
    assert not bad, f"leaf modules import labkit modules: {bad}"


def test_the_core_and_measure_have_no_imports_inside_functions():
    core = [m for m in MODULES if LAYERS[_layer(m)][0] in CORE | {"measure"}]
    late = [f"{m} line {line}: {t}" for m in core for t, line, inside in EDGES[m] if inside]
    assert not late, "imports inside functions (move them to the top): " + "; ".join(late)


def test_the_imports_form_no_cycle():
    graph = {m: {t for t, _, _ in EDGES[m] if t != m} for m in MODULES}
    state: dict[str, int] = {}

    def walk(m, path):
        state[m] = 1
        for t in sorted(graph.get(m, ())):
            if t == "labkit" and m != "labkit":
                continue            # a submodule's `import labkit` is the package, not a cycle
            if state.get(t) == 1:
                pytest.fail("import cycle: " + " -> ".join(path + [m, t]))
            if not state.get(t):
                walk(t, path + [m])
        state[m] = 2
    for m in sorted(graph):
        if not state.get(m):
            walk(m, [])


def _compares_backend_name(node) -> bool:
    sides = [node.left, *node.comparators]
    names = {s.value for s in sides if isinstance(s, ast.Constant) and isinstance(s.value, str)}
    subject = [s for s in sides if (isinstance(s, ast.Name) and s.id == "backend")
               or (isinstance(s, ast.Attribute) and s.attr == "backend")]
    return bool(names & {"cuda", "sim"}) and bool(subject)


def test_no_code_outside_the_backend_branches_on_its_name():
    found = []
    for mod, path in MODULES.items():
        if mod == "labkit.backends" or mod.startswith("labkit.backends."):
            continue
        tree = ast.parse(path.read_text())
        for fn in [tree] + [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]:
            if getattr(fn, "name", None) in NAME_COMPARISONS_ALLOWED:
                continue
            body = fn.body if isinstance(fn, ast.Module) else [fn]
            for stmt in body:
                if isinstance(stmt, ast.FunctionDef) and fn is tree:
                    continue        # functions are visited on their own
                for n in ast.walk(stmt):
                    if isinstance(n, ast.Compare) and _compares_backend_name(n):
                        found.append(f"{mod} line {n.lineno}")
    assert not found, ("branches on the backend's name outside labkit/backends (use the backend "
                       "interface, labkit.backends.is_gpu, or labkit.course.workloads.course_size for problem sizes): "
                       + ", ".join(sorted(set(found))))
