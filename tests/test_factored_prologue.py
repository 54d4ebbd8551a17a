"""A sum before a matmul (``(X + Y) @ W``, ``(X + 1) @ W``, an affine norm's ``X·G + B``) is a
sub-expression the expression pruning keeps (``exprprune.Target._factored``): the normal form
distributes the matmul over the sum, so without the factoring the search proposes only two matmuls
added (which the verifier has no distributivity axiom to prove) and such programs got no searched
plan. Each program below gets proven one-kernel plans with one matmul, computed like the program."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from bench.zoo import zoo_graph
from prism import interpreter, pipeline
from prism.graph import Graph, Tensor
from prism.ir import CustomKernel, KernelGraph, MatmulOp
from prism.ops import Binary
from prism.reference import relative_error
from prism.search import exprprune
from prism.search.dimmatch import program_labels
from tests.test_emulate import cheap_sizes, inputs_of

N, D = 16, 64  # the smallest shapes with legal sizes for a matmul tile
Prologue = Callable[[Graph, Tensor, Tensor], Tensor]
PROLOGUES: dict[str, tuple[Prologue, tuple[int, int]]] = {
    "add": (lambda g, x, y: g.add(x, y), (N, D)),
    "sub": (lambda g, x, y: g.sub(x, y), (N, D)),
    "bias_row": (lambda g, x, y: g.add(x, y), (1, D)),
    "add_scalar": (lambda g, x, y: g.add_scalar(x, 1.0), (N, D)),
    "affine": (lambda g, x, y: g.add(g.mul(x, y), y), (1, D)),
}


def _program(name: str) -> Graph:
    f, yshape = PROLOGUES[name]
    g = Graph()
    x, y, w = g.input((N, D), "float16", "X"), g.input(yshape, "float16", "Y"), g.input((D, D), "float16", "W")
    g.output(g.matmul(f(g, x, y), w), "O")
    return g


def _one_matmul(kg: KernelGraph) -> bool:
    k = kg.kernels[0]
    return len(kg.kernels) == 1 and isinstance(k, CustomKernel) and sum(isinstance(op, MatmulOp) for op in k.ops) == 1


def test_the_sum_before_a_matmul_is_a_sub_expression() -> None:
    g = _program("affine")
    target = exprprune.build_target(g, program_labels(g))
    alg = target.alg
    x, y = alg.var("X"), alg.var("Y")
    assert target.contains(alg.add(alg.mul(x, y), y))  # X·Y + Y, the whole prologue
    assert target.contains(alg.add(x, alg.const(exprprune.F1)))  # X + 1, with Y factored out as well


def test_without_the_factoring_the_sum_is_pruned(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(exprprune.Target, "_factored", lambda self, terms: None)
    g = _program("add")
    target = exprprune.build_target(g, program_labels(g))
    assert not target.contains(target.alg.add(target.alg.var("X"), target.alg.var("Y")))


@pytest.mark.parametrize("name", list(PROLOGUES))
def test_a_prologue_sum_gets_proven_one_matmul_plans(name: str) -> None:
    g = _program(name)
    out = pipeline.search_and_verify(g, program=name, progress=False, cache=False)
    plans = [t for t, s in zip(out.templates, out.sources, strict=True)
             if s is pipeline.PlanSource.SEARCHED and _one_matmul(t)]
    assert plans, f"{name}: no searched one-kernel plan with one matmul"
    ran = 0
    for kg in plans[:4]:
        for sizes in cheap_sizes(kg, 1, None):
            concrete = kg.instantiate(sizes)
            ins = inputs_of(concrete)
            want = g.evaluate(ins)["O"]
            assert relative_error(interpreter.run(concrete, ins)["O"], want) < 1e-9
            ran += 1
    assert ran


@pytest.mark.parametrize("name", ["add_rms_norm", "add_rms_norm_weight"])
def test_a_residual_add_before_a_norm_gets_one_kernel_plans(name: str) -> None:
    # rms_norm(X + R): X + R is the cofactor of the normalised terms X·r + R·r
    g = zoo_graph(name, "small")
    out = pipeline.search_and_verify(g, program=name, progress=False, cache=False)
    plans = [t for t, s in zip(out.templates, out.sources, strict=True)
             if s is pipeline.PlanSource.SEARCHED and len(t.kernels) == 1 and isinstance(t.kernels[0], CustomKernel)]
    assert plans, f"{name}: no searched one-kernel plan"
    concrete = plans[0].instantiate(cheap_sizes(plans[0], 1, None)[0])
    ins = inputs_of(concrete)
    assert relative_error(interpreter.run(concrete, ins)["O"], g.evaluate(ins)["O"]) < 1e-9


def test_a_layer_norm_is_not_flooded_by_its_centred_input() -> None:
    # X - mean(X) holds a reduction: not added as a cofactor (5,226 candidates and 23-31 s on 2 cores
    # with it, 1,242 and 3-4 s without, and no plan more)
    g = zoo_graph("layer_norm", "small")
    labels = program_labels(g)
    target = exprprune.build_target(g, labels)
    exprs = exprprune.graph_exprs(g, labels, target.alg)
    (centred,) = [exprs[i] for i, n in enumerate(g.nodes) if n.fn is Binary.SUB]
    assert exprprune.atoms_of(centred)  # X - Σ X / n: a term holds a Σ
    assert not target.contains(centred)
