"""The package's import structure: optional dependencies stay optional, and no import cycles.

* A GPU machine without z3/egglog runs the GPU side (codegen, runtime, tuner, library, the
  pipeline's cached path): every module but the z3 mapping search imports with both blocked.
* CPU code (search, verification, tests) imports with torch and CuPy blocked.
* The prism modules' imports (top level and in functions, not ``TYPE_CHECKING`` ones) form no cycle.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import prism

PACKAGE = Path(prism.__file__).resolve().parent
NEEDS_Z3 = {"prism.search.mapping", "prism.search.parallel", "prism.search.verified"}  # mapping instantiation solves with z3


def _modules() -> dict[str, Path]:
    out = {}
    for p in sorted(PACKAGE.rglob("*.py")):
        parts = ("prism", *p.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__main__":  # runs the command line when imported
            continue
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    return out


def _failed_imports(blocked: tuple[str, ...]) -> dict[str, str]:
    """Modules that fail to import in a fresh interpreter where ``blocked`` cannot be imported."""
    code = "import importlib, json, sys\n" + "".join(f"sys.modules[{b!r}] = None\n" for b in blocked) + (
        f"bad = {{}}\nfor m in {sorted(_modules())!r}:\n"
        "    try:\n        importlib.import_module(m)\n"
        "    except ImportError as e:\n        bad[m] = str(e)\n"
        "print(json.dumps(bad))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240,
                       cwd=PACKAGE.parent)
    assert r.returncode == 0, r.stderr[-2000:]
    return dict(json.loads(r.stdout.strip().splitlines()[-1]))


def test_gpu_side_imports_without_z3_and_egglog() -> None:
    bad = _failed_imports(("z3", "egglog"))
    assert set(bad) <= NEEDS_Z3, {m: e for m, e in bad.items() if m not in NEEDS_Z3}


def test_test_modules_collect_without_z3_and_egglog() -> None:
    """The GPU test command collects on a machine without z3/egglog: every test module that needs
    them to import is in conftest's ``NEEDS_SEARCH`` (not collected there)."""
    from conftest import NEEDS_SEARCH

    tests = Path(__file__).resolve().parent
    names = sorted(p.name for p in tests.glob("test_*.py"))
    code = ("import importlib, json, sys\nsys.modules['z3'] = None\nsys.modules['egglog'] = None\n"
            f"sys.path[:0] = [{str(tests)!r}, {str(PACKAGE.parent)!r}]\nbad = []\n"
            f"for n in {names!r}:\n"
            "    try:\n        importlib.import_module(n[:-3])\n"
            "    except ImportError as e:\n        bad.append([n, str(e)])\n"
            "    except BaseException:\n        pass  # a skip (torch, CuPy missing) is not this test's business\n"
            "print(json.dumps(bad))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240, cwd=tests)
    assert r.returncode == 0, r.stderr[-2000:]
    bad = dict(json.loads(r.stdout.strip().splitlines()[-1]))
    assert set(bad) <= set(NEEDS_SEARCH), {n: e for n, e in bad.items() if n not in NEEDS_SEARCH}
    assert set(NEEDS_SEARCH) <= set(names)


def test_every_module_imports_without_torch_and_cupy() -> None:
    assert _failed_imports(("torch", "cupy")) == {}


def _imports(mods: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the prism modules it imports (anywhere in the file, except under TYPE_CHECKING)."""

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = {m: set() for m in mods}
    for m, path in mods.items():
        package = m if path.name == "__init__.py" else m.rpartition(".")[0]

        def visit(node: ast.AST, m: str = m, package: str = package) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                    continue
                names: list[str] = []
                if isinstance(child, ast.Import):
                    names = [a.name for a in child.names]
                elif isinstance(child, ast.ImportFrom):
                    base = child.module or ""
                    if child.level:
                        parts = package.split(".")[: len(package.split(".")) - child.level + 1]
                        base = ".".join([*parts, base] if base else parts)
                    names = [f"{base}.{a.name}" for a in child.names]
                for n in names:
                    target = resolve(n) if n.startswith("prism") else None
                    if target is not None and target != m:
                        edges[m].add(target)
                visit(child)

        visit(ast.parse(path.read_text()))
    return edges


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(edges[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while (w := stack.pop()) != v:
                comp.append(w)
            if comp:
                out.append(sorted([v, *comp]))

    for v in sorted(edges):
        if v not in index:
            connect(v)
    return out


def test_no_import_cycles() -> None:
    assert _cycles(_imports(_modules())) == []


def test_the_cycle_check_finds_a_cycle() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(edges) == [["a", "b", "c"]]


@pytest.mark.parametrize("module", ["prism.ir", "prism.reference"])
def test_low_level_modules_do_not_import_the_graph_api(module: str) -> None:
    """The IR and the reference evaluator take OpKind from prism.ops, not from the user API."""
    assert "prism.graph" not in _imports(_modules())[module]
