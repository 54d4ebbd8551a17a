"""Rerunnable hardening probe (issue 16): hostile inputs at every entrance, one table.

    PYTHONPATH=. python scripts/probe_table.py [--quick] [--seed N] [--no-nvcc]

Each defect class of issue 16 is a row. Each probe is one concrete case (the hostile inputs the
tests use, plus random ones drawn from a fixed seed) whose outcome is classified:

* **handled**: a typed Prism error (a ``PrismError`` subclass) whose message names the bad value,
  or a result that is checked correct (against NumPy / the float64 reference / the interpreter);
* **defect**: a bare or untyped exception, a traceback from a command, an accepted bad value,
  text injected into generated source, a file written outside its folder, a known-wrong axiom
  accepted, a wrong result returned.

Prints a markdown table (class, cases tried, handled, defects left), the defects, and exits 1 when
there is any. CPU only: no GPU, no torch. Generated CUDA for hostile names is compiled with nvcc
when nvcc is on the PATH (the row says when it was skipped). ``--quick`` runs a small subset (the
CI test, a few seconds).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # prism, and the tests' lists of hostile inputs

from prism import interpreter, pipeline, plans, workloads  # noqa: E402
from prism.errors import (  # noqa: E402
    CacheError,
    GraphError,
    LibraryError,
    OptionError,
    PrismError,
    SerializationError,
)
from prism.graph import Graph  # noqa: E402
from prism.ir import CustomKernel, KernelGraph  # noqa: E402
from prism.names import MAX_NAME  # noqa: E402

Check = Callable[[], "str | None"]  # None: handled; a string: the defect


@dataclass
class Row:
    name: str
    tried: int = 0
    handled: int = 0
    defects: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class Probe:
    def __init__(self, quick: bool, seed: int, nvcc: bool) -> None:
        self.quick, self.seed, self.nvcc = quick, seed, nvcc
        self.rows: dict[str, Row] = {}
        self.rng = np.random.default_rng(seed)

    def row(self, name: str) -> Row:
        return self.rows.setdefault(name, Row(name))

    def case(self, row: str, label: str, check: Check) -> None:
        r = self.row(row)
        r.tried += 1
        try:
            why = check()
        except Exception as e:  # the probe itself hit an exception the code under test let out
            why = f"uncaught {type(e).__name__}: {_short(e)}"
        if why is None:
            r.handled += 1
        else:
            r.defects.append(f"{label}: {why}")

    def n(self, quick: int, full: int) -> int:
        return quick if self.quick else full


def _short(e: object, n: int = 120) -> str:
    text = str(e).replace("\n", "\\n")
    return text if len(text) <= n else text[: n - 3] + "..."


def typed(call: Callable[[], object], errors: type[Exception] | tuple[type[Exception], ...] = PrismError,
          names: str | None = None) -> str | None:
    """None when ``call`` raises one of ``errors`` with a message naming ``names``; else the defect."""
    try:
        call()
    except errors as e:
        msg = str(e)
        if not msg:
            return f"{type(e).__name__} with an empty message"
        if names is not None and names not in msg:
            return f"{type(e).__name__} does not name {names!r}: {_short(msg)}"
        return None
    except PrismError as e:
        return f"{type(e).__name__} where {errors} was expected: {_short(e)}"
    except Exception as e:
        return f"bare {type(e).__name__}: {_short(e)}"
    return "accepted (no error)"


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Prism's warnings (evictions, unwritable caches) are expected here; keep the table readable."""
    logger = logging.getLogger("prism")
    old = logger.level
    logger.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        logger.setLevel(old)


@contextlib.contextmanager
def patched(obj: Any, name: str, value: Any) -> Iterator[None]:
    old = getattr(obj, name)
    setattr(obj, name, value)
    try:
        yield
    finally:
        setattr(obj, name, old)


def _rel(got: np.ndarray, want: np.ndarray) -> float:
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    if got.shape != want.shape or not np.all(np.isfinite(got) | ~np.isfinite(want)):
        return float("inf")  # NaN or inf where the reference is finite is wrong, never "close"
    return float(np.abs(got - want).max() / max(1.0, float(np.abs(want).max())))


# ================================================================================== random values

C_WORDS = ["int", "float", "void", "return", "for", "if", "const", "auto", "asm", "extern", "__global__",
           "__shared__", "threadIdx", "blockIdx", "warpSize", "half", "tid", "smem", "acc5", "lane", "main"]
INJECT = ["\n", "\r", ";", "*/", "/*", "//", "\\", " ", "\"", "'", "../", "/", "\x00", "#", "{", "}", "\u2028"]
LETTERS = list("abcXYZ_0189αβγжщ名前éｘΩ")


def random_name(rng: np.random.Generator, valid: bool) -> str:
    """A valid identifier (keywords, built-ins, generator locals, non-ASCII) or one made invalid by an
    injection character, a path, a leading digit or too many characters."""
    while True:
        parts = [str(rng.choice(C_WORDS))] if rng.random() < 0.4 else []
        parts += [str(rng.choice(LETTERS)) for _ in range(int(rng.integers(1, 7)))]
        if not valid:
            kind = int(rng.integers(0, 4))
            if kind == 0:
                parts.insert(int(rng.integers(0, len(parts) + 1)), str(rng.choice(INJECT)))
            elif kind == 1:
                parts = [str(rng.choice(["../", "/tmp/", "/etc/", "..\\"])), *parts]
            elif kind == 2:
                parts = [str(rng.integers(0, 9)), *parts]
            else:
                parts = ["a" * (MAX_NAME + 1)]
        name = "".join(parts)
        if name.isidentifier() and len(name) <= MAX_NAME and valid:
            return name
        if not valid and not (name.isidentifier() and len(name) <= MAX_NAME):
            return name


def random_hostile_value(rng: np.random.Generator) -> Any:
    """A careless or hostile argument value of any type."""
    k = int(rng.integers(0, 16))
    big = 10 ** int(rng.integers(1, 500))
    return [
        None, bool(rng.integers(0, 2)), int(rng.choice([-1, 1])) * big, float(rng.choice([np.nan, np.inf, -np.inf])),
        "".join(str(rng.choice(LETTERS + INJECT)) for _ in range(int(rng.integers(0, 6)))),
        bytes(rng.integers(0, 256, int(rng.integers(0, 5))).astype(np.uint8)),
        complex(float(rng.standard_normal()), 1.0), [int(v) for v in rng.integers(-3, 2**40, int(rng.integers(0, 5)))],
        np.float32(rng.standard_normal() * 4), np.int64(rng.integers(-3, 3)), np.float16("inf"),
        np.ones((2, 2)), object(), {"a": 1}, float(rng.standard_normal() * 10.0 ** int(rng.integers(-3, 4))),
        int(rng.integers(-3, 5)),
    ][k]


# ================================================================================== Graph API


def _graph_op(op: str, value: Any, rng: np.random.Generator) -> str | None:
    """Apply ``op`` with ``value``: a typed error, or (when accepted) a checked result."""
    g = Graph()
    a = g.input((4, 8), dtype="float32", name="a")
    x = rng.standard_normal((4, 8))
    try:
        with np.errstate(all="ignore"):
            return _graph_op_checked(g, a, x, op, value)
    except PrismError as e:
        return None if str(e) else f"{type(e).__name__} with an empty message"
    except Exception as e:
        return f"bare {type(e).__name__}: {_short(e)}"


