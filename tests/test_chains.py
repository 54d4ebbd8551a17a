"""Element-wise chains searched as one op (prism/chains.py): which runs are chains, the stand-in
program, plans written back out (generated kernels and predefined ones) computing the program, and
the pipeline searching a program too large to search whole through its stand-in."""

from __future__ import annotations

from pathlib import Path

import pytest

from prism import pipeline
from prism.chains import chains_of, collapse
from prism.codegen import generate
from prism.errors import CodegenError
from prism.graph import Graph, OpKind
from prism.ir import CustomKernel, KernelGraph, PredefinedKernel, UnaryOp
from prism.ops import Unary
from prism.partition import predefined_plan
from prism.rowwise import row_vendor_plan
from tests.test_partition import run_plan


def _soft_capped_scores(n: int = 4, d: int = 16, m: int = 8) -> Graph:
    """softmax(50 tanh(X @ W / 50)) with tanh written with exp (Gemma-2's soft cap): a chain of six."""
    g = Graph()
    x, w = g.input((n, d), name="X"), g.input((d, m), name="W")
    e = g.exp(g.scale(g.matmul(x, w), 1 / 25))
    g.output(g.softmax(g.scale(g.div(g.add_scalar(e, -1.0), g.add_scalar(e, 1.0)), 50.0), -1), "O")
    return g


def _no_stand_in(kg: KernelGraph) -> bool:
    return not any(getattr(op, "fn", None) is Unary.CHAIN for k in kg.kernels
                   for op in (k.ops if isinstance(k, CustomKernel) else (k,)))


def test_the_soft_cap_is_one_chain_read_from_the_scores() -> None:
    g = _soft_capped_scores()
    ((root, ops),) = chains_of(g)
    assert g.nodes[root].kind is OpKind.MATMUL and len(ops) == 6
    stand_in = collapse(g)
    assert stand_in is not None and pipeline.primitive_ops(stand_in.graph) == pipeline.primitive_ops(g) - 5
    assert next(n.fn for n in stand_in.graph.nodes if n.kind is OpKind.UNARY) is Unary.CHAIN


def test_what_is_not_a_chain() -> None:
    g = Graph()
    x, b = g.input((4, 8), name="X"), g.input((1, 8), name="B")
    h = g.exp(g.neg(x))
    g.output(g.add(h, b), "O")  # a second tensor: the chain stops below the add
    g.output(g.sqrt(g.square(g.sum(x, -1))), "S")
    found = chains_of(g)
    assert [len(ops) for _, ops in found] == [2, 2]
    g2 = Graph()
    x2 = g2.input((4, 8), name="X")
    mid = g2.exp(g2.neg(x2))
    g2.output(mid, "M")  # an output inside a run ends it
    g2.output(g2.sum(g2.square(mid), -1), "S")
    assert chains_of(g2) == [(0, (1, 2))]


def test_expanded_plans_compute_the_program() -> None:
    """The stand-in's predefined plan and its row-vendor plan (a vendor GEMM, then one generated row
    kernel holding the chain op), written back out: the program's values, no chain op left."""
    g = _soft_capped_scores()
    stand_in = collapse(g)
    assert stand_in is not None
    plans = [predefined_plan(stand_in.graph, "capped"), row_vendor_plan(stand_in.graph, "capped")]
    assert plans[1] is not None and any(isinstance(op, UnaryOp) and op.fn is Unary.CHAIN
                                        for k in plans[1].kernels if isinstance(k, CustomKernel) for op in k.ops)
    for kg in stand_in.expand([p for p in plans if p is not None]):
        assert _no_stand_in(kg)
        assert run_plan(g, kg) < 1e-12
    kg = stand_in.expand([plans[0]])[0]
    assert sum(isinstance(k, PredefinedKernel) for k in kg.kernels) == len(plans[0].kernels) + 5


