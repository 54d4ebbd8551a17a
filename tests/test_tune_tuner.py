"""The whole tuner on the CPU: μGraph interpreter as the 'GPU' and a fake timer."""

from __future__ import annotations

import logging
import math
from typing import Any

import pytest

from prism import plans, workloads
from prism.errors import CompileError, TuningError
from prism.ir import CustomKernel, KernelGraph
from prism.tune import InterpreterBackend, draw, tune
from prism.tune.tuner import Stage, default_scales, input_scales

GRAPH = workloads.rmsnorm_linear(n=8, d=32)
GOOD_1D = plans.rmsnorm_linear_plan(GRAPH)
GOOD_2D = plans.rmsnorm_linear_2d_plan(GRAPH)
WRONG = plans.rmsnorm_linear_2d_plan(GRAPH, omap=(1, 0))  # wrong whenever x = y > 1
TEMPLATES = [GOOD_1D, GOOD_2D, WRONG]


def _kernel(kg: KernelGraph) -> CustomKernel:
    k = kg.kernels[0]
    assert isinstance(k, CustomKernel)
    return k


def fake_time(kg: KernelGraph) -> float:
    """More blocks and a shorter loop are faster; the wrong plan looks 100× faster than it is."""
    k = _kernel(kg)
    t = 1000.0 / math.prod(int(g) for g in k.grid) + 10.0 * int(k.loop)
    return t * (0.01 if k.saves[0].omap == (1, 0) else 1.0)


def backend() -> InterpreterBackend:
    return InterpreterBackend(fake_time)


def test_winner_is_the_fastest_that_passes_the_check(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="prism.tune.tuner"):
        res = tune(GRAPH, TEMPLATES, samples=10_000, seed=0, backend=backend(), jobs=2)
    assert res.legal == (36, 144, 24)
    assert res.counts["sampled"] == 204 and res.counts["timed"] == 204
    # Every wrong-plan sample with x = y > 1 is faster than any good one, fails the check, and is reported.
    fails = res.check_failures
    assert len(fails) == 18
    assert all(f.template == 2 and f.sizes["x"] == f.sizes["y"] > 1 and f.stage is Stage.CHECK for f in fails)
    assert all(math.isinf(f.time_us) for f in fails)
    assert "BUG" in caplog.text
    # The winner is the fastest remaining sample (the wrong plan at x = y = 1 is a correct kernel).
    remaining = [r for r in res.records if r.stage is None]
    assert res.time_us == min(r.time_us for r in remaining)
    assert res.template_index == 2 and res.sizes == {"x": 1, "y": 1, "i": 1}
    assert res.rel_err < 1e-9
    assert res.kernel is not None and res.kernel.kernels[0].grid == (1, 1)
    assert res.summary["best_us"] == res.time_us and res.summary["check_failures"] == 18


def test_failures_are_infinitely_slow_not_crashes(caplog: pytest.LogCaptureFixture) -> None:
    class Flaky(InterpreterBackend):
        def compile(self, kg: KernelGraph) -> Any:
            if int(_kernel(kg).loop) == 4:
                raise CompileError("nvrtc: error: pretend")
            return super().compile(kg)

        def time_us(self, kernel: Any) -> float:
            if int(_kernel(kernel).loop) == 8:
                raise RuntimeError("CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES")
            return super().time_us(kernel)

    with caplog.at_level(logging.WARNING, logger="prism.tune.tuner"):
        res = tune(GRAPH, [GOOD_1D, GOOD_2D], samples=10_000, seed=0, backend=Flaky(fake_time), jobs=2)
    # a rejected source is a code generator bug: said once per template, not left to the debug log
    rejected = [r for r in caplog.records if "rejected its generated source" in r.getMessage()]
    assert len(rejected) == 2 and {r.levelno for r in rejected} == {logging.WARNING}
    by_loop = {}
    for r in res.records:
        by_loop.setdefault(r.sizes["i"], set()).add(r.stage)
    assert by_loop[4] == {Stage.COMPILE} and by_loop[8] == {Stage.LAUNCH}
    assert by_loop[1] == {None}
    failed = [r for r in res.records if r.stage in (Stage.COMPILE, Stage.LAUNCH)]
    assert failed and all(math.isinf(r.time_us) and r.error for r in failed)
    assert "pretend" in next(r.error for r in failed if r.stage is Stage.COMPILE)
    assert res.counts["failed"] == len(failed)
    assert res.sizes["i"] not in (4, 8)
    assert res.time_us == min(r.time_us for r in res.records)


