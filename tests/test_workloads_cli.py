"""Benchmark programs, structure keys, and the command line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from prism import workloads
from prism.errors import WorkloadError


def test_ten_configs_build_with_benchmark_names() -> None:
    assert len(workloads.CONFIGS) == 10
    for cfg in workloads.CONFIGS.values():
        g = cfg.build()
        names = [t.name for t in g.inputs]
        assert set(names) <= {"X", "W", "Wu", "Wg", "Q", "Kt", "V"}
        assert [t.name for t in g.outputs] == ["O"]
        assert all(t.dtype == "float16" for t in g.inputs)


def test_config_shapes() -> None:
    g = workloads.config("gqa_h2048").build()
    assert [t.shape for t in g.inputs] == [(2, 8, 128), (2, 128, 2048), (2, 2048, 128)]
    assert g.outputs[0].shape == (2, 8, 128)
    g = workloads.config("swiglu_d4096").build()
    assert [t.shape for t in g.inputs] == [(16, 4096), (4096, 4096), (4096, 4096)]


def test_random_inputs_rounded_and_scaled() -> None:
    cfg = workloads.config("rmsnorm_linear_d1024")
    a = cfg.random_inputs(seed=3)
    b = cfg.random_inputs(seed=3)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    np.testing.assert_array_equal(a["W"], a["W"].astype(np.float16).astype(np.float64))
    assert 0.02 < a["W"].std() < 0.04 and 0.9 < a["X"].std() < 1.1


def test_structure_keys() -> None:
    a, b = workloads.rmsnorm_linear(8, 1024), workloads.rmsnorm_linear(16, 4096)
    assert a.structure_key() == b.structure_key()
    assert a.structure_hash() != b.structure_hash()
    assert a.structure_hash() == workloads.rmsnorm_linear(8, 1024).structure_hash()
    keys = {workloads.program(name).structure_key() for name in workloads.PROGRAMS}
    assert len(keys) == len(workloads.PROGRAMS) == 7
    assert workloads.rmsnorm_linear(8, 1024, "bfloat16").structure_key() != a.structure_key()


def test_unknown_names() -> None:
    with pytest.raises(WorkloadError, match="known:"):
        workloads.program("nope")
    with pytest.raises(WorkloadError, match="gqa_h1024"):
        workloads.config("nope")


def _prism(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "prism", *args], capture_output=True, text=True, timeout=120)


def test_cli_help() -> None:
    r = _prism("--help")
    assert r.returncode == 0
    for cmd in ("demo", "search", "emit", "optimize", "library"):
        assert cmd in r.stdout


def test_cli_demo_runs_the_pipeline_without_gpu() -> None:
    """The README's first command: with the search cache seeded (verified hand plans), the demo
    evaluates the programs, loads the verified sGraphs, interprets them, and stops before tuning."""
    from prism import pipeline, plans
    from prism.verify import verify_all

    g = workloads.config("swiglu_d1024").build()
    templates = plans.hand_plans("swiglu", g)
    assert all(v.proven for v in verify_all(g, templates))
    pipeline.save_verified(g, templates, {"candidates": 1})
    r = _prism("demo", "swiglu")
    assert r.returncode == 0, r.stderr
    assert "(from the cache)" in r.stdout
    assert "interpreter vs reference, rel. error" in r.stdout
    assert "no usable GPU here: stopped after verification" in r.stdout or "best kernel" in r.stdout


def test_cli_search_json_from_cache() -> None:
    """`python -m prism search NAME --json` reports the pipeline's fields; a cached run does no search."""
    import json

    from prism import pipeline, plans

    g = workloads.program("gqa")
    templates = plans.hand_plans("gqa", g)
    key = g.structure_key()
    pipeline.save_verified(g, templates, {"candidates": 7, "mappings": 9, "mappings_before_symmetry": 12},
                           {"search": 1.5})
    r = _prism("search", "gqa", "--json", "--whole")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["program"] == "gqa" and out["structure_key"] == key and out["cached"] is True
    # the cached sGraphs plus the all-predefined plan
    assert out["verified"] == len(templates) + 1 and out["verified_by_source"]["searched"] == len(templates)
    assert out["candidates"] == 7 and out["mappings"] == 9
    assert out["seconds"]["search"] == 0.0 and out["searched_seconds"]["search"] == 1.5
    assert {"mapping", "verify", "total"} <= set(out["seconds"])


def test_cli_search_budget_is_superoptimizes_unless_given() -> None:
    """``python -m prism search NAME`` searches with the budget ``superoptimize`` uses (a 600 s default had
    made a budget-bound search, such as the safe-softmax attention's, run about half an hour)."""
    import argparse

    from prism.pipeline import DEFAULT_SEARCH_BUDGET_S
    from prism.search.cli import add_arguments, config_from

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert config_from(parser.parse_args(["gqa_safe"])).time_budget_s == DEFAULT_SEARCH_BUDGET_S
    assert config_from(parser.parse_args(["gqa_safe", "--time-budget", "600"])).time_budget_s == 600.0


def _user_program() -> object:
    """A program of no benchmark, with [batch, tokens, d] rows (``superoptimize`` merges them first)."""
    from prism.graph import Graph

    g = Graph()
    x, y = g.input((2, 4, 32), "float16", "X"), g.input((2, 4, 32), "float16", "Y")
    g.output(g.mul(g.gelu(x), g.scale(y, 0.5)), "O")
    return g


def test_cli_searches_a_program_written_by_to_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``prism search --graph FILE`` searches what ``superoptimize`` searches for that program (its rows
    merged), into the cache ``superoptimize`` then reads: the search that follows loads it."""
    import json

    from prism import pipeline
    from prism.cli import main
    from prism.rows import searched_graph

    g = _user_program()
    path = tmp_path / "gate.json"
    path.write_text(json.dumps(g.to_json()))  # type: ignore[attr-defined]
    assert main(["search", "--graph", str(path), "--name", "my_gate", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    searched = searched_graph(g)  # type: ignore[arg-type]
    assert out["program"] == "my_gate" and out["cached"] is False and out["verified_by_source"]["searched"] > 0
    assert out["structure_key"] == searched.structure_key() != g.structure_key()  # type: ignore[attr-defined]
    again = pipeline.search_and_verify(searched, program="my_gate", progress=False)
    assert again.cached and len(again.templates) == out["verified"]


@pytest.mark.parametrize(("args", "says"), [
    (["gqa", "--graph", "{path}"], "one of them"),
    ([], "one of them"),
    (["--graph", "{path}", "--no-mappings"], "ablations"),
    (["--graph", "{bad}"], "is not JSON"),
    (["--graph", "{missing}"], "No such file"),
])
def test_cli_search_graph_refuses_bad_requests(args: list[str], says: str, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from prism.cli import main

    path, bad = tmp_path / "gate.json", tmp_path / "bad.json"
    path.write_text(json.dumps(_user_program().to_json()))  # type: ignore[attr-defined]
    bad.write_text("{nodes: ")
    filled = [a.format(path=path, bad=bad, missing=tmp_path / "missing.json") for a in args]
    assert main(["search", *filled]) == 1
    err = capsys.readouterr().err
    assert err.startswith("prism search: error: ") and says in err and "Traceback" not in err