def _graph_op_checked(g: Graph, a: Any, x: np.ndarray, op: str, value: Any) -> str | None:
    if op in ("scale", "add_scalar", "sub", "div", "mul"):
        g.output(getattr(g, op)(a, value), name="O")
        got = g.evaluate({"a": x})["O"]
        v = float(value)
        want = {"scale": x * v, "add_scalar": x + v, "sub": x - v, "div": x / v, "mul": x * v}[op]
    elif op in ("sum", "max", "mean"):
        g.output(getattr(g, op)(a, value), name="O")
        got = g.evaluate({"a": x})["O"]
        want = getattr(np, op)(x, axis=int(value), keepdims=True)
    elif op == "softmax":
        g.output(g.softmax(a, value), name="O")
        got = g.evaluate({"a": x})["O"]
        e = np.exp(x - x.max(axis=int(value), keepdims=True))
        want = e / e.sum(axis=int(value), keepdims=True)
    elif op == "rms_norm":
        g.output(g.rms_norm(a, eps=value), name="O")
        got = g.evaluate({"a": x})["O"]
        want = x / np.sqrt((x * x).mean(-1, keepdims=True) + float(np.float32(value)))
    elif op == "input_shape":
        t = g.input(value, name="b")
        ok = isinstance(value, list | tuple) and t.shape == tuple(int(v) for v in value) and 0 < len(t.shape) <= 4
        return None if ok else f"input shape {value!r} accepted as {t.shape}"
    elif op == "input_name":
        g.input((4,), name=value)
        got_name = g.inputs[-1].name
        ok = got_name.isidentifier() and (got_name == value if value is not None else True)  # None: a fresh name
        return None if ok and (value is None or isinstance(value, str)) else f"input name {value!r} accepted"
    elif op == "output_name":
        g.output(g.exp(a), name=value)
        out = g.outputs[0].name
        ok = out.isidentifier() and (value is None or (isinstance(value, str) and out == value))
        return None if ok else f"output name {value!r} accepted as {out!r}"
    elif op == "evaluate":
        g.output(g.exp(a), name="O")
        got = g.evaluate({"a": value})["O"]
        arr = np.asarray(value, dtype=np.float64)
        return None if arr.shape == (4, 8) and np.allclose(got, np.exp(arr), equal_nan=True) else \
            f"evaluate accepted {value!r}"
    else:  # matmul with a foreign / bad operand
        g.matmul(a, value)
        return f"{op} accepted {value!r}"
    if not np.all(np.isfinite(got)) and np.all(np.isfinite(want)):
        return f"{op}({value!r}) gave non-finite values"
    ok = np.shape(got) == np.shape(want) and np.allclose(got, want, rtol=1e-5, atol=1e-6, equal_nan=True)
    return None if ok else f"{op}({value!r}) accepted with a wrong result"


ISSUE_CASES: list[tuple[str, Callable[[Graph, Any], object], str]] = [
    ("input(8)", lambda g, a: g.input(8), "8"),
    ("input(None)", lambda g, a: g.input(None), "None"),
    ("sub(a, 'x')", lambda g, a: g.sub(a, "x"), "'x'"),
    ("scale(a, 10**400)", lambda g, a: g.scale(a, 10**400), "1000"),
    ("name=123", lambda g, a: g.input((2, 2), name=123), "123"),
    ("output(t, 5)", lambda g, a: g.output(a, 5), "5"),
    ("input((2**40, 2))", lambda g, a: g.input((2**40, 2), name="B"), "2^31"),
    ("input((4, 0))", lambda g, a: g.input((4, 0), name="B"), "positive"),
    ("mul(a, None)", lambda g, a: g.mul(a, None), "None"),
    ("div(a, nan)", lambda g, a: g.div(a, float("nan")), "nan"),
    ("sum(a, 2)", lambda g, a: g.sum(a, 2), "dim 2"),
    ("matmul(a, a)", lambda g, a: g.matmul(a, a), "matmul"),
    ("exp(foreign tensor)", lambda g, a: g.exp(Graph().input((4,), name="Y")), "another Graph"),
    ("input dtype float64", lambda g, a: g.input((2,), dtype="float64", name="B"), "float64"),
    ("rms_norm eps=-1", lambda g, a: g.rms_norm(a, eps=-1.0), "-1"),
]


def probe_graph_api(p: Probe) -> None:
    row = "Graph API arguments"
    for label, call, names in ISSUE_CASES:
        def check(call: Any = call, names: str = names) -> str | None:
            g = Graph()
            return typed(lambda: call(g, g.input((4, 8), name="A")), PrismError, names)
        p.case(row, label, check)
    # numpy scalars are numbers: accepted, and the result is right
    for label, op, value in [("scale(a, np.float32(2))", "scale", np.float32(2)),
                             ("sum(a, np.int64(1))", "sum", np.int64(1)), ("max(a, np.int64(-1))", "max", np.int64(-1)),
                             ("rms_norm eps=np.float32", "rms_norm", np.float32(1e-5)),
                             ("input_shape np ints", "input_shape", (np.int64(4), 8))]:
        p.case(row, label, lambda op=op, value=value: _graph_op(op, value, np.random.default_rng(0)))
    ops = ["scale", "add_scalar", "sub", "div", "mul", "sum", "max", "mean", "softmax", "rms_norm", "input_shape",
           "input_name", "output_name", "evaluate", "matmul"]
    rng = np.random.default_rng(p.seed)
    for i in range(p.n(30, 400)):
        op, value = str(rng.choice(ops)), random_hostile_value(rng)
        p.case(row, f"random #{i} {op}({_short(repr(value), 40)})", lambda op=op, value=value: _graph_op(op, value, rng))


# ================================================================================== names


def probe_names(p: Probe) -> None:
    from tests.test_names import BAD_NAMES, HOSTILE, INTERNAL_LOOKING

    row = "names: Graph API"
    rng = np.random.default_rng(p.seed + 1)
    valid = list(HOSTILE) + [random_name(rng, True) for _ in range(p.n(10, 60))]
    bad = list(BAD_NAMES) + [random_name(rng, False) for _ in range(p.n(10, 60))]
    if p.quick:
        valid, bad = valid[:12] + valid[-10:], bad[:6] + bad[-10:]
    for i, name in enumerate(valid):
        others = [n for n in valid if n != name]
        second, third = others[(i * 7) % len(others)], others[(i * 13 + 1) % len(others)]
        if len({name, second, third}) < 3:
            third = "zz_out" if "zz_out" not in (name, second) else "zz_out2"

        def evaluates(name: str = name, second: str = second, third: str = third) -> str | None:
            g = Graph()
            a, b = g.input((4, 8), name=name), g.input((4, 8), name=second)
            g.output(g.mul(g.silu(a), b), name=third)
            r = np.random.default_rng(0)
            x, y = r.standard_normal((4, 8)), r.standard_normal((4, 8))
            got = g.evaluate({name: x, second: y})[third]
            return None if _rel(got, x / (1 + np.exp(-x)) * y) < 1e-12 else "wrong value under this name"
        p.case(row, f"valid {name!r}", evaluates)
    for name in bad:
        for where in ("input", "output"):
            def refused(name: str = name, where: str = where) -> str | None:
                g = Graph()
                x = g.input((4,), name="X")
                call = (lambda: g.input((4,), name=name)) if where == "input" else (lambda: g.output(x, name=name))
                return typed(call, GraphError, repr(name)[:12])
            p.case(row, f"bad {where} {name!r}", refused)

    # names like the partition's and search's internal tensors: every plan still computes the program
    row = "names: internal-looking (t0, v3, p0_v3)"
    from tests.test_names import internal_name_plans

    for _ in range(p.n(3, 25)):
        names = [str(n) for n in rng.choice(INTERNAL_LOOKING, 3, replace=False)]
        ops = [str(o) for o in rng.choice(["silu", "mul", "add", "exp"], int(rng.integers(4, 9)))]

        def internal(names: list[str] = names, ops: list[str] = ops) -> str | None:
            for kg, out, ref in internal_name_plans(names, ops):
                if _rel(out, ref) > 1e-12:
                    return f"plan of {len(kg.kernels)} kernels is wrong with names {names}"
            return None
        p.case(row, f"names {names} ops {ops}", internal)