def test_deterministic_under_seed() -> None:
    a = tune(GRAPH, TEMPLATES, samples=12, seed=5, backend=backend(), jobs=2)
    b = tune(GRAPH, TEMPLATES, samples=12, seed=5, backend=backend(), jobs=1)
    c = tune(GRAPH, TEMPLATES, samples=12, seed=6, backend=backend(), jobs=2)
    strip = [(r.template, r.sizes, r.time_us, r.stage) for r in a.records]
    assert strip == [(r.template, r.sizes, r.time_us, r.stage) for r in b.records]
    assert (a.template_index, a.sizes, a.time_us) == (b.template_index, b.sizes, b.time_us)
    assert {(r.template, tuple(r.sizes.items())) for r in c.records} != \
        {(r.template, tuple(r.sizes.items())) for r in a.records}


def test_time_budget_stops_early_but_returns_a_kernel() -> None:
    res = tune(GRAPH, [GOOD_1D, GOOD_2D], samples=50, seed=0, backend=backend(), jobs=1, time_budget=0.0)
    assert res.counts["timed"] >= 1 and res.counts["skipped"] >= 1
    assert res.counts["timed"] + res.counts["skipped"] == 50
    assert res.rel_err < 1e-9


def test_nothing_works_is_a_typed_error() -> None:
    class Broken(InterpreterBackend):
        def compile(self, kg: KernelGraph) -> Any:
            raise CompileError("always")

    with pytest.raises(TuningError, match="always"):
        tune(GRAPH, [GOOD_1D], samples=5, seed=0, backend=Broken(fake_time))
    with pytest.raises(TuningError, match="no templates"):
        tune(GRAPH, [], samples=5, seed=0, backend=backend())


def test_default_scales_follow_the_program_structure_not_a_benchmark() -> None:
    # weights (right operands of a matmul) get N(0, 1/K); V after softmax probabilities stays N(0, 1)
    gqa = workloads.config("gqa_h1024").build()
    assert default_scales(gqa) == pytest.approx({"Kt": 128**-0.5})
    assert default_scales(workloads.rmsnorm_linear(8, 256)) == pytest.approx({"W": 256**-0.5})
    assert input_scales(GRAPH) == default_scales(GRAPH)


def test_refinement_samples_the_fastest_templates_again() -> None:
    plain = tune(GRAPH, TEMPLATES, samples=6, seed=3, backend=backend(), jobs=1, refine=0)
    refined = tune(GRAPH, TEMPLATES, samples=6, seed=3, backend=backend(), jobs=1, refine=20)
    assert plain.counts["sampled"] == 6
    first = refined.records[:6]
    assert [(r.template, r.sizes) for r in first] == [(r.template, r.sizes) for r in plain.records]
    extra = refined.records[6:]
    assert 0 < len(extra) <= 20
    timed = [r for r in first if r.time_us is not None and math.isfinite(r.time_us)]
    best: dict[int, float] = {}
    for r in timed:
        best[r.template] = min(best.get(r.template, math.inf), r.time_us)  # type: ignore[arg-type]
    top = set(sorted(best, key=lambda t: (best[t], t))[:3])
    assert all(r.template in top for r in extra)
    pairs = [(r.template, tuple(r.sizes.items())) for r in refined.records]
    assert len(pairs) == len(set(pairs))  # nothing is sampled twice
    assert refined.time_us <= plain.time_us


