"""Transposes moved onto inputs (prism/transposes.py) and transposed tiles read by expressions
(prism/codegen/fold.py, ``Buf.transposed``): a bank of vectors normalised and multiplied by its transpose
becomes one generated kernel that reads the bank in place. CPU: the rewrite against the float64
reference, the search's one-kernel plan in the emulator (and a wrong read of the transposed tile caught),
nvcc compiles it."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from prism import pipeline
from prism.codegen import emulate as emulate_mod
from prism.codegen.fold import fold_transposes, read_in_place
from prism.codegen.generate import generate
from prism.codegen.nvcc import compile_check, nvcc_path
from prism.codegen.plan import KernelLaunch
from prism.codegen.resources import resources
from prism.graph import Graph, OpKind, Tensor
from prism.ir import Accum, CustomKernel, KernelGraph, Load, MatmulOp, ReduceOp, Save, UnaryOp, op_args
from prism.ops import Reduce, Unary
from prism.partition import weight_transposes
from prism.transposes import sink_transposes
from prism.tune.draw import legal_sizes_of
from tests.test_emulate import cheap_sizes, emulate_error


def _l2(g: Graph, x: Tensor) -> Tensor:
    return g.mul(x, g.rsqrt(g.add(g.sum(g.square(x), -1), 1e-6)))


def cosine(n: int, m: int, d: int) -> Graph:
    g = Graph()
    a, b = g.input((n, d), name="A"), g.input((m, d), name="B")
    g.output(g.matmul(_l2(g, a), g.transpose(_l2(g, b))), "O")
    return g


def sq_dist(n: int, m: int, d: int) -> Graph:
    g = Graph()
    a, b = g.input((n, d), name="A"), g.input((m, d), name="B")
    norms = g.add(g.sum(g.square(a), -1), g.transpose(g.sum(g.square(b), -1)))
    g.output(g.sub(norms, g.scale(g.matmul(a, g.transpose(b)), 2.0)), "O")
    return g


def _inputs(g: Graph, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {t.name: rng.standard_normal(t.shape) for t in g.inputs}


def _transposed_args(g: Graph) -> list[OpKind]:
    return [g.nodes[n.args[0]].kind for n in g.nodes if n.kind is OpKind.TRANSPOSE]


@pytest.mark.parametrize("build", [cosine, sq_dist])
def test_transposes_move_onto_inputs_and_the_function_stays(build: Callable[[int, int, int], Graph]) -> None:
    g = build(4, 24, 16)
    s = sink_transposes(g)
    assert s is not g
    assert _transposed_args(s) == [OpKind.INPUT]  # one transpose, of B (sq_dist's two became one)
    assert [t.name for t in s.inputs] == [t.name for t in g.inputs]
    assert [(t.name, t.shape) for t in s.outputs] == [(t.name, t.shape) for t in g.outputs]
    ins = _inputs(g)
    np.testing.assert_allclose(s.evaluate(ins)["O"], g.evaluate(ins)["O"], rtol=1e-12, atol=1e-12)
    assert sink_transposes(s) is s  # nothing left to move


def test_a_reduction_over_the_swapped_dims_of_a_batched_tensor() -> None:
    g = Graph()
    q, k = g.input((2, 3, 8), name="Q"), g.input((2, 5, 8), name="K")
    kn = g.mul(k, g.rsqrt(g.add(g.mean(g.square(k), -1), 1e-6)))
    g.output(g.matmul(q, g.transpose(kn)), "O")
    s = sink_transposes(g)
    assert _transposed_args(s) == [OpKind.INPUT]
    reduce = next(n for n in s.nodes if n.kind is OpKind.REDUCE)
    assert reduce.dim == 1 and reduce.shape == (2, 1, 5)
    ins = _inputs(g, 1)
    np.testing.assert_allclose(s.evaluate(ins)["O"], g.evaluate(ins)["O"], rtol=1e-12, atol=1e-12)


def _unmovable() -> list[Graph]:
    out = []
    g = Graph()  # the normalised bank is an output too: it stays, and so does its transpose
    a, b = g.input((4, 16), name="A"), g.input((24, 16), name="B")
    bn = _l2(g, b)
    g.output(g.matmul(a, g.transpose(bn)), "O")
    g.output(bn, "Bn")
    out.append(g)
    g = Graph()  # a matmul under the transpose
    a, b = g.input((4, 16), name="A"), g.input((16, 24), name="B")
    g.output(g.exp(g.transpose(g.matmul(a, b))), "O")
    out.append(g)
    g = Graph()  # a reduction over a batch dim
    x = g.input((3, 4, 5), name="X")
    g.output(g.transpose(g.sum(g.exp(x), 0)), "O")
    out.append(g)
    return out


@pytest.mark.parametrize("case", range(3))
def test_transposes_that_cannot_move_stay(case: int) -> None:
    g = _unmovable()[case]
    assert sink_transposes(g) is g


def test_the_search_sees_the_moved_transpose_as_an_input() -> None:
    s = sink_transposes(cosine(4, 24, 16))
    outer = weight_transposes(s)
    assert outer is not None and outer.inner is not None
    assert OpKind.TRANSPOSE not in {n.kind for n in outer.inner.nodes}
    g = Graph()  # a transpose read as a matmul's A operand is not taken out
    x = g.input((16, 8), name="X")
    g.output(g.matmul(g.transpose(x), g.exp(x)), "O")
    assert weight_transposes(g) is None


def test_what_reads_a_transposed_tile_in_place() -> None:
    ops = (Load("B", (1,), 0, True), UnaryOp(Unary.SQUARE, 0), Accum(1, reduce_dim=0), Save(2, "O", (1,)))
    assert read_in_place(ops, 0)
    assert read_in_place((Load("B", (1,), 0, True), ReduceOp(Reduce.SUM, 0, 0), Save(1, "O", (1,))), 0)
    assert not read_in_place((Load("A", (0,), None, True), Load("B", (1,), None), MatmulOp(0, 1)), 0)  # an A operand
    assert not read_in_place((Load("B", (1,), None, True), Save(0, "O", (1,))), 0)  # a copy out


def _one_kernel_plans(g: Graph) -> list[KernelGraph]:
    out = pipeline.search_and_verify(g, program="cosine", cache=False, progress=False)
    return [kg for kg in out.of(pipeline.PlanSource.SEARCHED)
            if sum(isinstance(k, CustomKernel) for k in kg.kernels) == 1 and kg.symbols]


def test_cosine_similarity_is_one_kernel_reading_the_bank_in_place(monkeypatch: pytest.MonkeyPatch) -> None:
    plans = _one_kernel_plans(cosine(16, 256, 64))
    assert plans
    for template in plans[:3]:
        for sizes in cheap_sizes(template, 2):
            kg = template.instantiate(sizes)
            folded = fold_transposes(kg)
            (k,) = [k for k in folded.kernels if isinstance(k, CustomKernel)]
            assert len(folded.kernels) == 1  # the transpose is folded: one launch
            b = next(i for i, op in enumerate(k.ops) if isinstance(op, Load) and op.tensor == "B")
            load = k.ops[b]
            assert isinstance(load, Load) and load.transposed
            readers = [op for op in k.ops if b in op_args(op)]
            assert any(isinstance(op, MatmulOp) for op in readers)
            assert any(isinstance(op, UnaryOp) for op in readers)  # the bank's norm reads the same tile
            assert emulate_error(kg) < 1e-12
    # the transposed tile read at its logical index, not its stored one: the emulator sees it
    monkeypatch.setattr(emulate_mod, "stored_index", lambda idx: list(idx))
    assert emulate_error(plans[0].instantiate(cheap_sizes(plans[0], 1)[0])) > 1e-3


def test_the_bank_norm_reads_runs_of_stored_rows_by_vector_loads() -> None:
    """The column norm of the transposed tile walks its reduced dim, which the tile stores along its rows,
    in runs read by vector loads (``render_reduce.stored_rows``), not one 2-byte load an element; the
    emulator reads those runs at their swizzled bases and still agrees with float64."""
    vector_reads = 0
    for template in _one_kernel_plans(cosine(16, 256, 64))[:3]:
        for sizes in cheap_sizes(template, 2):
            kg = template.instantiate(sizes)
            source = "".join(st.source for st in generate(kg, arch="sm_80").steps if isinstance(st, KernelLaunch))
            reads = [ln for ln in source.splitlines() if "ld_run(" in ln and "s_B" in ln]
            vector_reads += len(reads)
            assert not [ln for ln in source.splitlines() if "for (int r = r0;" in ln and "s_B[" in ln]
            assert emulate_error(kg) < 1e-12
    assert vector_reads


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc not on the PATH")
def test_the_one_kernel_plans_compile_without_spills() -> None:
    items = []
    for template in _one_kernel_plans(cosine(8, 4096, 1024))[:3]:
        for sizes in legal_sizes_of(template, "sm_80", resources, 200)[:2]:
            plan = generate(template.instantiate(sizes), arch="sm_80")
            items += [(st.entry, st.source) for st in plan.steps if isinstance(st, KernelLaunch)]
    assert items
    for compiled in compile_check(items):
        assert compiled.spills == 0, compiled


def test_random_programs_keep_their_function() -> None:
    """The fuzzer's random programs (transposes of computed values among their ops): each one the rewrite
    changes computes what it computed, output by output, on random float64 inputs."""
    from bench.fuzz import random_attention, random_program

    moved = 0
    for seed in range(100):
        for make in (random_program, random_attention):
            g = make(seed)
            s = sink_transposes(g)
            if s is g:
                continue
            moved += 1
            ins = {k: v * 0.5 for k, v in _inputs(g, seed).items()}
            want, got = g.evaluate(ins), s.evaluate(ins)
            for name in want:
                np.testing.assert_allclose(got[name], want[name], rtol=1e-12, atol=1e-12, equal_nan=True)
    assert moved >= 10  # (the check above ran on enough programs to mean something)
