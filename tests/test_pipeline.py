"""The pipeline's caches and superoptimize's contract, on the CPU (interpreter backend).

The search cache is seeded here with verified hand plans so that these tests exercise the
pipeline, not the search (tests/test_search*.py cover that)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prism import pipeline, plans, workloads
from prism.errors import DeviceError
from prism.graph import Graph
from prism.ir import CustomKernel, KernelGraph
from prism.tune.backends import InterpreterBackend
from prism.tune.draw import BUILT_TOP
from prism.tune.inputs import input_sampler
from prism.verify import verify_all


def _seed_search_cache(program: str, graph: object) -> list[KernelGraph]:
    templates = plans.hand_plans(program, graph)  # type: ignore[arg-type]
    verdicts = verify_all(graph, templates)  # type: ignore[arg-type]
    assert all(v.proven for v in verdicts)
    pipeline.save_verified(graph, templates, {"candidates": 0})  # type: ignore[arg-type]
    return templates


def _timer(kg: KernelGraph) -> float:
    # a deterministic fake time: fewer blocks × iterations is 'faster'
    return float(sum(abs(hash(str(k))) % 97 + 1 for k in kg.kernels))


def test_search_cache_hit_rebinds_shapes() -> None:
    small = workloads.rmsnorm_linear(4, 32)
    _seed_search_cache("rmsnorm_linear", small)
    other = workloads.rmsnorm_linear(8, 64)  # same structure, other sizes
    out = pipeline.search_and_verify(other, program="rmsnorm_linear")
    assert out.cached and out.seconds["search"] == 0.0
    assert out.templates and all(t.inputs[0].shape == (8, 64) for t in out.templates)
    assert out.to_json()["verified"] == len(out.templates)


def test_corrupt_search_cache_is_not_trusted(monkeypatch: pytest.MonkeyPatch) -> None:
    g = workloads.swiglu(4, 32)
    _seed_search_cache("swiglu", g)
    store = pipeline.search_cache()
    path = store.path(g.structure_key())
    doc = json.loads(path.read_text())
    doc["payload"]["templates"][0]["kernels"][0]["ops"][0]["imap"] = [0]  # tampered, checksum now stale
    path.write_text(json.dumps(doc))
    calls: list[str] = []

    def fake_search(*a: object, **k: object) -> object:
        calls.append("search")
        raise RuntimeError("search was run")

    monkeypatch.setattr("prism.search.search", fake_search)
    with pytest.raises(RuntimeError, match="search was run"):
        pipeline.search_and_verify(g, program="swiglu", partitioned=False)
    assert calls == ["search"] and not path.exists()


def test_cached_plans_are_screened_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """A second load of the same cached plans at the same shapes skips the numeric screen (a region
    repeated in every layer); other shapes are screened again."""
    import prism.verify.screen as screen_mod

    g = workloads.swiglu(4, 32)
    _seed_search_cache("swiglu", g)
    calls: list[int] = []
    real = screen_mod.screen

    def counting(graph: object, plans: object) -> object:
        calls.append(1)
        return real(graph, plans)  # type: ignore[arg-type]

    monkeypatch.setattr(screen_mod, "screen", counting)
    monkeypatch.setattr(pipeline, "_SCREENED", set())
    for _ in range(2):
        assert pipeline.search_and_verify(g, program="swiglu", partitioned=False).cached
    assert len(calls) == 1
    assert pipeline.search_and_verify(workloads.swiglu(8, 32), program="swiglu", partitioned=False).cached
    assert len(calls) == 2


def test_superoptimize_tunes_then_hits_the_tuned_cache() -> None:
    g = workloads.rmsnorm_linear(4, 32)
    templates = _seed_search_cache("rmsnorm_linear", g)
    backend = InterpreterBackend(_timer)
    first = pipeline.superoptimize(g, program="rmsnorm_linear", samples=6, seed=1, backend=backend)
    s = first.summary
    assert s["search_cache_hit"] and not s["tune_cache_hit"]
    # the cached search's plans, the stitched plans of the two parts and the all-predefined plan
    by_source = s["search"]["verified_by_source"]
    assert by_source["searched"] == len(templates) and by_source["predefined"] == 1 and by_source["stitched"] >= 1
    # 6 uniform samples, 6 // 2 more around the fastest templates, the size-free plans always, and the
    # prior's BUILT_TOP best sizes of each plan built by rule (each perhaps at its fewest iterations too)
    built = by_source.get("constructed", 0) * 2 * BUILT_TOP
    assert 6 + 3 <= s["samples"] <= 6 + 3 + 2 + built and s["rel_err"] < 1e-9
    assert first.kernel_graph.is_concrete
    # every timed sample of the whole program's tuning, for calibrating the prior (scripts/zoo_prior.py)
    assert 0 < len(s["timed"]) <= s["samples"] and min(us for _, _, us in s["timed"]) == s["best_us"]
    second = pipeline.superoptimize(g, program="rmsnorm_linear", samples=6, seed=1, backend=backend)
    assert second.summary["tune_cache_hit"] and second.kernel_graph == first.kernel_graph
    assert second.summary["best_us"] == s["best_us"]


def test_tuned_cache_is_keyed_by_shape_and_arch() -> None:
    a, b = workloads.rmsnorm_linear(4, 32), workloads.rmsnorm_linear(8, 32)
    _seed_search_cache("rmsnorm_linear", a)
    pipeline.superoptimize(a, samples=3, backend=InterpreterBackend(_timer))
    rb = pipeline.superoptimize(b, samples=3, backend=InterpreterBackend(_timer))
    assert rb.summary["search_cache_hit"] and not rb.summary["tune_cache_hit"]
    rc = pipeline.superoptimize(a, samples=3, backend=InterpreterBackend(_timer, arch="sm_80"))
    assert not rc.summary["tune_cache_hit"]


def test_programs_that_differ_only_in_names_share_one_tuning() -> None:
    """A gate and an up projection (or one part in every layer) are tuned once: the tuned cache is
    keyed and stored under names by position, and a hit comes back under the asking program's names."""
    from prism.partition import predefined_plan

    def program(x: str, w: str, out: str, n: int = 32) -> Graph:
        g = Graph()
        g.output(g.silu(g.matmul(g.input((4, 64), name=x), g.input((64, n), name=w))), out)
        return g

    backend = InterpreterBackend(_timer)
    results = []
    # the third names its tensors as the cache does, in another order
    for g in (program("x", "w", "y"), program("h", "gate", "out"), program("in1", "in0", "out0")):
        req = pipeline._TuneRequest(g, [predefined_plan(g)], input_sampler(g, None, None), "p")
        results.append(pipeline._tune_cached(req, backend, None, 3, 0, None, True, pipeline.Summary()))
    first, second, third = (r.summary for r in results)
    kg, kg3 = results[1].plan, results[2].plan
    assert not first["tune_cache_hit"] and second["tune_cache_hit"] and second["rel_err"] < 1e-9
    assert {t.name for t in kg.inputs} == {"h", "gate"} and [t.name for t in kg.outputs] == ["out"]
    assert third["tune_cache_hit"] and third["rel_err"] < 1e-9  # checked against its own reference
    assert [(t.name, t.shape) for t in kg3.inputs] == [("in1", (4, 64)), ("in0", (64, 32))]
    # the shapes still key it
    assert pipeline._tuned_key(program("x", "w", "y"), "sm_90")[0] != pipeline._tuned_key(
        program("x", "w", "y", 16), "sm_90")[0]