def _gqa_doc() -> dict[str, Any]:
    g = workloads.program("gqa", batch=2, group=8, kv_len=64, head_dim=16)
    return plans.hand_plans("gqa", g)[2].to_json()


def probe_json_and_codegen(p: Probe) -> list[tuple[str, str]]:
    """JSON documents (cache entries, the manifest's template) with bad names; hostile valid names
    through JSON → generate → interpreter. Returns the generated (entry, source) pairs for nvcc."""
    from prism.codegen import generate
    from tests.test_names import HOSTILE, _code_lines, _hostile_variants, _poison, _random_names, _small_plans, _tensors

    row = "names: JSON entry (cache, manifest) → CUDA"
    rng = np.random.default_rng(p.seed + 2)
    doc = _gqa_doc()
    fixed = ["a\nb", "x */ y", "a\\", "../k", "a;int b", "p\n#include </etc/passwd>", "k0\nint x;"]
    bad = fixed + [random_name(rng, False) for _ in range(p.n(4, 40))]
    wheres = ["program", "input", "kernel", "load", "save", "size"]
    for name in bad:
        for where in (wheres if not p.quick else wheres[:3]):
            if where == "program" and re.fullmatch(r"[\w][\w.\-]*", name) and ".." not in name and len(name) <= MAX_NAME:
                continue  # a legal program name
            p.case(row, f"{where}={name!r}", lambda name=name, where=where: typed(
                lambda: KernelGraph.from_json(_poison(doc, where, name)), SerializationError, repr(name)[:12]))
    # valid hostile names: decode, generate ASCII code with one entry point per kernel, same values
    sources: dict[str, str] = {}
    pools = [list(HOSTILE), _random_names(p.seed, p.n(12, 40))]
    variants = [v for pool in pools for v in _hostile_variants(pool)]
    if p.quick:
        variants = variants[:2] + variants[-1:]
    originals = _small_plans()
    for i, kg in enumerate(variants):
        def generates(kg: KernelGraph = kg) -> str | None:
            back = KernelGraph.loads(kg.dumps())
            if back != kg:
                return "JSON round trip changed the plan"
            plan = generate(back, arch="sm_80")
            customs = sum(isinstance(k, CustomKernel) for k in back.kernels)
            for k in plan.kernels:
                if not all(line.isascii() for line in _code_lines(k.source)):
                    return f"non-ASCII code in {k.name}"
                if k.source.count('extern "C"') != 1:
                    return f"{k.source.count('extern \"C\"')} entry points in {k.name}"
                sources[k.entry] = k.source
            fused = sum("+" in k.name for k in plan.kernels)  # a split kernel and its combine, one launch
            if len(plan.kernels) + fused != customs:
                return f"{len(plan.kernels)} kernels ({fused} fused pairs) generated for {customs} custom kernels"
            orig = next(o for o in originals if len(_tensors(o)) == len(_tensors(back))
                        and o.kernels[0].__class__ is back.kernels[0].__class__ and len(o.kernels) == len(back.kernels))
            r = np.random.default_rng(0)
            ins = {t.name: r.standard_normal(t.shape) for t in orig.inputs}
            want = interpreter.run(orig, ins)
            got = interpreter.run(back, {b.name: ins[a.name] for a, b in zip(orig.inputs, back.inputs, strict=True)})
            for a, b in zip(orig.outputs, back.outputs, strict=True):
                if not np.array_equal(want[a.name], got[b.name]):
                    return f"renamed plan computes another value for {b.name!r}"
            return None
        p.case(row, f"hostile-name plan #{i} ({', '.join(_tensors(kg)[:3])}…)", generates)
    return sorted(sources.items())