def test_more_templates_than_samples_draws_templates_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """12 templates, 4 samples: the drawn templates get one legal size each, found without
    enumerating them; the refinement enumerates only the fastest templates' sizes."""
    from prism.tune import tuner

    enumerated: list[KernelGraph] = []
    real = draw.legal_sizes_of

    def counting(template: KernelGraph, *a: Any) -> list[dict[str, int]]:
        enumerated.append(template)
        return real(template, *a)

    monkeypatch.setattr(tuner, "legal_sizes_of", counting)  # the refinement's enumeration
    monkeypatch.setattr(draw, "legal_sizes_of", counting)  # the draw's
    many = [GOOD_1D, GOOD_2D] * 6
    a = tune(GRAPH, many, samples=4, seed=2, backend=backend(), jobs=1, refine=0)
    b = tune(GRAPH, many, samples=4, seed=2, backend=backend(), jobs=1, refine=0)
    assert [(r.template, r.sizes) for r in a.records] == [(r.template, r.sizes) for r in b.records]
    assert len(a.records) == 4 and len({r.template for r in a.records}) == 4
    assert not enumerated and sorted(a.legal) == [0] * 8 + [1] * 4
    assert {r.template for r in a.records} == {i for i, n in enumerate(a.legal) if n}
    assert a.rel_err < 1e-9
    c = tune(GRAPH, many, samples=4, seed=2, backend=backend(), jobs=1, refine=8)
    assert 1 <= len(enumerated) <= 3  # the three fastest templates at most
    assert all(c.legal[i] == (36 if i % 2 == 0 else 144) for i in range(12) if c.legal[i] > 1)
    assert [(r.template, r.sizes) for r in c.records[:4]] == [(r.template, r.sizes) for r in a.records]


def test_a_kernel_that_faults_stops_tuning_with_a_clear_error() -> None:
    class Faulting(InterpreterBackend):
        def time_us(self, kernel: Any) -> float:
            if _kernel(kernel).saves[0].omap == (1, 0):
                raise RuntimeError("CUDA error: misaligned address")
            return super().time_us(kernel)

    with pytest.raises(TuningError, match=r"template 2, sizes .* faulted on the GPU .*misaligned address"):
        tune(GRAPH, TEMPLATES, samples=10_000, seed=0, backend=Faulting(fake_time), jobs=1)
    # an ordinary launch failure is only an infinitely slow sample
    class Failing(InterpreterBackend):
        def time_us(self, kernel: Any) -> float:
            if _kernel(kernel).saves[0].omap == (1, 0):
                raise RuntimeError("too many resources requested for launch")
            return super().time_us(kernel)

    res = tune(GRAPH, TEMPLATES, samples=10_000, seed=0, backend=Failing(fake_time), jobs=1)
    assert res.template_index != 2 and any(r.stage is Stage.LAUNCH for r in res.records)