def test_no_gpu_stops_after_verification(monkeypatch: pytest.MonkeyPatch) -> None:
    g = workloads.swiglu(4, 32)
    _seed_search_cache("swiglu", g)
    import sys

    monkeypatch.setitem(sys.modules, "cupy", None)  # as on a machine without CuPy
    with pytest.raises(DeviceError, match="verified sGraphs; tuning them needs an NVIDIA GPU") as e:
        pipeline.superoptimize(g, program="swiglu")
    assert e.value.summary is not None and e.value.summary["cached"] is True


def test_cache_dir_is_isolated(tmp_path: Path) -> None:
    # the autouse fixture points PRISM_CACHE_DIR at a fresh folder: nothing leaks between tests
    assert not list(pipeline.search_cache().root.glob("*.json"))


def test_example_inputs_set_the_tuning_distribution() -> None:
    import numpy as np

    g = workloads.rmsnorm_linear(4, 32)
    rng = np.random.default_rng(0)
    examples = {"X": rng.normal(3.0, 0.25, (4, 32)), "W": rng.normal(0.0, 2.0, (32, 32))}
    draw = input_sampler(g, examples)
    a, b = draw(1), draw(2)
    assert abs(float(a["X"].mean()) - 3.0) < 0.2 and abs(float(a["W"].std()) - 2.0) < 0.3
    assert not np.array_equal(a["X"], b["X"])  # fresh per seed
    default = input_sampler(g)(1)  # the documented default: W ~ N(0, 1/K)
    assert abs(float(default["W"].std()) - 32**-0.5) < 0.05 and abs(float(default["X"].std()) - 1.0) < 0.2


