"""Epilogue plans (``prism.epilogue``): a matmul part's one-kernel plan with the element-wise part
after it in the same kernel, each input of that part carried past the loop by a max accumulator.
They are proven (axiom ``rmax-of-repl``), computed like the program by the interpreter and by the
emulated lowering, and the same plan with a sum accumulator is not proven."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bench.zoo import zoo_graph
from prism import interpreter, pipeline
from prism.codegen.emulate import emulate
from prism.epilogue import epilogue_plans, fuse
from prism.graph import Graph, OpKind
from prism.ir import Accum, CustomKernel, KernelGraph, Load, Save
from prism.ops import Reduce
from prism.partition import partition
from prism.reference import relative_error
from prism.verify import verify_all
from tests.test_emulate import cheap_sizes, inputs_of


def _epilogues(name: str) -> tuple[Graph, list[KernelGraph]]:
    g = zoo_graph(name, "decode")
    out = pipeline.search_and_verify(g, program=name, progress=False, cache=False)
    plans = [t for t, s in zip(out.templates, out.sources, strict=True)
             if s is pipeline.PlanSource.CONSTRUCTED and len(t.kernels) == 1 and isinstance(t.kernels[0], CustomKernel)
             and t.kernels[0].loop != 1]
    return g, plans


def _carried(kg: KernelGraph) -> list[tuple[Load, Accum]]:
    """(Load, its accumulator) of each loop-invariant input the kernel carries past its loop."""
    k = kg.kernels[0]
    if len(kg.kernels) != 1 or not isinstance(k, CustomKernel):
        return []
    return [(op, nxt) for op, nxt in zip(k.ops, k.ops[1:], strict=False)
            if isinstance(op, Load) and op.fmap is None and isinstance(nxt, Accum)]


@pytest.mark.parametrize("name", ["matmul_residual", "matmul_bias_gelu"])
def test_a_matmul_and_its_epilogue_run_as_one_proven_kernel(name: str) -> None:
    g, plans = _epilogues(name)
    assert plans, f"{name}: no epilogue plan"
    ran = 0
    for kg in plans:
        carried = _carried(kg)
        assert carried and all(acc.fn is Reduce.MAX for _, acc in carried)
        assert verify_all(g, [kg])[0].proven
        for sizes in cheap_sizes(kg, 1, None):  # none for a plan whose tile cannot fit at these shapes
            ran += 1
            _check(g, kg.instantiate(sizes))
    assert ran


def _check(g: Graph, concrete: KernelGraph) -> None:
    """The interpreter and the emulated lowering of ``concrete`` against the program."""
    ins = inputs_of(concrete)
    want = g.evaluate(ins)[g.outputs[0].name]
    assert relative_error(interpreter.run(concrete, ins)[g.outputs[0].name], want) < 1e-9
    assert relative_error(emulate(concrete, ins)[g.outputs[0].name], want) < 1e-9


def test_the_bias_is_replicated_over_the_rows() -> None:
    g = zoo_graph("matmul_bias_gelu", "decode")
    out = pipeline.search_and_verify(g, program="matmul_bias_gelu", progress=False, cache=False)
    plans = [t for t, s in zip(out.templates, out.sources, strict=True) if s is pipeline.PlanSource.CONSTRUCTED
             and any(load.tensor == "B" for load, _ in _carried(t))]
    assert plans
    split = 0
    for kg in plans:
        (bias, _), = [(ld, a) for ld, a in _carried(kg) if ld.tensor == "B"]
        k = kg.kernels[0]
        assert isinstance(k, CustomKernel) and isinstance(save := k.ops[-1], Save)
        assert bias.imap == tuple(d if d == 1 else None for d in save.omap)  # the output's column split, no row split
        split += 1 in bias.imap
    assert split


def test_a_sum_accumulator_of_the_residual_is_not_proven() -> None:
    """R summed over the loop is R times the loop count: the prover must not accept it."""
    g, plans = _epilogues("matmul_residual")
    k = plans[0].kernels[0]
    assert isinstance(k, CustomKernel)
    ops = tuple(replace(op, fn=Reduce.SUM) if isinstance(op, Accum) and op.fn is Reduce.MAX else op for op in k.ops)
    summed = KernelGraph.of(g, "matmul_residual", [replace(k, ops=ops)])
    assert not verify_all(g, [summed])[0].proven


def test_only_an_elementwise_tail_is_fused() -> None:
    """A tail that reduces (a norm after the matmul) gets no epilogue plan."""
    g = Graph()
    x, w = g.input((8, 64), name="X"), g.input((64, 64), name="W")
    y = g.matmul(x, w)
    g.output(g.sum(g.mul(y, y), dim=1), name="O")
    tail = Graph()
    v = tail.input((8, 64), name="v")
    tail.output(tail.sum(tail.mul(v, v), dim=1), name="O")
    assert epilogue_plans(g, [], tail, "p", lambda *_: True) == []
    assert fuse(g, KernelGraph.of(g, "p", []), tail, "p") is None


def test_the_tuner_times_the_epilogue_plans_that_fit_and_skips_the_rest() -> None:
    """Every epilogue plan is timed as a plan built by rule (``always``) where it has a legal size at
    the program's shapes; one that has none (it splits only the rows of a decode-size GEMV) is
    skipped, not an error. Interpreter backend, times from the work per block."""
    from prism.codegen.resources import resources
    from prism.tune import tune
    from prism.tune.backends import InterpreterBackend

    g, plans = _epilogues("matmul_residual")
    sized = [i for i, kg in enumerate(plans) if cheap_sizes(kg, 1, None)]
    assert sized and len(sized) < len(plans)  # both kinds are here
    res = tune(g, plans, samples=1, seed=0, jobs=1, refine=0, always=range(len(plans)),
               backend=InterpreterBackend(lambda kg: float(kg.kernels[0].grid[0]), resources=resources))
    assert res.template_index in sized and res.rel_err < 1e-2
    assert {r.template for r in res.records} == set(sized)


def test_a_norm_projection_and_activation_keeps_its_epilogue_plans() -> None:
    """norm_matmul_silu: the activation takes the projection into its part (partition epilogues), which
    leaves the norm a part of its own; the whole program's epilogue plans are built from the
    prologue-only partition (the norm with the projection, then the activation), proven, and compute it."""
    g = zoo_graph("norm_matmul_silu", "decode")
    assert not any(n.kind is OpKind.MATMUL for n in partition(g)[0].graph.nodes)
    assert any(n.kind is OpKind.MATMUL for n in partition(g, epilogues=False)[0].graph.nodes)
    g, plans = _epilogues("norm_matmul_silu")
    assert plans, "no epilogue plan"
    assert all(verify_all(g, [kg])[0].proven for kg in plans)
    sized = [(kg, sizes) for kg in plans for sizes in cheap_sizes(kg, 1, None)]
    assert sized
    for kg, sizes in sized[:2]:  # (emulating each takes seconds; the tests above emulate the rest of the kind)
        _check(g, kg.instantiate(sizes))