def test_a_program_too_large_to_search_whole_is_searched_through_its_stand_in(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Thirteen ops (a chain of twelve, then a row sum): searched whole as two, its plans proven on
    the program, right in the interpreter, and read back from the cache."""
    monkeypatch.setenv("PRISM_CACHE_DIR", str(tmp_path))
    g = Graph()
    x = g.input((8, 64), name="X")
    h = x
    for k in range(6):
        h = g.add_scalar(g.scale(h, 0.9), 0.1 * (k + 1))
    g.output(g.sum(h, -1), "O")
    assert pipeline.primitive_ops(g) > pipeline.WHOLE_PROGRAM_OPS
    for cached in (False, True):
        out = pipeline.search_and_verify(g, program="long_chain", progress=False)
        searched = out.of(pipeline.PlanSource.SEARCHED)
        assert searched and out.cached is cached
        for kg in searched[:4]:
            assert _no_stand_in(kg)
            assert run_plan(g, kg) < 1e-12


def test_weight_transposes_and_a_chain_together(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A decoder's MLP half (17 ops, nn.Linear weights): without its three weight transposes and with
    its RMS statistic as one op it is 12, and is searched whole; the plan found starts with the
    transposes (for code generation to fold), holds no stand-in and computes the program."""
    from bench.zoo import ZOO
    from tests.test_emulate import EMULATOR_SIZES

    monkeypatch.setenv("PRISM_CACHE_DIR", str(tmp_path))
    p = ZOO["llama_mlp_block"]
    g = p.build(**{k: EMULATOR_SIZES[k] for k in p.small})
    assert pipeline.primitive_ops(g) == 17
    searched = pipeline.search_and_verify(g, program="mlp_block", progress=False).of(pipeline.PlanSource.SEARCHED)
    assert searched
    for kg in searched:
        assert [k.kind for k in kg.kernels[:3]] == [OpKind.TRANSPOSE] * 3  # type: ignore[union-attr]
        assert _no_stand_in(kg)
        assert run_plan(g, kg) < 1e-12


def test_a_program_whose_own_search_finds_no_generated_plan_is_searched_through_its_stand_in(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """gpt-oss's gated expert: two projections and an 8-op gate, 10 ops, within the whole-program
    bound, but its search has no candidate; with its chains as single ops (5 ops) it has one-kernel
    plans, written out, proven, right in the interpreter and emulated like it."""
    from bench.zoo import clamped_glu
    from tests.test_emulate import cheap_sizes, emulate_error

    monkeypatch.setenv("PRISM_CACHE_DIR", str(tmp_path))
    g = clamped_glu(16, 64, 64)
    assert pipeline.primitive_ops(g) <= pipeline.WHOLE_PROGRAM_OPS
    whole = pipeline.search_and_verify(g, program="gated_expert", progress=False, partitioned=False)
    one = [kg for kg in whole.of(pipeline.PlanSource.SEARCHED)
           if len(kg.kernels) == 1 and isinstance(kg.kernels[0], CustomKernel)]
    assert one
    for kg in one:
        assert _no_stand_in(kg)
        assert run_plan(g, kg) < 1e-12
        for sizes in cheap_sizes(kg, 1, None):
            assert emulate_error(kg.instantiate(sizes)) < 1e-9


def test_two_chains_keep_their_numbers() -> None:
    """Two different chains of two different roots (an RMS statistic of each operand of a matmul, as
    a QK-norm attention has): each its own numbered stand-in, and each written back as itself."""
    g = Graph()
    q, k = g.input((4, 16), name="Q"), g.input((16, 8), name="K")
    qs = g.rsqrt(g.add_scalar(g.mean(g.square(q), -1), 1e-6))
    ks = g.sqrt(g.add_scalar(g.mean(g.square(k), 0), 1.0))
    g.output(g.matmul(g.mul(q, qs), g.div(k, ks)), "O")
    stand_in = collapse(g)
    assert stand_in is not None and len(stand_in.chains) == 2
    numbers = [n.scalar for n in stand_in.graph.nodes if n.fn is Unary.CHAIN]
    assert sorted(float(x.value) for x in numbers) == [0.0, 1.0]  # type: ignore[union-attr]
    assert [st.fn for st in stand_in.chains[0]] != [st.fn for st in stand_in.chains[1]]
    for kg in stand_in.expand([predefined_plan(stand_in.graph, "two")]):
        assert _no_stand_in(kg)
        assert run_plan(g, kg) < 1e-12


def test_code_generation_refuses_the_stand_in() -> None:
    stand_in = collapse(_soft_capped_scores())
    assert stand_in is not None
    kg = row_vendor_plan(stand_in.graph, "capped")
    assert kg is not None
    with pytest.raises(CodegenError, match="chain op"):
        generate(kg.instantiate({s: 4 for s in kg.symbols}))