def test_refinement_walks_from_the_fastest_sample_to_a_better_neighbour() -> None:
    """A bowl over the 2-D plan's 144 legal sizes, lowest at one point: three random samples miss it;
    the neighbour walk from the fastest of them reaches it, one step a round (7 steps here)."""
    legal = tune(GRAPH, [GOOD_2D], samples=10_000, seed=0, backend=backend(), jobs=1, refine=0)
    sizes = [r.sizes for r in legal.records]
    target = sorted(sizes, key=lambda s: (s["x"], s["y"], s["i"]))[len(sizes) // 2]

    def bowl(kg: KernelGraph) -> float:
        k = _kernel(kg)
        got = {"x": int(k.grid[0]), "y": int(k.grid[1]), "i": int(k.loop)}
        return 1.0 + sum(abs(math.log2(got[s] / target[s])) for s in got)

    res = tune(GRAPH, [GOOD_2D], samples=3, seed=1, backend=InterpreterBackend(bowl), jobs=1, refine=90)
    assert target not in [r.sizes for r in res.records[:3]]
    walk = [r for r in res.records[3:48] if r.time_us == 1.0]
    assert [r.sizes for r in walk] == [target]  # found by the walk (its first 45 samples), not the draws


def test_more_templates_than_samples_draws_every_structural_class() -> None:
    """20 two-dim-grid templates and one one-dim: 2 samples time one of each class (a uniform draw
    would pick the lone template 1 time in 10)."""
    many = [GOOD_2D] * 20 + [GOOD_1D]
    for seed in range(5):
        res = tune(GRAPH, many, samples=2, seed=seed, backend=backend(), jobs=1, refine=0)
        assert {r.template == 20 for r in res.records} == {True, False}


def test_a_huge_size_space_is_sampled_not_enumerated(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past ``FULL_ENUMERATION`` candidate assignments a template gets ``SIZES_PER_TEMPLATE`` legal
    sizes by random descents: all legal, distinct, the same on every call (seeded by the template)."""
    from prism.codegen.sizes import legal_sizes

    full = legal_sizes(GOOD_2D, arch="sm_90", resources=None)
    monkeypatch.setattr(draw, "FULL_ENUMERATION", 10)
    monkeypatch.setattr(draw, "SIZES_PER_TEMPLATE", 20)
    got = draw.legal_sizes_of(GOOD_2D, "sm_90", None, None)
    assert 0 < len(got) <= 20 < len(full)
    assert all(s in full for s in got) and len({tuple(s.items()) for s in got}) == len(got)
    assert draw.legal_sizes_of(GOOD_2D, "sm_90", None, None) == got


def test_the_first_round_times_the_best_scored_of_a_few_drawn_sizes(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the code generator's resources, a drawn template's one first-round size is the best of
    ``FIRST_ROUND_DRAWS`` random legal sizes by the static prior ``size_score`` (before the climb, turned
    off here); the GEMV's sizes that leave most SMs idle score low, so that is not what judges the template."""
    import random
    import zlib

    from prism.codegen.arch import arch as get_arch
    from prism.codegen.resources import resources
    from prism.codegen.sizes import candidate_values, legal_sizes, sample_legal_sizes, size_score

    g = workloads.rmsnorm_linear(n=1, d=4096)
    template = plans.rmsnorm_linear_2d_plan(g)
    sms = get_arch("sm_90").sms

    def score(sz: dict[str, int]) -> float:
        return size_score(resources(template.instantiate(sz), "sm_90"), sms)

    monkeypatch.setenv("PRISM_FIRST_ROUND_ASCENT", "0")
    (pick,) = draw._one_legal(template, "sm_90", resources, None)
    drawn = sample_legal_sizes(template, arch="sm_90", count=draw.FIRST_ROUND_DRAWS,
                               rng=random.Random(zlib.crc32(template.dumps().encode())),
                               values=candidate_values(template), resources=resources)
    assert len(drawn) == draw.FIRST_ROUND_DRAWS and pick in drawn
    assert score(pick) == max(score(sz) for sz in drawn)
    every = sorted(score(sz) for sz in legal_sizes(template, arch="sm_90", resources=resources))
    assert score(pick) >= every[len(every) // 2]  # in the better half of all legal sizes
    # another resources function (tests' fakes, None): the first drawn size, unscored
    assert draw._one_legal(template, "sm_90", None, None) == sample_legal_sizes(
        template, arch="sm_90", count=draw.FIRST_ROUND_DRAWS, rng=random.Random(zlib.crc32(template.dumps().encode())),
        values=candidate_values(template), resources=None)[:1]


def test_the_first_round_climbs_from_the_drawn_best(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 2,880-wide GEMV's one-kernel plan, whose eight drawn sizes leave it at 36 blocks, is judged at
    the prior's climb from there (the default, and ``PRISM_FIRST_ROUND_ASCENT=1``); with the variable 0,
    at the drawn best."""
    from prism.codegen.resources import resources
    from prism.codegen.sizes import prior_ascent, size_score

    template = plans.hand_plans("rmsnorm_linear", workloads.rmsnorm_linear(8, 2880))[0]

    def score(sz: dict[str, int]) -> float:
        return size_score(resources(template.instantiate(sz), "sm_90"), 132)

    monkeypatch.setenv("PRISM_FIRST_ROUND_ASCENT", "0")
    (drawn,) = draw._one_legal(template, "sm_90", resources, None)
    monkeypatch.delenv("PRISM_FIRST_ROUND_ASCENT")
    (climbed,) = draw._one_legal(template, "sm_90", resources, None)
    monkeypatch.setenv("PRISM_FIRST_ROUND_ASCENT", "1")
    assert draw._one_legal(template, "sm_90", resources, None) == [climbed]
    assert climbed == prior_ascent(template, drawn, "sm_90") != drawn
    assert score(climbed) > score(drawn) + 1  # 36 blocks -> 90 (one of 132 SMs' wave)


def test_no_more_templates_than_samples_times_each_templates_prior_best_first() -> None:
    """Every template's sizes enumerated: ``_legal`` orders them by ``size_score``, best first (equal
    scores in enumeration order), and the first round times that size of up to half the samples' templates
    before drawing the other half uniformly from the remaining pairs (distinct, all legal)."""
    from prism.codegen.arch import arch as get_arch
    from prism.codegen.resources import resources
    from prism.codegen.sizes import legal_sizes, size_score

    g = workloads.rmsnorm_linear(n=1, d=4096)
    templates = [plans.rmsnorm_linear_plan(g), plans.rmsnorm_linear_2d_plan(g)]
    sms = get_arch("sm_90").sms
    space = [draw.legal_sizes_of(t, "sm_90", resources, None) for t in templates]
    for t, got in zip(templates, space, strict=True):
        every = legal_sizes(t, arch="sm_90", resources=resources)
        scores = [size_score(resources(t.instantiate(sz), "sm_90"), sms) for sz in every]
        assert got[0] == every[scores.index(max(scores))]
        assert sorted(map(str, got)) == sorted(map(str, every))
        ranked = [scores[every.index(sz)] for sz in got]
        assert ranked == sorted(ranked, reverse=True) and len(set(ranked)) > 1
    for seed in range(3):
        chosen = draw._first_round(templates, space, 6, seed)
        assert {(s.template, s.sizes) for s in chosen[:2]} == {(0, tuple(space[0][0].items())),
                                                               (1, tuple(space[1][0].items()))}
        assert len({(s.template, s.sizes) for s in chosen}) == 6
        assert all(s.size_map in space[s.template] for s in chosen)
    # one sample: one template's prior best (its class first in the round-robin)
    (only,) = draw._first_round(templates, space, 1, 0)
    assert only.size_map == space[only.template][0]


def test_refinement_walks_from_the_runner_up_structure_class_too() -> None:
    """The 2-D plan is faster at every size but one neighbour of the 1-D plan's first-round size: the
    walk from the fastest sample alone (the 2-D plan's) never reaches it; the walk from the 1-D class's
    fastest sample does, in the walk's rounds (before the uniform draws)."""
    from prism.tune import tuner

    first = tune(GRAPH, [GOOD_1D, GOOD_2D], samples=4, seed=0, backend=backend(), jobs=1, refine=0)
    one_d = next(r for r in first.records if r.template == 0)
    start = tuner.Sample(0, tuple(one_d.sizes.items()))
    near = tuner._neighbours(GOOD_1D, start, lambda sz: tuner.is_legal(GOOD_1D.instantiate(sz), "sm_80"))
    target = near[0].size_map

    def timed(kg: KernelGraph) -> float:
        k = _kernel(kg)
        if len(k.grid) == 2:
            return 5.0 + 0.01 * int(k.loop)
        return 1.0 if {"x": int(k.grid[0]), "i": int(k.loop)} == target else 6.0

    res = tune(GRAPH, [GOOD_1D, GOOD_2D], samples=4, seed=0, backend=InterpreterBackend(timed), jobs=1, refine=8)
    assert [r.sizes for r in res.records[:4]] == [r.sizes for r in first.records[:4]]
    assert res.template_index == 0 and res.sizes == target and res.time_us == 1.0
    walked = [r for r in res.records[4:] if r.template == 0 and r.sizes == target]
    assert walked and walked[0].index < 4 + 8 // 2


def test_a_plan_built_by_rule_is_timed_at_the_priors_best_of_its_legal_sizes() -> None:
    """More templates than samples: a drawn template gets the best of a few random sizes, but a plan in
    ``always`` (built by rule, timed whatever the draw) gets the prior's best of all its legal sizes."""
    from prism.codegen.arch import arch as get_arch
    from prism.codegen.resources import resources
    from prism.codegen.sizes import legal_sizes, size_score

    g = workloads.rmsnorm_linear(n=1, d=4096)
    template = plans.rmsnorm_linear_2d_plan(g)
    templates = [template] * 6
    _space, chosen = draw.draw_samples(g, templates, 2, 0, "sm_90", resources, None, 1, always=(4,))
    pick = next(dict(s.sizes) for s in chosen if s.template == 4)  # (then its fewest iterations)
    sms = get_arch("sm_90").sms
    scores = [size_score(resources(template.instantiate(sz), "sm_90"), sms)
              for sz in legal_sizes(template, arch="sm_90", resources=resources)]
    assert size_score(resources(template.instantiate(pick), "sm_90"), sms) == max(scores)


def test_a_plan_built_by_rule_is_also_timed_at_its_fewest_iterations() -> None:
    """Its loop symbols are those that count iterations only (the split's ``i``; not ``s``, which is a
    grid dim of the split and the combine's loop); besides the prior's ``BUILT_TOP`` best sizes, each
    at the fewest iterations its legal sizes allow (all else the same) is timed too."""
    from prism.codegen.resources import resources
    from prism.codegen.sizes import legal_sizes

    g = workloads.gqa_safe(batch=2, group=8, kv_len=4096, head_dim=128)
    split = plans.safe_gqa_split_plan(g)
    assert draw._loop_symbols(split) == {"i"} and draw._loop_symbols(GOOD_2D) == {"i"}
    _space, chosen = draw.draw_samples(g, [split] * 6, 2, 0, "sm_90", resources, None, 1, always=(4,))
    picks = [dict(s.sizes) for s in chosen if s.template == 4]
    top, fewest = picks[:draw.BUILT_TOP], picks[draw.BUILT_TOP:]
    assert draw.BUILT_TOP == 2 and top == _space[4][:2]
    legal = legal_sizes(split, arch="sm_90", resources=resources)
    wanted = []  # each top size at its fewest iterations, where it is not there already
    for at in top:
        least = min(sz["i"] for sz in legal if all(sz[k] == v for k, v in at.items() if k != "i"))
        if at["i"] > least and {**at, "i": least} not in top + wanted:
            wanted.append({**at, "i": least})
    assert wanted and fewest == wanted


def test_a_plan_built_by_rule_is_timed_at_each_launch_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """The prior charges launches, so a split whose combine fuses at some sizes (one launch) and not at
    others (two) could be timed at fused sizes only; the prior's best size of the launch count its
    ``BUILT_TOP`` best lack is timed too (here with one top size: the d = 4096 norm GEMV's split fuses
    at x = 32, s = 4, not at x = 128, s = 1)."""
    from prism.codegen.resources import resources
    from prism.loopsplit import split_loop

    g = workloads.rmsnorm_linear(n=8, d=4096)
    split = split_loop(g, plans.rmsnorm_linear_plan(g), "rmsnorm_linear")
    assert split is not None
    monkeypatch.setattr(draw, "BUILT_TOP", 1)
    space, chosen = draw.draw_samples(g, [split] * 6, 2, 0, "sm_90", resources, None, 1, always=(4,))
    picks = [dict(s.sizes) for s in chosen if s.template == 4]
    launches = [resources(split.instantiate(sz), "sm_90").launches for sz in space[4]]
    assert launches[0] == 1 and 2 in launches
    assert picks[:2] == [space[4][0], space[4][launches.index(2)]]
    assert len(chosen) == len(set(chosen))