def test_the_predefined_plan_is_always_timed_and_answers_an_unseen_program() -> None:
    from prism.graph import Graph
    from prism.tune.tuner import tune

    g = Graph()
    x = g.input((4, 16), name="X")
    b = g.input((1, 16), name="B")  # a bias row: size-1 broadcasting
    g.output(g.gelu(g.add(x, b)), name="O")
    out = pipeline.search_and_verify(g, progress=False)
    assert out.to_json()["verified_by_source"]["searched"] >= 1
    res = tune(g, list(out.templates), samples=1, refine=0, backend=InterpreterBackend(_timer))
    predefined = len(out.templates) - 1
    assert any(r.template == predefined and r.time_us is not None for r in res.records)
    fast = pipeline.superoptimize(g, samples=2, backend=InterpreterBackend(_timer))
    assert fast.summary["rel_err"] < 1e-9 and fast.summary["plan_source"] in ("searched", "predefined")


def test_a_searched_program_with_a_matmul_has_its_row_vendor_plan_timed() -> None:
    """The row-vendor plan (Inductor's structure: the norm one row-wise kernel before the vendor GEMM)
    is built for every program with a matmul, not only those too large to search whole, and the tuner
    times it whatever its draw: a floor under the searched plans."""
    from prism.tune.tuner import tune

    g = workloads.rmsnorm_linear(4, 32)
    _seed_search_cache("rmsnorm_linear", g)
    out = pipeline.search_and_verify(g, program="rmsnorm_linear", progress=False)
    built = [i for i, s in enumerate(out.sources) if s is pipeline.PlanSource.CONSTRUCTED
             and not all(isinstance(k, CustomKernel) for k in out.templates[i].kernels)]  # not a split-loop plan
    assert pipeline.primitive_ops(g) <= pipeline.WHOLE_PROGRAM_OPS and len(built) == 1
    plan = out.templates[built[0]]
    assert [isinstance(k, CustomKernel) for k in plan.kernels] == [True, False]  # row kernel, vendor GEMM
    backend = InterpreterBackend(_timer)
    plain = tune(g, list(out.templates), samples=1, refine=0, backend=backend)
    timed = tune(g, list(out.templates), samples=1, refine=0, backend=backend, always=built)
    assert built[0] not in {r.template for r in plain.records}  # one uniform draw misses it
    assert any(r.template == built[0] and r.time_us is not None for r in timed.records)
    extra = [r for r in timed.records if r.template == built[0]]
    assert 1 <= len(extra) <= BUILT_TOP and len(timed.records) == len(plain.records) + len(extra)


