"""Reductions longer than a tile: a softmax over a 128K-long row (an LLM vocabulary) has searched
plans that all hold whole rows in one block (in shared memory, or read in place by one block a row),
so none fits; the pipeline then searches two-kernel pipelines too (statistics in a loop, then the element-wise result) and
returns plans that can be, proven and computing the program. Programs whose plans fit are not
searched again."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from prism import interpreter, pipeline
from prism.codegen.arch import arch as get_arch
from prism.codegen.emulate import emulate
from prism.codegen.sizes import generated_sizes
from prism.graph import Graph
from prism.ir import CustomKernel, infer
from prism.reference import relative_error
from prism.search.verified import holds_whole


def _softmax(n: int, d: int) -> Graph:
    g = Graph()
    g.output(g.softmax(g.input((n, d), "float16", "X"), -1), "O")
    return g


# candidates of the pipeline search the fixture maps: a count, not a time, so the tests below do not depend
# on the machine's speed (the searches' budgets are left far above what they need)
PIPELINE_CANDIDATES = 12000


@pytest.fixture(scope="module")
def vocab(tmp_path_factory: pytest.TempPathFactory) -> tuple[Graph, pipeline.SearchOutcome]:
    """One search for the tests below, in a cache of its own. The pipeline search is budget-bound: it
    stops here at ``PIPELINE_CANDIDATES`` candidates (in the generator's order the proven pipelines come
    from the loaded set that carries the running max beside one sum, candidates 7,962-10,104), not at a
    time budget that a loaded machine spends before reaching them (the project's CI did at 10 s:
    docs/search-speed.md, "The mapping's order")."""
    g = _softmax(2, 131072)
    real = pipeline.default_config
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PRISM_CACHE_DIR", str(tmp_path_factory.mktemp("long-rows-cache")))
        mp.setattr(pipeline, "default_config", lambda graph, budget=None: replace(
            real(graph, budget), max_candidates=PIPELINE_CANDIDATES))
        return g, pipeline.search_and_verify(g, program="vocab_softmax", progress=False, time_budget=300)


def test_a_softmax_longer_than_a_tile_gets_pipeline_plans_that_compute_it(
        vocab: tuple[Graph, pipeline.SearchOutcome]) -> None:
    g, out = vocab
    assert out.stats.get("pipelines", 0) > 0
    searched = out.of(pipeline.PlanSource.SEARCHED)
    fitting = [(t, sz) for t in searched if (sz := next(generated_sizes(t), None)) is not None]
    # one-kernel plans fit only by reading their rows in place (no row-long tile): one block a row
    smem = get_arch("sm_80").smem_max
    assert all(len(t.kernels) == 2 or pipeline._tile_floor(t, {"X": (2, 131072)}) > smem for t, _ in fitting)
    fitting = [(t, sz) for t, sz in fitting if len(t.kernels) == 2]
    assert fitting
    x = np.random.default_rng(7).standard_normal((2, 131072)) * 4
    want = g.evaluate({"X": x})["O"]
    for t, (sizes, _) in fitting[:3]:
        concrete = t.instantiate(sizes)
        assert relative_error(interpreter.run(concrete, {"X": x})["O"], want) < 1e-9
    t, (sizes, _) = fitting[0]
    assert relative_error(emulate(t.instantiate(sizes), {"X": x})["O"], want) < 1e-9


def test_the_pipeline_search_drops_plans_holding_a_long_row_whole_before_its_screen(
        vocab: tuple[Graph, pipeline.SearchOutcome]) -> None:
    """Of the pipeline search's mappings, those whose tile holds the 128K row whole (no grid dim, no loop
    splits it) are dropped before the screen: ``_fits`` refuses every one of them at these shapes
    (on the zoo's vocab_softmax the same 48 pipelines fit with and without; docs/search-speed.md). The
    mapping walk drops them as it builds them (tests/test_walk_long.py): none is left for the check
    after it."""
    g, out = vocab
    assert pipeline._long_dims(g) == ((0, 1),) and pipeline._long_dims(_softmax(4, 1024)) == ()
    assert out.stats["pipelines_long_dims_dropped"] == 0
    long, smem = {"X": frozenset({1})}, get_arch("sm_80").smem_max
    searched = out.of(pipeline.PlanSource.SEARCHED)  # the default search's one-kernel plans too
    assert any(holds_whole(t, long) for t in searched)
    assert all(pipeline._tile_floor(t, {"X": (2, 131072)}) > smem for t in searched if holds_whole(t, long))
    assert not any(holds_whole(t, long) for t in searched if len(t.kernels) == 2)


def test_a_softmax_whose_rows_fit_is_not_searched_again() -> None:
    out = pipeline.search_and_verify(_softmax(4, 1024), program="softmax", progress=False)
    assert "pipelines" not in out.stats
    assert all(next(generated_sizes(t), None) is not None for t in out.of(pipeline.PlanSource.SEARCHED))


def test_the_pipelines_statistics_kernel_is_split_and_the_plan_computes_the_program(
        vocab: tuple[Graph, pipeline.SearchOutcome]) -> None:
    """Each pipeline's statistics kernel runs one block per row over the whole row: its split-loop
    plans (``prism.loopsplit``: split kernel, combine, then the element-wise kernel as it was) are
    built and proven beside it."""
    g, out = vocab
    splits = out.of(pipeline.PlanSource.CONSTRUCTED)
    assert splits
    x = np.random.default_rng(8).standard_normal((2, 131072)) * 4
    want = g.evaluate({"X": x})["O"]
    for t in splits:
        names = [k.name for k in t.kernels]
        assert len(names) == 3 and names[0].endswith("_split") and names[1].endswith("_combine")
        sizes = next(sz for sz, _ in generated_sizes(t) if sz["s"] >= 4)
        assert relative_error(interpreter.run(t.instantiate(sizes), {"X": x})["O"], want) < 1e-9
    sizes = next(sz for sz, _ in generated_sizes(splits[0]) if sz["s"] >= 4)
    assert relative_error(emulate(splits[0].instantiate(sizes), {"X": x})["O"], want) < 1e-9


def test_the_splits_save_each_rows_partial_sums_reduced_not_tile_wide(
        vocab: tuple[Graph, pipeline.SearchOutcome]) -> None:
    """The statistics kernel sums its exponentials tile-wide and reduces them after the loop; its split
    saves them reduced (one float32 a row and split: ``loopsplit._reduced``), so the combine reads
    ``2 x s`` values, not a row-long partial per split (2 MB at [4, 131072], 13 µs of a 4-block combine
    on an H200)."""
    _, out = vocab
    for t in out.of(pipeline.PlanSource.CONSTRUCTED):
        split = t.kernels[0]
        assert isinstance(split, CustomKernel)
        sizes = next(sz for sz, _ in generated_sizes(t) if sz["s"] >= 4)
        shapes, _ = infer(t.instantiate(sizes))
        partials = {sv.tensor for sv in split.saves}
        assert partials and all(shapes[p] == (2, sizes["s"]) for p in partials), {p: shapes[p] for p in partials}


def test_rows_that_fit_are_walked_by_one_block_without_pipelines(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 32,000-entry row (64 KB) held by one block: measured faster than the pipelines at 8 and 256
    rows (docs/off-the-suite.md, "Which long walks get pipelines"), so they are not searched."""
    g = _softmax(8, 32000)
    out = pipeline.search_and_verify(g, program="softmax", progress=False)
    assert "pipelines" not in out.stats
    searched = out.of(pipeline.PlanSource.SEARCHED)
    assert pipeline._some_plan_fits(g, searched)
    monkeypatch.setattr(pipeline, "LONG_ROW_BYTES", pipeline.LONG_WALK_BYTES)  # the rule before: rows too
    assert not pipeline._some_plan_fits(g, searched)


def test_a_row_is_walked_in_its_dtypes_bytes() -> None:
    """A 32,000-entry float32 row is 128 KB: a long walk, where the float16 one (64 KB) is not."""
    from dataclasses import replace

    from prism.ir import TensorSpec

    out = pipeline.search_and_verify(_softmax(8, 32000), program="softmax", progress=False)
    t = next(t for t in out.of(pipeline.PlanSource.SEARCHED)
             if all(w.contiguous for w in pipeline._walks(t, {"X": (8, 32000)})))
    wide = replace(t, inputs=tuple(TensorSpec(s.name, s.shape, "float32") for s in t.inputs))
    assert {w.bytes for w in pipeline._walks(t, {"X": (8, 32000)})} == {64000}
    assert {w.bytes for w in pipeline._walks(wide, {"X": (8, 32000)})} == {128000}
    assert all(w.long for w in pipeline._walks(wide, {"X": (8, 32000)}))


def test_the_pipeline_search_maps_the_least_work_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its space of plain two-kernel pipelines is budget-bound and only the cheapest pairs fit: it maps
    them first (``SearchConfig.least_work_first``), under the cache key the generator's order would have."""
    from prism.errors import SearchError

    seen = []

    def spy(graph, program, cache, progress, config):  # type: ignore[no-untyped-def]
        seen.append(config)
        raise SearchError("stop here")

    monkeypatch.setattr(pipeline, "_search_whole", spy)
    g = _softmax(2, 131072)
    cfg = pipeline.default_config(g, 10.0)
    whole = pipeline.SearchOutcome("vocab", g.structure_key(), (), False, {})
    assert pipeline._with_pipelines(g, "vocab", False, False, cfg, whole) is whole
    (wider,) = seen
    assert wider.least_work_first and not wider.split_only and not cfg.least_work_first
    assert pipeline.cache_key(g, wider) == pipeline.cache_key(g, replace(wider, least_work_first=False))
