"""Names: one validator for every way a program enters (Graph API, JSON of cache entries and the
library manifest, code generation), and mangling so that any valid name compiles (issue 16)."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prism import interpreter, plans, workloads
from prism.codegen import generate
from prism.codegen.nvcc import compile_check, nvcc_path
from prism.errors import CodegenError, GraphError, SerializationError
from prism.graph import Graph
from prism.ir import CustomKernel, KernelGraph, Load, PredefinedKernel, Save, UnaryOp
from prism.names import MAX_NAME, NameKind, c_ident, name_problem
from prism.ops import DimRecip

# valid names that are C/CUDA keywords, built-ins, the generator's own identifiers or non-ASCII
HOSTILE = [
    "int", "float", "void", "return", "for", "if", "const", "auto", "register", "template", "namespace", "class",
    "new", "delete", "this", "asm", "extern", "restrict", "__restrict__", "__global__", "__shared__", "main",
    "threadIdx", "blockIdx", "blockDim", "warpSize", "uint4", "float4", "half_t", "half", "N",
    "tid", "smem", "warp", "lane", "acc5", "acc6", "ew4", "mm3", "ra6", "f", "e", "j", "st", "sb", "nx", "v0",
    "blk_8", "s8_1", "t1", "tr2", "u", "hload", "hstore", "pack2", "imin", "smem_u32", "prism_sq", "warp_sum",
    "cp_async16", "st_f4", "mma16816", "t_X", "s_X", "g_s_X", "load_s_X", "X_ring", "s_X_ring", "X", "X_1", "_",
    "__", "__shfl_xor_sync", "_x3b1_", "α", "αβ", "名前", "Ω_1", "café", "ｘ", "x__x", "a" * MAX_NAME,
]
BAD_NAMES = ["", "a b", "a\nb", "a\r", "x;", "a/b", "../x", "a\\", "a-b", "1a", "a.b", "a\u2028b", "\x00",
             "a" * (MAX_NAME + 1)]


# ---------------------------------------------------------------------------------- the validator


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_but_valid_names_are_accepted(name: str) -> None:
    assert name_problem(name, NameKind.TENSOR) is None


@pytest.mark.parametrize("name", [*BAD_NAMES, None, 5, b"X"])
def test_bad_names_are_rejected_with_a_reason(name: object) -> None:
    assert name_problem(name, NameKind.TENSOR) is not None


@pytest.mark.parametrize("name", ["swiglu", "gqa.p0", "rmsnorm_linear-v2", "zoo.p1.p0", "αβ"])
def test_program_names(name: str) -> None:
    assert name_problem(name, NameKind.PROGRAM) is None


@pytest.mark.parametrize("name", ["", "../etc", ".hidden", "-x", "a..b", "a/b", "a b", "a\nb", "a\\b", "x" * 101])
def test_bad_program_names(name: str) -> None:
    assert name_problem(name, NameKind.PROGRAM) is not None


@pytest.mark.parametrize("name", BAD_NAMES)
def test_graph_api_rejects_bad_names_with_a_graph_error(name: str) -> None:
    g = Graph()
    with pytest.raises(GraphError, match="input"):
        g.input((4,), name=name)
    x = g.input((4,), name="X")
    with pytest.raises(GraphError, match="output"):
        g.output(x, name=name)


# ---------------------------------------------------------------------------------- JSON documents


def _doc() -> dict[str, object]:
    g = workloads.program("gqa", batch=2, group=8, kv_len=64, head_dim=16)
    return plans.hand_plans("gqa", g)[2].to_json()


def _poison(doc: dict, where: str, name: str) -> dict:  # type: ignore[type-arg]
    doc = json.loads(json.dumps(doc))
    if where == "program":
        doc["program"] = name
    elif where == "input":
        doc["inputs"][0][0] = name
    elif where == "kernel":
        doc["kernels"][0]["name"] = name
    elif where == "load":
        doc["kernels"][1]["ops"][0]["tensor"] = name
    elif where == "save":
        doc["kernels"][0]["ops"][-1]["tensor"] = name
    else:
        doc["kernels"][0]["loop"] = name
    return doc


@pytest.mark.parametrize("where", ["program", "input", "kernel", "load", "save", "size"])
@pytest.mark.parametrize("name", ["a\nb", "x */ y", "a\\", "../k", "a;int b"])
def test_from_json_rejects_bad_names_anywhere(where: str, name: str) -> None:
    with pytest.raises(SerializationError, match=re.escape(repr(name)[:20])):
        KernelGraph.from_json(_poison(_doc(), where, name))


def test_from_json_accepts_hostile_valid_names() -> None:
    doc = _poison(_poison(_doc(), "input", "threadIdx"), "save", "αβ")
    kg = KernelGraph.from_json(doc)
    assert kg.inputs[0].name == "threadIdx"


def test_generate_rejects_a_kernel_graph_built_with_bad_names() -> None:
    g = workloads.program("rmsnorm_linear", n=8, d=64)
    kg = plans.hand_plans("rmsnorm_linear", g)[0].instantiate({"x": 2, "i": 2})
    for bad in (replace(kg, program="p\n#include <x>"),
                replace(kg, kernels=(replace(kg.kernels[0], name="k0\nint x;"),))):  # type: ignore[type-var]
        with pytest.raises(CodegenError, match=r"\\n"):
            generate(bad, arch="sm_80")


# ---------------------------------------------------------------------------------- mangling


def _ident_names() -> st.SearchStrategy[str]:
    return st.text(st.characters(categories=("L", "Nd", "Pc")), min_size=1, max_size=12).filter(str.isidentifier)


@given(st.lists(_ident_names(), min_size=2, max_size=6, unique=True),
       st.sampled_from(["", "_ring", "_1", "_2"]), st.sampled_from(["", "_ring", "_1", "_2"]))
def test_c_ident_is_injective_even_with_the_generators_suffixes(names: list[str], s1: str, s2: str) -> None:
    a, b = names[0], names[1]
    assert re.fullmatch(r"[A-Za-z0-9_]+", c_ident(a))
    assert c_ident(a) + s1 != c_ident(b) + s2
    assert len({c_ident(n) for n in names}) == len(names)


def rename(kg: KernelGraph, names: dict[str, str]) -> KernelGraph:
    """The same plan with its tensors renamed (inputs, outputs and intermediates)."""
    def t(n: str) -> str:
        return names.get(n, n)

    def op_of(op: object) -> object:
        if isinstance(op, Load | Save):
            return replace(op, tensor=t(op.tensor))
        if isinstance(op, UnaryOp) and isinstance(op.scalar, DimRecip):
            return replace(op, scalar=DimRecip(t(op.scalar.tensor), op.scalar.dim))
        return op

    kernels = tuple(
        replace(k, ops=tuple(op_of(op) for op in k.ops)) if isinstance(k, CustomKernel)  # type: ignore[misc]
        else replace(k, inputs=tuple(t(n) for n in k.inputs), output=t(k.output))
        for k in kg.kernels)
    return replace(kg, inputs=tuple(replace(s, name=t(s.name)) for s in kg.inputs),
                   outputs=tuple(replace(s, name=t(s.name)) for s in kg.outputs), kernels=kernels)


def _small_plans() -> list[KernelGraph]:
    g1 = workloads.program("rmsnorm_linear", n=8, d=64)
    g2 = workloads.program("gqa", batch=2, group=8, kv_len=64, head_dim=16)
    return [plans.hand_plans("rmsnorm_linear", g1)[0].instantiate({"x": 2, "i": 2}),
            plans.hand_plans("gqa", g2)[2].instantiate({"x": 2, "s": 2, "i": 2})]


def _tensors(kg: KernelGraph) -> list[str]:
    out = [t.name for t in (*kg.inputs, *kg.outputs)]
    for k in kg.kernels:
        if isinstance(k, CustomKernel):
            out += [op.tensor for op in k.ops if isinstance(op, Load | Save) and op.tensor not in out]
        elif isinstance(k, PredefinedKernel):
            out += [n for n in (*k.inputs, k.output) if n not in out]
    return out


def _hostile_variants(pool: list[str]) -> list[KernelGraph]:
    out = []
    for kg in _small_plans():
        tensors = _tensors(kg)
        for start in range(0, len(pool), len(tensors)):
            chunk = pool[start:start + len(tensors)]
            if len(chunk) == len(tensors):
                out.append(rename(kg, dict(zip(tensors, chunk, strict=True))))
    return out


def _random_names(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    alphabet = "abcXYZ_019αβγжщ名前éｘΩ"
    names: list[str] = []
    while len(names) < n:
        s = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 8)))
        if s.isidentifier() and s not in names:
            names.append(s)
    return names


def _code_lines(source: str) -> list[str]:
    return [ln.split("//")[0] for ln in source.splitlines()]


@pytest.mark.parametrize("pool", [HOSTILE, _random_names(0, 40)], ids=["hostile", "random"])
def test_any_valid_name_generates_ascii_code_with_distinct_parameters(pool: list[str]) -> None:
    for kg in _hostile_variants(pool):
        plan = generate(kg, arch="sm_80")
        for k in plan.kernels:
            assert all(line.isascii() for line in _code_lines(k.source)), k.name
            sig = next(ln for ln in k.source.splitlines() if ln.startswith('extern "C"'))
            params = re.findall(r"(\w+)(?:,|\))", sig.split(k.entry)[1])
            assert len(params) == len(set(params)) == len(k.args)


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc is not installed on this machine")
def test_any_valid_name_compiles_with_nvcc() -> None:
    """Keywords, built-ins, generator locals and non-ASCII letters as tensor names: nvcc accepts
    the generated code (before mangling 23 of 28 such names did not compile)."""
    sources: dict[str, str] = {}
    for kg in _hostile_variants(HOSTILE) + _hostile_variants(_random_names(1, 30)):
        for k in generate(kg, arch="sm_80").kernels:
            sources[k.entry] = k.source
    assert len(sources) >= 10
    compiled = compile_check(list(sources.items()), "sm_80", jobs=2, per_unit=40)
    assert {c.entry for c in compiled} == set(sources)


def test_renamed_plans_compute_the_same_values() -> None:
    """Renaming is only renaming: the interpreter gives the same outputs under hostile names."""
    for kg in _small_plans():
        tensors = _tensors(kg)
        names = dict(zip(tensors, HOSTILE[: len(tensors)], strict=True))
        rng = np.random.default_rng(0)
        inputs = {t.name: rng.standard_normal(t.shape) for t in kg.inputs}
        want = interpreter.run(kg, inputs)
        got = interpreter.run(rename(kg, names), {names[n]: v for n, v in inputs.items()})
        for t in kg.outputs:
            assert np.array_equal(want[t.name], got[names[t.name]])


@settings(max_examples=25, deadline=None)
@given(st.lists(_ident_names(), min_size=6, max_size=6, unique=True))
def test_plans_with_random_names_round_trip_through_json_generate_and_compute(names: list[str]) -> None:
    kg = _small_plans()[1]
    renamed = rename(kg, dict(zip(_tensors(kg), names, strict=True)))
    back = KernelGraph.loads(renamed.dumps())
    assert back == renamed
    plan = generate(back, arch="sm_80")
    assert all(line.isascii() for k in plan.kernels for line in _code_lines(k.source))
    rng = np.random.default_rng(0)
    inputs = {t.name: rng.standard_normal(t.shape) for t in kg.inputs}
    want = interpreter.run(kg, inputs)["O"]
    got = interpreter.run(back, {b.name: inputs[a.name] for a, b in zip(kg.inputs, back.inputs, strict=True)})
    assert np.array_equal(want, got[back.outputs[0].name])


# ---------------------------------------------------------------------------------- internal names

INTERNAL_LOOKING = ["t0", "t1", "_t0", "v1", "v2", "v3", "_v3", "p0_v3", "p1_v5", "p0_t0", "k0", "op3", "copy0", "O"]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from(INTERNAL_LOOKING), min_size=3, max_size=3, unique=True),
       st.lists(st.sampled_from(["silu", "mul", "add", "exp"]), min_size=4, max_size=9))
def test_user_names_like_internal_ones_keep_every_plan_right(names: list[str], ops: list[str]) -> None:
    """Inputs/outputs named like the partition's and the search's internal tensors (v3, p0_v3,
    t0): the predefined plan and the stitched plan of the parts compute the program."""
    for _, out, ref in internal_name_plans(names, ops):
        assert np.allclose(out, ref, rtol=1e-12, atol=0)


def internal_name_plans(names: list[str], ops: list[str]) -> Iterator[tuple[KernelGraph, np.ndarray, np.ndarray]]:
    """A chain of ``ops`` with inputs and output named ``names``: its predefined and stitched plans
    (through JSON), each with its interpreted output and the reference (also scripts/probe_table.py)."""
    from prism.codegen.sizes import legal_sizes
    from prism.partition import partition, predefined_plan, stitch

    g = Graph()
    x, y = g.input((4, 8), name=names[0]), g.input((4, 8), name=names[1])
    h = x
    for op in ops:
        h = g.silu(h) if op == "silu" else g.exp(g.mul(h, 0.1)) if op == "exp" else getattr(g, op)(h, y)
    g.output(h, name=names[2])
    parts = partition(g, max_ops=2)
    rng = np.random.default_rng(0)
    ins = {t.name: rng.standard_normal(t.shape) for t in g.inputs}
    ref = g.evaluate(ins)[names[2]]
    for kg in (predefined_plan(g), stitch(g, parts, [predefined_plan(p.graph) for p in parts])):
        kg = KernelGraph.loads(kg.dumps())
        sizes = legal_sizes(kg, arch="sm_90", resources=None, limit=1)
        yield kg, interpreter.run(kg.instantiate(sizes[0]), ins)[names[2]], ref
