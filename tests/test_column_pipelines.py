"""Column statistics over many rows: every searched plan of ``X * rsqrt(mean(X², dim 0))`` walks whole
columns with one block (2048 rows × a 16-byte run of columns), so the pipeline search runs for it too,
with the element-wise kernel after the statistics free of a for-loop (``SearchConfig.last_loop_one``),
and ``loopsplit`` splits the statistics over the rows (docs/off-the-suite.md, "Column statistics:
pipelines whose last kernel has no loop")."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from test_partition import run_plan

from prism import pipeline
from prism.codegen.emulate import emulate
from prism.codegen.sizes import generated_sizes
from prism.graph import Graph
from prism.ir import CustomKernel
from prism.reference import relative_error
from prism.search.config import SearchConfig


def _col_rms_scale(n: int, d: int) -> Graph:
    g = Graph()
    x = g.input((n, d), "float16", "X")
    g.output(g.mul(x, g.rsqrt(g.add_scalar(g.mean(g.square(x), 0), 1e-6))), "O")
    return g


def test_column_statistics_over_many_rows_get_split_pipelines_that_compute_them() -> None:
    g = _col_rms_scale(2048, 64)
    out = pipeline.search_and_verify(g, program="col_rms_scale", progress=False)
    assert out.stats.get("pipelines", 0) > 0
    pipes = [t for t in out.of(pipeline.PlanSource.SEARCHED) if len(t.kernels) == 2]
    last_free = [t for t in pipes if isinstance(k := t.kernels[-1], CustomKernel) and k.loop == 1]
    assert last_free, "no pipeline whose element-wise kernel has no loop"
    splits = [t for t in out.of(pipeline.PlanSource.CONSTRUCTED) if len(t.kernels) == 3]
    assert splits, "the statistics kernel was not split over the rows"
    for t in [*last_free[:3], *splits]:
        assert run_plan(g, t) < 1e-9
    x = np.random.default_rng(3).standard_normal((2048, 64))
    sizes, _ = next(generated_sizes(splits[0]))
    got = emulate(splits[0].instantiate(sizes), {"X": x})["O"]
    assert relative_error(got, g.evaluate({"X": x})["O"]) < 1e-9


def test_the_same_statistics_over_few_rows_are_not_searched_again() -> None:
    out = pipeline.search_and_verify(_col_rms_scale(16, 64), program="col_rms_scale", progress=False)
    assert "pipelines" not in out.stats


def test_a_column_statistic_walks_whole_columns_and_a_row_norm_one_row() -> None:
    col = pipeline.search_and_verify(_col_rms_scale(16, 64), program="col_rms_scale", progress=False, cache=False)
    walks = {w for t in col.of(pipeline.PlanSource.SEARCHED) for w in pipeline._walks(t, {"X": (2048, 64)})}
    # all rows of an 8-column (16-byte) run, in every searched plan: across rows, so long from 16 KB
    assert walks == {pipeline.Walk(2048 * 8 * 2, contiguous=False)}
    assert all(w.long for w in walks)
    g = Graph()
    g.output(g.rms_norm(g.input((16, 4096), "float16", "X")), "O")
    row = pipeline.search_and_verify(g, program="rms_norm", progress=False, cache=False)
    searched = row.of(pipeline.PlanSource.SEARCHED)
    assert min(w.bytes for t in searched for w in pipeline._walks(t, {"X": (16, 4096)})) == 4096 * 2
    # a row is one run of memory: a 32,000-entry row (64 KB) is not a long walk, a 50,257-entry one is
    whole_rows = [t for t in searched if all(w.contiguous for w in pipeline._walks(t, {"X": (8, 32000)}))]
    assert whole_rows
    for t in whole_rows:
        assert not any(w.long for w in pipeline._walks(t, {"X": (8, 32000)}))
        assert any(w.long for w in pipeline._walks(t, {"X": (3, 50257)}))


def test_fields_at_their_defaults_leave_the_cache_key_alone() -> None:
    g = _col_rms_scale(16, 64)
    assert pipeline.cache_key(g, SearchConfig()) == g.structure_key()
    base = pipeline.default_config(g)
    assert pipeline.cache_key(g, replace(base, last_loop_one=False)) == pipeline.cache_key(g, base)
    assert pipeline.cache_key(g, replace(base, last_loop_one=True)) != pipeline.cache_key(g, base)
