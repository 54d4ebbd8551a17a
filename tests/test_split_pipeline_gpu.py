"""A softmax over rows longer than a tile as the search's statistics-then-element-wise pipeline (a
128K-entry vocabulary), its statistics kernel split (``prism.loopsplit``): the split saves each row's
partial statistics reduced (one float32 a row and split), and the split and its combine run as one
launch before the element-wise kernel (``prism.codegen.fuse``: the plan's first pair). The plan is
built here by hand, as the search finds it, so the GPU half needs no prover; the CPU half checks its
structure and emulates it."""

from __future__ import annotations

import numpy as np
import pytest

from prism import interpreter
from prism.codegen import generate
from prism.codegen.emulate import emulate
from prism.codegen.resources import resources
from prism.graph import Graph
from prism.ir import Accum, BinaryOp, CustomKernel, KernelGraph, Load, ReduceOp, Save, UnaryOp, infer
from prism.loopsplit import split_loop
from prism.ops import Binary, Reduce, Unary
from prism.reference import relative_error


def _softmax(n: int, d: int) -> Graph:
    g = Graph()
    g.output(g.softmax(g.input((n, d), "float16", "X"), -1), "O")
    return g


def _pipeline(g: Graph) -> KernelGraph:
    """Row max and rescaled sum of exponentials in a loop over the row (one block a row), then
    ``exp(x - max) / sum`` element-wise: one of the plans the search proves for a long-row softmax."""
    stats = CustomKernel("k0", ("k0_x",), "k0_i", (
        Load("X", (0,), 1), ReduceOp(Reduce.MAX, 0, 1), BinaryOp(Binary.SUB, 0, 1), Accum(1, fn=Reduce.MAX),
        UnaryOp(Unary.EXP, 2), Save(3, "t0", (0,)), Accum(4, fn=Reduce.SUM, rescale=1),
        ReduceOp(Reduce.SUM, 6, 1), Save(7, "t1", (0,))))
    normalise = CustomKernel("k1", ("k1_x",), 1, (  # (one-iteration accumulators, as the search writes them)
        Load("X", (1,)), Load("t0", (None,)), Load("t1", (None,)), BinaryOp(Binary.SUB, 0, 1), Accum(2),
        UnaryOp(Unary.EXP, 3), Accum(5, rescale=1), BinaryOp(Binary.DIV, 6, 4), Save(7, "O", (1,))))
    return KernelGraph.of(g, "long_softmax", [stats, normalise])


def _split(n: int, d: int) -> tuple[Graph, KernelGraph]:
    g = _softmax(n, d)
    plan = split_loop(g, _pipeline(g), "long_softmax")
    assert plan is not None
    return g, plan


SIZES = [{"k0_x": 4, "s": 16, "k0_i": 1, "k1_x": 1024}, {"k0_x": 2, "s": 8, "k0_i": 4, "k1_x": 256}]


def test_the_split_saves_reduced_partials_and_emulates_like_the_program() -> None:
    g, plan = _split(4, 8192)
    x = np.random.default_rng(3).standard_normal((4, 8192)) * 4
    want = g.evaluate({"X": x})["O"]
    for sizes in SIZES:
        concrete = plan.instantiate(sizes)
        split = concrete.kernels[0]
        assert isinstance(split, CustomKernel)
        shapes, _ = infer(concrete)
        assert all(shapes[sv.tensor] == (4, sizes["s"]) for sv in split.saves)
        assert relative_error(interpreter.run(concrete, {"X": x})["O"], want) < 1e-9
        assert relative_error(emulate(concrete, {"X": x})["O"], want) < 1e-9
        steps = generate(concrete, arch="sm_90").steps
        assert [s.name for s in steps] == ["k0_split+k0_combine", "k1"]  # the first pair is one launch


@pytest.mark.parametrize("sizes", SIZES)
def test_resources_report_the_lowering_that_is_launched(sizes: dict[str, int]) -> None:
    """At 131,072 a row the split kernel takes more warps than its combine; fused, both are lowered
    again at the larger count, and that is what ``resources`` (the tuner's prior) reports."""
    _, plan = _split(4, 131072)
    concrete = plan.instantiate(sizes)
    res = resources(concrete, "sm_90")
    steps = generate(concrete, arch="sm_90").steps
    assert res.launches == len(steps) == 2 and steps[0].block[0] > 128
    assert res.kernels[0].threads == res.kernels[1].threads == steps[0].block[0]


@pytest.mark.gpu
@pytest.mark.parametrize("sizes", SIZES)
def test_a_split_long_row_softmax_runs_on_the_gpu(sizes: dict[str, int]) -> None:
    torch = pytest.importorskip("torch")
    from prism.runtime import compile_plan

    g, plan = _split(4, 131072)
    x = torch.randn((4, 131072), generator=torch.Generator().manual_seed(0), dtype=torch.float64) * 4
    want = g.evaluate({"X": x.numpy()})["O"]
    fn = compile_plan(generate(plan.instantiate(sizes), arch="sm_90"))
    for _ in range(3):  # the counters the fused launch's last blocks reset serve the next call
        got = fn(x.to(torch.float16).cuda())
        torch.cuda.synchronize()
        assert relative_error(got.double().cpu().numpy(), want) < 2e-2


def test_the_tuner_climbs_the_prior_from_its_drawn_sizes() -> None:
    """At 131,072 a row the split pipeline has far more size assignments than the tuner enumerates
    (``FULL_ENUMERATION``): it draws ``SIZES_PER_TEMPLATE`` at random, and the prior's best few were
    not among them. ``prior_ascent`` climbs from the best drawn to a size no one-symbol change
    improves, and the tuner's first sample of the template is that size; a plan built by rule is timed
    at the two best drawn too."""
    from prism.codegen.sizes import candidate_values, is_legal, prior_ascent, size_score
    from prism.tune import draw

    _, plan = _split(4, 131072)
    values = candidate_values(plan)
    assert len(values) ** len(plan.symbols) > draw.FULL_ENUMERATION

    def score(sizes: dict[str, int]) -> float:
        return size_score(resources(plan.instantiate(sizes), "sm_90"), 132)

    drawn = draw._drawn(plan, "sm_90", resources, draw.SIZES_PER_TEMPLATE)
    first = draw.legal_sizes_of(plan, "sm_90", resources, None)[0]
    assert first not in drawn and score(first) > max(score(sz) for sz in drawn)
    top = prior_ascent(plan, {"k0_x": 1, "s": 2, "k0_i": 64, "k1_x": 4}, "sm_90", max_checks=1000)
    assert is_legal(plan.instantiate(top), "sm_90", resources=resources)
    best = score(top)
    for sym in plan.symbols:  # a local optimum: no single symbol's value scores higher
        for v in values:
            near = {**top, sym: v}
            if is_legal(plan.instantiate(near), "sm_90", resources=resources):
                assert score(near) <= best
    start = {"k0_x": 1, "s": 2, "k0_i": 64, "k1_x": 4}
    assert prior_ascent(plan, start, "sm_90", max_checks=0) == start
    # as a plan built by rule: the ascent end and the two best drawn are all timed (the drawn ones hedge
    # the prior's errors)
    timed = [s.size_map for s in draw._fixed_samples([plan], [[]], [], "sm_90", resources, {0})]
    best_drawn = draw._prior_first(plan, [(sz, None) for sz in drawn], "sm_90", resources)[:2]
    assert first in timed and all(sz in timed for sz in best_drawn)