def probe_nvcc(p: Probe, sources: list[tuple[str, str]]) -> None:
    from prism.codegen.nvcc import compile_check, nvcc_path
    from prism.errors import CompileError

    row = "names: generated CUDA compiles (nvcc)"
    r = p.row(row)
    if not p.nvcc or nvcc_path() is None:
        r.notes.append("skipped: " + ("--no-nvcc" if not p.nvcc else "nvcc is not on the PATH"))
        return
    if p.quick:
        sources = sources[:2]
    try:
        compiled = {c.entry for c in compile_check(sources, "sm_80", jobs=2, per_unit=max(1, len(sources) // 2 + 1))}
        failed: dict[str, str] = {}
    except CompileError as e:
        compiled, failed = set(), {"(batch)": _short(e, 300)}
    for entry, _src in sources:
        r.tried += 1
        if entry in compiled:
            r.handled += 1
        else:
            r.defects.append(f"{entry}: nvcc rejected it ({failed.get('(batch)', 'missing from the output')})")
    r.notes.append(f"nvcc at {nvcc_path()}, sm_80, {len(sources)} kernels")


# ================================================================================== library


def _built_optimize(graph: Graph, entry: Any, arch: str) -> Any:
    from prism.library import Built

    kg = plans.hand_plans("rmsnorm_linear", graph)[0].instantiate({"x": 1, "i": 1})
    return Built(kg, f"// {entry.name}\n", {"kernels": []}, 1.0, "FakeGPU")


def _tree(top: Path, skip: Path) -> set[str]:
    return {str(q) for q in top.rglob("*") if not q.resolve().is_relative_to(skip.resolve())}


def probe_library_paths(p: Probe) -> None:
    from prism.library import Entry, Spec, build, parse_spec

    row = "library: paths stay in kernels/"
    rng = np.random.default_rng(p.seed + 3)
    with tempfile.TemporaryDirectory(prefix="prism-probe-") as tmp:
        top = Path(tmp) / "top"
        root = top / "lib" / "kernels"
        root.mkdir(parents=True)
        (root / "p.py").write_text("from prism.workloads import rmsnorm_linear\n"
                                   "def f(**k): return rmsnorm_linear(1, 64)\n")
        outside = Path(tmp) / "outside"
        outside.mkdir()
        (outside / "prog.py").write_text("def f(**k): raise SystemExit('ran code outside the library')\n")
        (root / "link").symlink_to(outside)
        abs_evil = str(top / "abs_evil")
        fields: list[tuple[str, str]] = [
            ("name", "../evil"), ("name", abs_evil), ("name", "a/b"), ("name", "a\nb"), ("name", ".."),
            ("name", "../../../../evil"), ("sizes", "../x"), ("sizes", "/x"), ("sizes", abs_evil),
            ("file", "../outside.py"), ("file", "/etc/passwd"), ("file", "link/prog.py"), ("file", str(outside / "prog.py")),
            ("function", "os.system"), ("function", "f\nimport os"),
        ]
        alphabet = [*"ab./\\_-\n~:", "../", abs_evil + "/"]
        for _ in range(p.n(6, 80)):
            text = "".join(str(rng.choice(alphabet)) for _ in range(int(rng.integers(1, 8))))
            fields.append((str(rng.choice(["name", "sizes"])), text))
        if p.quick:
            fields = fields[:6] + fields[-6:]
        before = _tree(Path(tmp), root)
        for key, value in fields:
            def spec_case(key: str = key, value: str = value) -> str | None:
                entry = {"file": "p.py", "function": "f", "sizes": {"n": 1}}
                entry["sizes" if key == "sizes" else key] = {value: 1} if key == "sizes" else value  # type: ignore[assignment]
                text = "[[entry]]\n" + "\n".join(f"{k} = {json.dumps(v) if isinstance(v, str) else _toml(v)}"
                                                 for k, v in entry.items())
                try:
                    spec = parse_spec(text, root)
                except LibraryError:
                    return _no_new(Path(tmp), root, before)
                except Exception as e:
                    return f"bare {type(e).__name__}: {_short(e)}"
                with quiet():
                    status = build(spec, _built_optimize, root=root, check_nvcc=False, progress=False)
                if any(not s.startswith(("built", "skipped", "failed:")) for s in status.values()):
                    return f"status {status}"
                return _no_new(Path(tmp), root, before)
            p.case(row, f"spec {key}={value!r}", spec_case)
        # entries made by hand (no spec parsing): build itself confines them
        hand = [("../evil", (("n", 1),)), (abs_evil, (("n", 1),)), ("ok", (("/../../evil", 1),)),
                ("ok", (("../../../evil", 1),)), ("ok", ((abs_evil, 1),))]
        for program, sizes in hand[: p.n(3, len(hand))]:
            def hand_case(program: str = program, sizes: tuple[tuple[str, int], ...] = sizes) -> str | None:
                spec = Spec("sm_80", (Entry(program, sizes, "float16", file="p.py", function="f"),), root)
                with quiet():
                    status = build(spec, _built_optimize, root=root, check_nvcc=False, progress=False)
                (result,) = status.values()
                if not result.startswith("failed:"):
                    return f"built ({result})"
                return _no_new(Path(tmp), root, before)
            p.case(row, f"hand-made Entry {program!r} {sizes}", hand_case)


def _toml(v: Any) -> str:
    return "{ " + ", ".join(f"{json.dumps(k)} = {x}" for k, x in v.items()) + " }"


def _no_new(top: Path, root: Path, before: set[str]) -> str | None:
    new = _tree(top, root) - before
    for q in new:  # undo, so one defect does not count against the next case
        with contextlib.suppress(OSError):
            Path(q).unlink() if Path(q).is_file() else shutil.rmtree(q)
    return f"wrote outside kernels/: {sorted(new)}" if new else None


GOOD_SPEC = '[[entry]]\nprogram = "rmsnorm_linear"\nsizes = { n = 1, d = 64 }\n'
KEY = "rmsnorm_linear/n1_d64"


def _stub_compile(plan: Any) -> Any:
    return type("Compiled", (), {"plan": plan})()


def probe_library_manifest(p: Probe) -> None:
    from prism import library, runtime
    from prism.library import build, parse_spec
    from tests.test_cache_integrity import _leaves, _set

    row = "library: tampered manifest / sources"
    rng = np.random.default_rng(p.seed + 4)
    graph = workloads.rmsnorm_linear(1, 64)
    r = np.random.default_rng(0)
    ins = {t.name: r.standard_normal(t.shape) for t in graph.inputs}
    ref = graph.evaluate(ins)["O"]

    def fresh(tmp: Path) -> Path:
        root = tmp / "kernels"
        with quiet():
            build(parse_spec(GOOD_SPEC), _built_optimize, root=root, check_nvcc=False, progress=False)
        return root

    def loads_right(root: Path, sizes: Any = None) -> str | None:
        """A LibraryError, or a kernel whose template computes the program."""
        try:
            with quiet(), patched(runtime, "compile_plan", _stub_compile):
                k = library.load("rmsnorm_linear", {"n": 1, "d": 64} if sizes is None else sizes, root=root)
        except LibraryError as e:
            return None if str(e) else "LibraryError with an empty message"
        except Exception as e:
            return f"bare {type(e).__name__}: {_short(e)}"
        rec = library.read_manifest(root)["entries"][KEY]
        kg = KernelGraph.from_json(rec["template"])
        got = interpreter.run(kg, {t.name: ins[t.name] for t in kg.inputs})
        out = got.get("O")
        if out is None or _rel(out, ref) > 1e-9 or k.kernel is None:
            return "loaded a template that does not compute the program (silent wrong result)"
        return None

    def edit(root: Path, change: Callable[[dict[str, Any]], object]) -> None:
        doc = library.read_manifest(root)
        change(doc["entries"][KEY])
        library.write_manifest(doc, root)

    def unary_fn(rec: dict[str, Any], fn: str) -> None:
        for k in rec["template"]["kernels"]:
            for op in k.get("ops", []):
                if op.get("op") == "unary" and op.get("fn") in ("rsqrt", "square"):
                    op["fn"] = fn
                    return
        raise AssertionError("no unary op to tamper with")

    changes: list[tuple[str, Callable[[dict[str, Any]], object]]] = [
        ("template program with a newline", lambda rec: rec["template"].update(program="p\n#include </etc/passwd>")),
        ("template input 'X;int y'", lambda rec: rec["template"]["inputs"][0].__setitem__(0, "X;int y")),
        ("template grid [0]", lambda rec: rec["template"]["kernels"][0].update(grid=[0])),
        ("template input renamed", lambda rec: rec["template"]["inputs"][0].__setitem__(0, "Y")),
        ("no template", lambda rec: rec.pop("template")),
        ("no source_sha256", lambda rec: rec.pop("source_sha256")),
        ("record inputs changed", lambda rec: rec.update(inputs=[["X", [2, 64]], ["W", [64, 64]]])),
        ("source ../../outside.cu", lambda rec: rec.update(source="../../outside.cu")),
        ("source /etc/hostname", lambda rec: rec.update(source="/etc/hostname")),
        ("source rmsnorm_linear/../../x.cu", lambda rec: rec.update(source="rmsnorm_linear/../../x.cu")),
        ("source 123", lambda rec: rec.update(source=123)),
        ("template null", lambda rec: rec.update(template=None)),
        ("template a list", lambda rec: rec.update(template=[1, 2])),
        ("sizes a string", lambda rec: rec.update(sizes="n=1")),
        ("template op changed (sha of source intact)", lambda rec: unary_fn(rec, "exp")),
        ("template op changed to sqrt", lambda rec: unary_fn(rec, "sqrt")),
    ]
    with tempfile.TemporaryDirectory(prefix="prism-probe-") as tmp_s:
        tmp = Path(tmp_s)
        root = fresh(tmp)
        pristine = (root / "manifest.json").read_text()
        p.case(row, "intact library (control)", lambda: loads_right(root))
        for label, change in changes[: p.n(5, len(changes))] if not p.quick else changes[:3] + changes[-2:]:
            def tampered(change: Callable[[dict[str, Any]], object] = change) -> str | None:
                (root / "manifest.json").write_text(pristine)
                edit(root, change)
                return loads_right(root)
            p.case(row, label, tampered)
        src_rel = json.loads(pristine)["entries"][KEY]["source"]
        for label, action in [("source edited", lambda f: f.write_text("// tampered\nasm(\"trap;\");\n")),
                              ("source deleted", lambda f: f.unlink()),
                              ("source replaced by a folder", lambda f: (f.unlink(), f.mkdir()))]:
            def source_case(action: Callable[[Path], object] = action) -> str | None:
                shutil.rmtree(root)
                fresh(tmp)
                action(root / src_rel)
                return loads_right(root)
            p.case(row, label, source_case)
        shutil.rmtree(root)
        root = fresh(tmp)
        pristine = (root / "manifest.json").read_text()
        for label, text in [("manifest []", "[]"), ("manifest [1, 2]", "[1, 2]"), ("manifest \"x\"", '"x"'),
                            ("manifest not JSON", "{not json"), ("manifest entries a list",
                             json.dumps({"format": "prism.kernel_library", "version": 1, "entries": []})),
                            ("manifest record not an object",
                             json.dumps({"format": "prism.kernel_library", "version": 1, "entries": {KEY: 5}}))]:
            def manifest_case(text: str = text) -> str | None:
                (root / "manifest.json").write_text(text)
                return loads_right(root)
            p.case(row, label, manifest_case)
        (root / "manifest.json").write_text(pristine)
        for sizes in [{"n": "x"}, [1, 64], None, {"n": 1.5}, {"n": True}, {"n": 0}, "n=1", {"n": 2**70, "d": 64}]:
            p.case(row, f"load sizes {sizes!r}", lambda sizes=sizes: loads_right(root, sizes if sizes is not None else 0))
        # random corruptions of the template's leaves: a LibraryError or a template that computes the program
        leaves = list(_leaves(json.loads(pristine)["entries"][KEY]["template"]))
        for i in range(p.n(5, 60)):
            where, _ = leaves[int(rng.integers(0, len(leaves)))]
            value = random_leaf(rng)

            def leaf_case(where: tuple[Any, ...] = where, value: Any = value) -> str | None:
                (root / "manifest.json").write_text(pristine)
                edit(root, lambda rec: _set(rec["template"], where, value))
                return loads_right(root)
            p.case(row, f"random template edit #{i} {where}={value!r}", leaf_case)


def random_leaf(rng: np.random.Generator) -> Any:
    return [None, -1, 0, 1, 2, 4, 7, "X", "W", "O", "x", "i", "exp", "sqrt", "rsqrt", "square", "neg", "silu",
            "load", "save", "sum", "mul", "div", "a\nb", 2**64, 0.5, [], {}][int(rng.integers(0, 28))]


# ================================================================================== caches


def probe_caches(p: Probe) -> None:
    from prism.cache import JsonCache
    from prism.codegen.sizes import legal_sizes
    from tests.test_cache_integrity import _leaves, _set

    row = "cache: tampered entries, bad cache dir"
    rng = np.random.default_rng(p.seed + 5)
    g = workloads.swiglu(4, 32)
    key = g.structure_key()
    r = np.random.default_rng(0)
    ins = {t.name: r.standard_normal(t.shape) for t in g.inputs}
    ref = g.evaluate(ins)["O"]
    templates = plans.hand_plans("swiglu", g)

    def outcome() -> str | None:
        """After a tampering: a miss with the entry gone, or a hit whose every plan computes the program."""
        path = pipeline.search_cache().path(key)
        try:
            with quiet():
                hit = pipeline._cached_whole(g, "swiglu", key)
        except Exception as e:
            return f"bare {type(e).__name__}: {_short(e)}"
        if hit is None:
            return None if not path.exists() else "a bad entry was kept (it will fail again every run)"
        for t in hit.templates:
            sizes = legal_sizes(t, arch="sm_90", resources=None, limit=1)
            if not sizes:
                continue
            got = interpreter.run(t.instantiate(sizes[0]), ins).get("O")
            if got is None or _rel(got, ref) > 1e-9:
                return "a wrong plan was served as a cache hit"
        return None

    def seeded() -> tuple[JsonCache, dict[str, Any]]:
        with quiet():
            pipeline.save_verified(g, templates, {"candidates": 0})
        cache = pipeline.search_cache()
        return cache, json.loads(cache.path(key).read_text())

    def rewrite(change: Callable[[dict[str, Any]], object]) -> Callable[[], str | None]:
        def run() -> str | None:
            cache, doc = seeded()
            change(doc["payload"])
            cache.put(key, doc["payload"])  # a valid checksum: it decodes, and it is wrong
            return outcome()
        return run

    def raw(text: Callable[[str], str]) -> Callable[[], str | None]:
        def run() -> str | None:
            cache, _ = seeded()
            path = cache.path(key)
            path.write_text(text(path.read_text()))
            return outcome()
        return run

    def rename(kg: dict[str, Any], old: str, new: str) -> None:
        for spec in kg["inputs"] + kg["outputs"]:
            if spec[0] == old:
                spec[0] = new
        for k in kg["kernels"]:
            for op in k.get("ops", []):
                if op.get("tensor") == old:
                    op["tensor"] = new

    def silu_to_exp(pl: dict[str, Any]) -> None:
        for op in (op for k in pl["templates"][0]["kernels"] for op in k.get("ops", [])):
            if op.get("fn") == "silu":
                op["fn"] = "exp"

    cases: list[tuple[str, Callable[[], str | None]]] = [
        ("intact entry (control)", lambda: (seeded(), outcome())[1]),
        ("not JSON", raw(lambda s: "{not json")),
        ("truncated", raw(lambda s: s[: len(s) // 2])),
        ("empty file", raw(lambda s: "")),
        ("a JSON list", raw(lambda s: "[1, 2]")),
        ("checksum broken", raw(lambda s: s.replace('"swiglu', '"swiglX', 1) if '"swiglu' in s else s + " ")),
        ("other schema", raw(lambda s: s.replace('"schema": ', '"schema": 9', 1))),
        ("other key", rewrite(lambda pl: pl.update(structure_key="other"))),
        ("renamed input", rewrite(lambda pl: [rename(t, "X", "Y") for t in pl["templates"]])),
        ("renamed output", rewrite(lambda pl: [rename(t, "O", "P") for t in pl["templates"]])),
        ("wrong op (silu→exp)", rewrite(silu_to_exp)),
        ("dangling load", rewrite(lambda pl: pl["templates"][0]["kernels"][0]["ops"][0].update(tensor="nowhere"))),
        ("templates not a list", rewrite(lambda pl: pl.update(templates=5))),
        ("template with a newline name", rewrite(lambda pl: pl["templates"][0].update(program="p\nint x;"))),
    ]
    if p.quick:
        cases = cases[:3] + cases[8:11]
    with tempfile.TemporaryDirectory(prefix="prism-probe-cache-") as tmp, _env("PRISM_CACHE_DIR", tmp):
        for label, run in cases:
            p.case(row, label, run)
        payload = seeded()[1]["payload"]
        leaves = list(_leaves(payload["templates"]))
        for i in range(p.n(4, 50)):
            where, _ = leaves[int(rng.integers(0, len(leaves)))]
            value = random_leaf(rng)
            p.case(row, f"random edit #{i} {where}={value!r}",
                   rewrite(lambda pl, where=where, value=value: _set(pl["templates"], where, value)))
        for bad in ["../x", "/etc/passwd", "a\nb", "", "A", "k/../../y"]:
            p.case(row, f"cache key {bad!r}", lambda bad=bad: typed(lambda: JsonCache("t", 1, Path(tmp)).path(bad),
                                                                   CacheError, repr(bad)[:6]))
    with tempfile.TemporaryDirectory(prefix="prism-probe-cache-") as tmp:
        blocker = Path(tmp) / "file"
        blocker.write_text("a file where a folder should be")
        for label, cdir in [("PRISM_CACHE_DIR is a file", blocker), ("PRISM_CACHE_DIR below a file", blocker / "sub")]:
            def bad_dir(cdir: Path = cdir) -> str | None:
                with _env("PRISM_CACHE_DIR", str(cdir)), quiet():
                    pipeline.save_verified(g, templates, {})  # warns, never raises
                    hit = pipeline._cached_whole(g, "swiglu", key)
                return None if hit is None else "a hit from an unwritable cache"
            p.case(row, label, bad_dir)
    if not p.quick:
        probe_tuned_cache(p, row)


def probe_tuned_cache(p: Probe, row: str) -> None:
    """A tuned entry whose plan is wrong is evicted and retuned, never returned (interpreter backend)."""
    from prism.cache import JsonCache
    from prism.ops import Unary
    from prism.tune.backends import InterpreterBackend

    def timer(kg: KernelGraph) -> float:
        return float(sum(len(k.ops) for k in kg.kernels if isinstance(k, CustomKernel)))

    g = workloads.rmsnorm_linear(4, 32)

    def superopt() -> Any:
        with quiet():
            return pipeline.superoptimize(g, program="rmsnorm_linear", samples=3, seed=1,
                                          backend=InterpreterBackend(timer), progress=False)

    def wrong_op(pl: dict[str, Any]) -> None:
        kg = KernelGraph.from_json(pl["kernel_graph"])
        k = next(k for k in kg.kernels if isinstance(k, CustomKernel))
        ops = tuple(replace(op, fn=Unary.EXP) if hasattr(op, "fn") and isinstance(op.fn, Unary) else op for op in k.ops)
        pl["kernel_graph"] = replace(kg, kernels=tuple(replace(k, ops=ops) if x is k else x for x in kg.kernels)).to_json()

    for label, change in [("tuned: wrong op", wrong_op),
                          ("tuned: not a plan", lambda pl: pl.update(kernel_graph={"format": "prism.kernel_graph"})),
                          ("tuned: renamed input", lambda pl: pl.update(kernel_graph=json.loads(
                              json.dumps(pl["kernel_graph"]).replace('"X"', '"Y"'))))]:
        def tuned(change: Callable[[dict[str, Any]], object] = change) -> str | None:
            with tempfile.TemporaryDirectory(prefix="prism-probe-tuned-") as tmp, _env("PRISM_CACHE_DIR", tmp):
                with quiet():
                    pipeline.save_verified(g, plans.hand_plans("rmsnorm_linear", g), {"candidates": 0})
                superopt()
                store = JsonCache("tuned", pipeline.TUNE_CACHE_SCHEMA)
                key = f"{g.structure_hash()}-{InterpreterBackend(timer).arch()}"
                path = store.path(key)
                pl = json.loads(path.read_text())["payload"]
                change(pl)
                store.put(key, pl)
                again = superopt()
                if again.summary.get("tune_cache_hit"):
                    return "the tampered tuned entry was served as a hit"
                return None if again.summary.get("rel_err", 1.0) < 1e-9 else "wrong result after retuning"
        p.case(row, label, tuned)


@contextlib.contextmanager
def _env(name: str, value: str) -> Iterator[None]:
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


# ================================================================================== axioms

# wrong for some values (mostly signed ones or zeros); the probe's own, beyond the tests' lists
EXTRA_WRONG = [
    ("exp-of-mul", '(Un "exp" (Bin "mul" a c))', '(Bin "mul" (Un "exp" a) (Un "exp" c))', ()),
    ("sqrt-of-add", '(Un "sqrt" (Bin "add" a c))', '(Bin "add" (Un "sqrt" a) (Un "sqrt" c))', ()),
    ("square-of-add", '(Un "square" (Bin "add" a c))', '(Bin "add" (Un "square" a) (Un "square" c))', ()),
    ("sub-commutes", '(Bin "sub" a c)', '(Bin "sub" c a)', ()),
    ("div-commutes", '(Bin "div" a c)', '(Bin "div" c a)', ()),
    ("sum-of-exp", '(Sum (Un "exp" t) d)', '(Un "exp" (Sum t d))', ()),
    ("max-of-neg", '(Max (Un "neg" t) d)', '(Un "neg" (Max t d))', ()),
    ("max-of-add", '(Max (Bin "add" a c) d)', '(Bin "add" (Max a d) (Max c d))', ()),
    ("max-of-self-mul", '(Max (Bin "mul" a a) d)', '(Bin "mul" (Max a d) (Max a d))', ()),
    ("neg-of-square", '(Un "neg" (Un "square" t))', '(Un "square" t)', ()),
    ("square-of-neg-is-neg", '(Un "square" (Un "neg" t))', '(Un "neg" (Un "square" t))', ()),
    ("gelu-of-neg", '(Un "gelu" (Un "neg" t))', '(Un "neg" (Un "gelu" t))', ()),
]


def probe_axioms(p: Probe) -> None:
    from prism.verify.axiomcheck import VALUE_KINDS, check_axiom, sample_values
    from prism.verify.axioms import AXIOMS, Axiom
    from tests.test_axioms import SIGN_BLIND, WRONG

    row = "axioms: known-wrong rejected"
    wrong = list(WRONG) + list(SIGN_BLIND) + [Axiom(n, "x", lhs, rhs, when) for n, lhs, rhs, when in EXTRA_WRONG]
    seeds = [1] if p.quick else [1, p.seed + 2]
    if p.quick:
        wrong = wrong[:3] + list(SIGN_BLIND[:3]) + [wrong[-1]]
    for ax in wrong:
        for s in seeds:
            p.case(row, f"{ax.name} seed {s}", lambda ax=ax, s=s: None if not check_axiom(ax, seed=s).ok
                   else "the unsound axiom passed the numeric check")
    p.row(row).notes.append(f"{len(WRONG)} + {len(SIGN_BLIND)} from tests/test_axioms.py, "
                            f"{len(EXTRA_WRONG)} the probe's own; seeds {seeds}")
    row = "axioms: samples signed, zeros, magnitudes; sound axioms pass (control)"
    rng = np.random.default_rng(p.seed + 6)

    def signed() -> str | None:
        v = np.concatenate([sample_values(rng, (200,), k) for k in VALUE_KINDS])
        mags = np.abs(v[v != 0])
        if not ((v < 0).mean() > 0.3 and (v == 0).sum() > 20 and mags.min() < 1e-2 and mags.max() > 1e2):
            return "samples are not signed with zeros over several magnitudes"
        return None
    for _ in range(3):
        p.case(row, "sample_values", signed)
    picks = rng.choice(len(AXIOMS), p.n(2, 10), replace=False)
    for i in picks:
        ax = AXIOMS[int(i)]
        p.case(row, f"sound {ax.name}", lambda ax=ax: None if check_axiom(ax, seed=p.seed + 3).ok
               else f"a sound axiom fails the check: {check_axiom(ax, seed=p.seed + 3).message}")


# ================================================================================== runtime


def probe_runtime(p: Probe) -> None:
    from prism.runtime import Span, first_overlap

    row = "runtime: out= aliasing (CPU predicate)"
    rng = np.random.default_rng(p.seed + 7)
    for i in range(p.n(40, 600)):
        raw = [(str(rng.choice(["input", "output"])), int(rng.integers(0, 64)), int(rng.integers(0, 24)))
               for _ in range(int(rng.integers(0, 7)))]

        def overlap(raw: list[tuple[str, int, int]] = raw) -> str | None:
            spans = [Span(f"t{j}", role, start, n) for j, (role, start, n) in enumerate(raw)]
            clash = any(set(range(a.start, a.start + a.nbytes)) & set(range(b.start, b.start + b.nbytes))
                        for j, a in enumerate(spans) for b in spans[j + 1:] if "output" in (a.role, b.role))
            found = first_overlap(spans)
            if (found is not None) != clash:
                return f"overlap {'missed' if clash else 'invented'} for {raw}"
            return None
        p.case(row, f"spans #{i}", overlap)
    p.row(row).notes.append("GPU parts (out= on a live tensor, lazy neg/conj views, two streams) need a GPU: "
                            "tests/test_runtime_aliasing.py -m gpu")


# ================================================================================== options


def probe_options(p: Probe) -> None:
    from prism.options import check_count, check_seconds, check_seed, check_target
    from prism.tune import InterpreterBackend, tune

    row = "options: superoptimize / tune arguments"
    bad: list[tuple[str, Callable[[Any], object], Any]] = []
    for v in [0, -3, 2.5, True, "8", None, float("nan"), np.float32(2.5)]:
        bad.append(("samples", lambda v: check_count("samples", v, "f"), v))
    for v in [-1, 2**64, 1.0, "0", None, True]:
        bad.append(("seed", lambda v: check_seed(v, "f"), v))
    for v in [float("nan"), -1, 10**400, "60", float("inf"), [1]]:
        bad.append(("time_budget", lambda v: check_seconds("time_budget", v, "f"), v))
    for v in ["sm_xx", "sm_80; rm -rf", 80, "sm_80\nx", "", "SM_80", "sm_-1"]:
        bad.append(("target", lambda v: check_target(v, "f"), v))
    if p.quick:
        bad = bad[::4]
    for what, check, v in bad:
        p.case(row, f"{what}={v!r}", lambda check=check, v=v: typed(lambda: check(v), OptionError, "f: "))
    # superoptimize refuses before any search runs
    g = workloads.swiglu(4, 32)

    def no_search(*a: Any, **k: Any) -> Any:
        raise AssertionError("searched before checking the options")
    kwargs_list: list[dict[str, Any]] = [{"samples": 0}, {"samples": "x"}, {"seed": -1}, {"time_budget": float("nan")},
                                         {"time_budget": -1}, {"target": "sm_xx"}, {"search_budget": float("inf")},
                                         {"example_inputs": {"zz": np.ones(3)}}]
    for kw in kwargs_list[: p.n(3, len(kwargs_list))]:
        def sup(kw: dict[str, Any] = kw) -> str | None:
            with patched(pipeline, "search_and_verify", no_search):
                return typed(lambda: pipeline.superoptimize(g, progress=False, **kw), PrismError)
        p.case(row, f"superoptimize {kw}", sup)
    for graph in ["g", None, 3]:
        p.case(row, f"superoptimize({graph!r})", lambda graph=graph: typed(
            lambda: pipeline.superoptimize(graph), OptionError, "prism.Graph"))
    gr = workloads.rmsnorm_linear(n=8, d=32)
    templates = [plans.rmsnorm_linear_plan(gr), plans.rmsnorm_linear_2d_plan(gr)]
    for kw in [{"samples": 0}, {"seed": -2}, {"time_budget": float("nan")}, {"arch": "sm_1"}][: p.n(2, 4)]:
        p.case(row, f"tune {kw}", lambda kw=kw: typed(
            lambda: tune(gr, templates, backend=InterpreterBackend(lambda kg: 1.0), **kw), OptionError))

    def huge_samples() -> str | None:  # a legal count: tuning takes every legal size, no more
        res = tune(gr, templates, samples=10**400, seed=0, backend=InterpreterBackend(lambda kg: 1.0))
        return None if res.counts["sampled"] == res.counts["legal"] and np.isfinite(res.time_us) else f"{res.counts}"
    if not p.quick:
        p.case(row, "tune samples=10**400 (accepted: every legal size)", huge_samples)

    def budget_never_hangs() -> str | None:
        class Slow(InterpreterBackend):
            compiled = 0

            def compile(self, kg: KernelGraph) -> Any:
                self.compiled += 1
                time.sleep(0.0 if self.compiled == 1 else 0.1)
                return super().compile(kg)
        done: list[Any] = []
        t = threading.Thread(daemon=True, target=lambda: done.append(tune(
            gr, templates, samples=20, seed=0, jobs=1, time_budget=0.0, refine=0, backend=Slow(lambda kg: 1.0))))
        t.start()
        t.join(60)
        if t.is_alive():
            return "tune(time_budget=0) still running after 60 s (hang)"
        return None if done and np.isfinite(done[0].time_us) else "tune(time_budget=0) returned no kernel"
    p.case(row, "tune(time_budget=0) with compiles queued", budget_never_hangs)


# ================================================================================== commands


def _cli_subprocess(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str, str]:
    proc = subprocess.run([sys.executable, "-m", "prism", *argv], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


def probe_cli(p: Probe) -> None:
    from tests.test_hostile_inputs import BAD_FLAGS

    row = "commands: bad flags, bad paths (subprocess)"
    with tempfile.TemporaryDirectory(prefix="prism-probe-cli-") as tmp_s:
        tmp = Path(tmp_s)
        blocker = tmp / "blocker"
        blocker.write_text("a file, not a folder")
        lib = tmp / "lib"
        lib.mkdir()
        (lib / "manifest.json").write_text(json.dumps({"format": "prism.kernel_library", "version": 1, "entries": {
            "a/b": 5, "c/d": {"program": "c"}, "e/f": {"arch": "sm_80", "time_us": "fast"}}}))
        bad_lib = tmp / "badlib"
        bad_lib.mkdir()
        (bad_lib / "manifest.json").write_text("[1, 2]")
        spec = tmp / "spec.toml"
        spec.write_text('[[entry]]\nname = "../../evil"\nfile = "p.py"\nfunction = "f"\nsizes = { n = 1 }\n')
        cases: list[tuple[list[str], int | None]] = [(list(a), 2) for a in BAD_FLAGS]
        cases += [
            (["emit", "swiglu_d1024", "--out", str(blocker)], 1),
            (["emit", "swiglu_d1024", "--out", str(blocker / "below")], 1),
            (["emit", "swiglu_d1024", "--out", "/proc/prism-probe"], 1),
            (["emit", "swiglu_d1024", "--out", str(tmp / "ok"), "--arch", "sm_xx"], 2),
            (["optimize", "swiglu", "--target", "sm_80; rm -rf /"], 2),
            (["optimize", "swiglu", "--time-budget", "1e400"], 2),
            (["library", "build", "--spec", str(spec)], 1),
            (["library", "build", "--spec", str(tmp / "missing.toml")], 1),
            (["library", "list", "--root", str(lib)], None),
            (["library", "list", "--root", str(bad_lib)], 1),
            (["search", "nope"], None),
            (["demo", "nope"], None),
        ]
        if p.quick:
            cases = [cases[0], cases[len(BAD_FLAGS)]]
        env = {**os.environ, "PYTHONPATH": str(REPO), "PRISM_CACHE_DIR": str(tmp / "cache")}
        before = {str(q) for q in tmp.rglob("*")}

        def run(case: tuple[list[str], int | None]) -> str | None:
            argv, want = case
            rc, _out, err = _cli_subprocess(argv, env, tmp)
            if "Traceback" in err:
                return f"traceback (rc {rc}): {_short(err.strip().splitlines()[-1])}"
            if rc == 0:
                return "exit 0 for a bad command"
            if want is not None and rc != want:
                return f"exit {rc}, expected {want}: {_short(err)}"
            if not err.strip() or "error" not in err.lower():
                return f"exit {rc} without an error message"
            if len(err.strip().splitlines()) > 2:
                return f"{len(err.strip().splitlines())} lines on stderr: {_short(err)}"
            return None
        with ThreadPoolExecutor(3) as pool:
            results = list(pool.map(lambda c: _guard(lambda: run(c)), cases))
        for (argv, _), why in zip(cases, results, strict=True):
            p.case(row, "prism " + " ".join(a.replace("\n", "\\n") for a in argv), lambda why=why: why)
        new = {str(q) for q in tmp.rglob("*")} - before
        new = {q for q in new if not q.startswith(str(tmp / "cache"))}
        p.case(row, "nothing written by the failing commands", lambda: f"wrote {sorted(new)}" if new else None)
    probe_cli_random(p)


def _guard(call: Callable[[], str | None]) -> str | None:
    try:
        return call()
    except Exception as e:
        return f"uncaught {type(e).__name__}: {_short(e)}"


def probe_cli_random(p: Probe) -> None:
    """Random values of optimize's flags, in process with the pipeline stubbed (a value that is
    accepted must arrive checked); exit 2 with one line, or accepted."""
    from prism import cli
    from prism.options import check_count, check_seconds, check_seed, check_target
    from prism.tune import cli as tune_cli

    row = "commands: random flag values (in process)"
    rng = np.random.default_rng(p.seed + 8)
    calls: list[dict[str, Any]] = []
    alphabet = [*"0123456789.-+eEinfaxs_m \n;", "nan", "inf", "sm_80", "sm_90", "1e400", "²", "٣", "𝟠"]
    for _ in range(p.n(8, 120)):
        flag = str(rng.choice(["--samples", "--seed", "--time-budget", "--target"]))
        text = "".join(str(rng.choice(alphabet)) for _ in range(int(rng.integers(1, 6))))
        if text.startswith("-"):
            text = "0" + text

        def run(flag: str = flag, text: str = text) -> str | None:
            calls.clear()
            err = io.StringIO()
            with patched(tune_cli, "_superoptimize", lambda: lambda *a, **k: calls.append(k)), \
                    contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                try:
                    rc = cli.main(["optimize", "swiglu", flag, text])
                except SystemExit as e:
                    rc = e.code  # type: ignore[assignment]
            if rc == 2:
                lines = err.getvalue().strip().splitlines()
                return None if len(lines) == 1 and "error" in lines[0] and not calls else f"exit 2 but {lines}"
            if rc not in (0, None) or len(calls) != 1:
                return f"exit {rc}: {_short(err.getvalue())}"
            kw = calls[0]
            check_count("samples", kw["samples"], "t")
            check_seed(kw["seed"], "t")
            check_seconds("time_budget", kw["time_budget"], "t")
            check_target(kw["target"], "t")
            return None
        p.case(row, f"optimize {flag} {text!r}", run)


# ================================================================================== main


def table(p: Probe) -> str:
    lines = ["| class | cases tried | handled | defects left | notes |", "|---|---:|---:|---:|---|"]
    for r in p.rows.values():
        lines.append(f"| {r.name} | {r.tried} | {r.handled} | {len(r.defects)} | {'; '.join(r.notes)} |")
    total = [sum(getattr(r, a) for r in p.rows.values()) for a in ("tried", "handled")]
    lines.append(f"| **total** | {total[0]} | {total[1]} | {sum(len(r.defects) for r in p.rows.values())} | |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--quick", action="store_true", help="a small subset (a few seconds; the CI test)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the random probes (default 0)")
    ap.add_argument("--no-nvcc", action="store_true", help="do not compile the generated CUDA")
    ap.add_argument("--only", default=None, help="run only the probe groups whose name contains this text")
    ap.add_argument("--allow-known", action="store_true",
                    help="exit 0 when every defect found is one of KNOWN_DEFECTS (still listed; the CI test)")
    args = ap.parse_args(argv)
    p = Probe(args.quick, args.seed, not args.no_nvcc)
    t0 = time.perf_counter()
    groups: list[tuple[str, Callable[[], object]]] = [
        ("graph", lambda: probe_graph_api(p)),
        ("names", lambda: probe_names(p)),
        ("json", lambda: probe_nvcc(p, probe_json_and_codegen(p))),
        ("library-paths", lambda: probe_library_paths(p)),
        ("library-manifest", lambda: probe_library_manifest(p)),
        ("cache", lambda: probe_caches(p)),
        ("axioms", lambda: probe_axioms(p)),
        ("runtime", lambda: probe_runtime(p)),
        ("options", lambda: probe_options(p)),
        ("cli", lambda: probe_cli(p)),
    ]
    seconds: dict[str, float] = {}
    for name, run in groups:
        if args.only and args.only not in name:
            continue
        t = time.perf_counter()
        with quiet():
            run()
        seconds[name] = time.perf_counter() - t
    print(table(p))
    print(f"\n{'quick' if args.quick else 'full'} probe, seed {args.seed}, {time.perf_counter() - t0:.0f} s "
          f"({', '.join(f'{k} {v:.0f} s' for k, v in seconds.items())})")
    defects = [(r.name, d) for r in p.rows.values() for d in r.defects]
    if defects:
        print("\nDefects:")
        for name, d in defects:
            print(f"- [{name}] {d}{'  (known: docs/hardening.md)' if _known(d) else ''}")
    new = [d for _, d in defects if not _known(d)]
    return 1 if new or (defects and not args.allow_known) else 0


# defects this probe finds and that are not fixed yet (docs/hardening.md says why); by case label
KNOWN_DEFECTS: tuple[str, ...] = ()


def _known(defect: str) -> bool:
    return defect.startswith(KNOWN_DEFECTS)


if __name__ == "__main__":
    sys.exit(main())