def test_a_program_over_the_whole_search_bound_uses_a_whole_search_that_was_run(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Over WHOLE_PROGRAM_OPS the default is parts only, but a whole-program search someone ran
    (``prism search --whole``, a library build) is in the cache and is used."""
    g = workloads.program("qknorm_gqa_safe", batch=2, group=8, kv_len=32, head_dim=16)
    assert pipeline.primitive_ops(g) > pipeline.WHOLE_PROGRAM_OPS
    seeded = _seed_search_cache("qknorm_gqa_safe", g)

    def no_search(*a: object, **k: object) -> object:
        raise AssertionError("the whole program is not searched by default")

    monkeypatch.setattr(pipeline, "_search_whole", no_search)
    out = pipeline.search_and_verify(g, program="qknorm_gqa_safe", progress=False, partitioned=False)
    assert [t.dumps() for t in out.of(pipeline.PlanSource.SEARCHED)] == [t.dumps() for t in seeded]
    assert out.cached


def test_a_float32_program_gets_its_predefined_plan() -> None:
    """Generated (tensor-core) kernels need a half dtype, so a float32 program's searched plans have
    no legal size on a GPU; its plan of predefined kernels must still have one (it had none: every
    float32 program got no plan on the H200, docs/tolerance.md)."""
    from prism.codegen.sizes import legal_sizes
    from prism.graph import Graph
    from prism.partition import predefined_plan

    g = Graph()
    x = g.input((4, 64), "float32", "X")
    w = g.input((64, 32), "float32", "W")
    g.output(g.silu(g.matmul(x, w)), "O")
    outcome = pipeline.search_and_verify(g, progress=False)
    generated = [t for t in outcome.templates if any(isinstance(k, CustomKernel) for k in t.kernels)]
    assert generated
    for arch in ("sm_80", "sm_90"):
        assert legal_sizes(predefined_plan(g), arch=arch, limit=1)
        assert not any(legal_sizes(t, arch=arch, limit=1) for t in generated[:5])


def test_the_tuning_budget_is_shared_by_the_parts_and_the_final_choice() -> None:
    """Each tuning call gets its weight's share of what is left; time one leaves unspent goes to the next."""
    now = [0.0]
    budget = pipeline._Budget(9.0, [1.0, 1.0, 1.0], clock=lambda: now[0])
    assert budget.next() == 3.0
    now[0] = 1.0  # the first call spent 1 s of its 3
    assert budget.next() == 4.0  # (9 - 1) / 2
    now[0] = 10.0  # the second overran: the last call still gets a (zero) budget, and tune times one sample
    assert budget.next() == 0.0
    assert pipeline._Budget(None, [1.0, 1.0]).next() is None
    weighted = pipeline._Budget(10.0, [0.0, 3.0, 1.0], clock=lambda: 0.0)
    assert [weighted.next(), weighted.next(), weighted.next()] == [0.0, 7.5, 10.0]  # 3/4 of 10, then all that is left


def test_the_parts_that_hold_more_data_get_more_tuning_time() -> None:
    """A GEMV part outweighs an element-wise one; a part with one plan (a transpose, here also an
    output, so it stays a part of its own) gets nothing. (The element-wise tail reads a second input,
    so it is no epilogue of the matmul.)"""
    g = Graph()
    x = g.input((4, 256), name="x")
    w = g.input((64, 256), name="w")
    r = g.input((4, 64), name="r")
    wt = g.transpose(w)
    y = g.matmul(g.mul(x, g.rsqrt(g.add(g.mean(g.square(x), -1), 1e-5))), wt)
    g.output(g.add(g.silu(y), r), "o")
    g.output(wt, "wt")
    out = pipeline.search_and_verify(g, progress=False)
    weights = pipeline._tuning_weights(g, out)
    by_part = dict(zip([po.part.index for po in out.parts], weights, strict=False))
    transpose = next(po.part.index for po in out.parts if po.part.heavy)
    gemv = next(po.part.index for po in out.parts if len(po.part.nodes) > 2)
    tail = next(po.part.index for po in out.parts if not po.part.heavy and len(po.part.nodes) <= 2)
    assert by_part[transpose] == 0.0 and by_part[gemv] > by_part[tail] > 0
    assert len(weights) == len(out.parts) + 1


def test_a_part_that_repeats_an_earlier_one_is_not_tuned_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two projections of one normed input (a key and a value projection, each taking the norm as its
    prologue): one part's structure and shapes, one tuning; the repeat gets no budget share (it reads
    the cache) unless the tuned cache is off."""
    g = Graph()
    x = g.input((4, 256), name="x")
    w1, w2 = g.input((256, 64), name="w1"), g.input((256, 64), name="w2")
    h = g.mul(x, g.rsqrt(g.add(g.mean(g.square(x), -1), 1e-5)))
    g.output(g.matmul(h, w1), "k")
    g.output(g.matmul(h, w2), "v")
    out = pipeline.search_and_verify(g, progress=False)
    keys = [pipeline._tuned_key(po.part.graph, "")[0] for po in out.parts]
    first, repeat = (i for i, k in enumerate(keys) if keys.count(k) == 2)
    shared, alone = pipeline._tuning_weights(g, out), pipeline._tuning_weights(g, out, shared=False)
    assert shared[first] == alone[first] == alone[repeat] > 0 and shared[repeat] == 0.0
    tuned: list[str] = []
    real = pipeline.tune

    def spy(graph: Graph, *a, **k):  # type: ignore[no-untyped-def]
        tuned.append(pipeline._tuned_key(graph, "")[0])
        return real(graph, *a, **k)

    monkeypatch.setattr(pipeline, "tune", spy)
    res = pipeline.superoptimize(g, samples=3, backend=InterpreterBackend(_timer), progress=False)
    assert res.summary["rel_err"] < 1e-9
    assert len(tuned) == len(out.parts) and tuned.count(keys[first]) == 1  # the parts less the repeat, and the whole


def test_superoptimize_keeps_every_tuning_call_inside_its_time_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    g = workloads.rmsnorm_linear(4, 32)
    _seed_search_cache("rmsnorm_linear", g)
    calls: list[tuple[float, float | None]] = []
    real = pipeline._tune_cached

    def spy(req, backend, target, samples, seed, time_budget, cache, summary):  # type: ignore[no-untyped-def]
        calls.append((time.perf_counter(), time_budget))
        return real(req, backend, target, samples, seed, time_budget, cache, summary)

    outcome = pipeline.search_and_verify(g, progress=False)
    assert outcome.of(pipeline.PlanSource.STITCHED) and outcome.parts  # parts are tuned: several calls share it
    monkeypatch.setattr(pipeline, "_tune_cached", spy)
    out = pipeline.superoptimize(g, samples=3, time_budget=30.0, backend=InterpreterBackend(_timer), progress=False)
    assert out.summary["rel_err"] < 1e-9
    assert len(calls) == len(outcome.parts) + 1
    start = calls[0][0]  # the budget starts with the tuning (the search has its own)
    for at, share in calls:
        assert share is not None and share >= 0
        # no call may run past the whole tuning's deadline; a call starts some microseconds after its
        # share is computed (the spy's own overhead among them), so the check allows 1 ms for that
        assert at + share <= start + 30.0 + 1e-3


def test_a_part_won_by_predefined_kernels_is_also_stitched_with_its_fastest_generated_plan() -> None:
    """Parts are tuned alone, so a vendor kernel that wins its part by a hair may lose in the whole: a
    tuning whose winner is made of predefined kernels only keeps its fastest timed generated plan
    (stored in the tuned cache beside it), and the parts are stitched both ways."""
    from prism.ir import CustomKernel
    from prism.partition import predefined_plan

    g = workloads.rmsnorm_linear(4, 32)
    templates = [*plans.hand_plans("rmsnorm_linear", g), predefined_plan(g)]

    def vendor_first(kg: KernelGraph) -> float:
        return 1.0 if not any(isinstance(k, CustomKernel) for k in kg.kernels) else 2.0 + _timer(kg) / 1000

    backend = InterpreterBackend(vendor_first)
    req = pipeline._TuneRequest(g, templates, input_sampler(g, None, None), "p")
    tuned = [pipeline._tune_cached(req, backend, None, 6, 0, None, True, pipeline.Summary()) for _ in range(2)]
    assert not tuned[0].summary["tune_cache_hit"] and tuned[1].summary["tune_cache_hit"]
    for t in tuned:
        assert not any(isinstance(k, CustomKernel) for k in t.plan.kernels)
        assert t.generated is not None and any(isinstance(k, CustomKernel) for k in t.generated.kernels)
    assert tuned[1].generated == tuned[0].generated  # (from the cache)
    gen = tuned[0].generated
    assert gen is not None
    generated_won = pipeline._Tuned(None, pipeline.Summary(), gen)  # a part a generated plan won
    assert pipeline._stitchings([tuned[0], generated_won]) == [[tuned[0].plan, gen], [gen, gen]]
    assert pipeline._stitchings([generated_won]) == [[generated_won.plan]]


def test_superoptimize_times_both_stitchings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Through ``superoptimize``: every part won by its predefined kernels, the whole program's tuning
    gets two stitched plans (the parts' winners, and their fastest generated plans) and the faster wins."""
    import re

    from prism.ir import CustomKernel

    g = workloads.rmsnorm_linear(4, 32)
    _seed_search_cache("rmsnorm_linear", g)
    assert pipeline.search_and_verify(g, progress=False).parts
    made: list[list[list[KernelGraph]]] = []
    real = pipeline._stitchings

    def spy(tuned):  # type: ignore[no-untyped-def]
        made.append(real(tuned))
        return made[-1]

    def timer(kg: KernelGraph) -> float:  # predefined kernels win a part; generated parts win the whole
        custom = sum(isinstance(k, CustomKernel) for k in kg.kernels)
        if any(re.match(r"p\d+_", k.name) for k in kg.kernels):  # a stitched plan
            return 10.0 - custom
        return 20.0 if custom else 15.0

    monkeypatch.setattr(pipeline, "_stitchings", spy)
    res = pipeline.superoptimize(g, samples=3, backend=InterpreterBackend(timer), progress=False, cache=False)
    ((winners, generated),) = made
    assert all(not any(isinstance(k, CustomKernel) for k in p.kernels) for p in winners)
    assert all(any(isinstance(k, CustomKernel) for k in p.kernels) for p in generated)
    assert res.summary["plan_source"] == "stitched" and res.summary["rel_err"] < 1e-9
    assert sum(isinstance(k, CustomKernel) for k in res.kernel_graph.kernels) >= len(generated)
