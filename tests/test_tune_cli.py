"""``python -m prism optimize``: argument handling and the no-GPU stop (the pipeline is faked)."""

from __future__ import annotations

import json
from typing import Any, ClassVar

import pytest

from prism import cli
from prism.errors import DeviceError
from prism.graph import Graph
from prism.tune import cli as tune_cli


class FakeOptimized:
    summary: ClassVar[dict[str, Any]] = {
        "search_s": 12.5, "verify_s": 3.25, "tune_s": 40.0, "verified_sgraphs": 3, "samples": 64,
        "compiled": 60, "failed": 4, "best_us": 4.321, "rel_err": 1.5e-3, "plan_source": "searched",
        "inductor": {"generated_us": 4.321, "inductor_us": 5.5, "rel_err": 2e-4, "why": None},
    }


def fake_pipeline(calls: list[dict[str, Any]], *, gpu: bool = True) -> Any:
    def superoptimize(graph: Graph, *, target: str | None = None, samples: int = 64, seed: int = 0,
                      time_budget: float | None = None, cache: bool = True, program: str = "program") -> Any:
        calls.append({"shapes": [t.shape for t in graph.inputs], "target": target, "samples": samples,
                      "seed": seed, "time_budget": time_budget, "cache": cache, "program": program})
        if not gpu:
            raise DeviceError(f"{program}: search and verification found 3 verified sGraphs, but tuning needs "
                              "an NVIDIA GPU with CuPy")
        return FakeOptimized()

    return superoptimize


def test_optimize_prints_stages_and_best_time(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(tune_cli, "_superoptimize", lambda: fake_pipeline(calls))
    rc = cli.main(["optimize", "swiglu", "--config", "swiglu_d4096", "--samples", "8", "--seed", "3",
                   "--time-budget", "60", "--no-cache", "--target", "sm_80"])
    assert rc == 0
    assert calls == [{"shapes": [(16, 4096), (4096, 4096), (4096, 4096)], "target": "sm_80", "samples": 8,
                      "seed": 3, "time_budget": 60.0, "cache": False, "program": "swiglu"}]
    out = capsys.readouterr().out
    assert "swiglu_d4096" in out and "4.32 µs" in out and "12.5 s" in out and "verified sGraphs" in out
    assert "plan source" in out and "5.50 / 4.32 µs" in out  # torch.compile's time beside the generated plan's


def test_optimize_json_and_default_config(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(tune_cli, "_superoptimize", lambda: fake_pipeline(calls))
    assert cli.main(["optimize", "gqa", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["config"] == "gqa_h1024" and doc["status"] == "optimized"
    assert doc["summary"]["best_us"] == 4.321
    assert calls[0]["cache"] is True and calls[0]["samples"] == 64


def test_no_gpu_stops_after_verification(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(tune_cli, "_superoptimize", lambda: fake_pipeline(calls, gpu=False))
    assert cli.main(["optimize", "rmsnorm_linear", "--config", "rmsnorm_linear_d1024"]) == tune_cli.EXIT_NO_GPU
    out = capsys.readouterr().out
    assert "stopped after verification" in out and "3 verified sGraphs" in out
    assert cli.main(["optimize", "rmsnorm_linear", "--json"]) == tune_cli.EXIT_NO_GPU
    doc = json.loads(capsys.readouterr().out)
    assert doc["status"] == "verified" and "no usable GPU" in doc["message"]


def test_bad_arguments(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(tune_cli, "_superoptimize", lambda: fake_pipeline(calls))
    assert cli.main(["optimize", "gqa", "--config", "swiglu_d1024"]) == 1
    assert "gqa_h1024, gqa_h2048" in capsys.readouterr().err
    assert cli.main(["optimize", "gqa", "--config", "nope"]) == 1
    with pytest.raises(SystemExit):
        cli.main(["optimize", "nope"])
    assert calls == []


def test_pipeline_missing(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(tune_cli, "_superoptimize", lambda: None)
    assert cli.main(["optimize", "gqa"]) == 2
    assert "not available" in capsys.readouterr().err


def test_optimize_a_program_written_by_to_json(monkeypatch: pytest.MonkeyPatch, tmp_path: Any,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """``optimize --graph FILE --name NAME``: the program read back at its own shapes and superoptimized
    under that name; with no GPU the same stop as a benchmark configuration's."""
    g = Graph()
    x, w = g.input((2, 4, 32), "float16", "X"), g.input((32, 64), "float16", "W")
    g.output(g.silu(g.matmul(g.rms_norm(x), w)), "O")
    path = tmp_path / "prog.json"
    path.write_text(json.dumps(g.to_json()))
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(tune_cli, "_superoptimize", lambda: fake_pipeline(calls))
    assert cli.main(["optimize", "--graph", str(path), "--name", "norm_silu", "--samples", "8", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["program"] == "norm_silu" and doc["config"] == "X[2, 4, 32] W[32, 64]" and doc["status"] == "optimized"
    assert calls == [{"shapes": [(2, 4, 32), (32, 64)], "target": None, "samples": 8, "seed": 0,
                      "time_budget": None, "cache": True, "program": "norm_silu"}]
    monkeypatch.setattr(tune_cli, "_superoptimize", lambda: fake_pipeline(calls, gpu=False))
    assert cli.main(["optimize", "--graph", str(path)]) == tune_cli.EXIT_NO_GPU
    assert "stopped after verification" in capsys.readouterr().out


@pytest.mark.parametrize(("argv", "says"), [
    (["optimize"], "one of them"),
    (["optimize", "gqa", "--graph", "{path}"], "one of them"),
    (["optimize", "--graph", "{path}", "--config", "gqa_h1024"], "its own shapes"),
    (["optimize", "--graph", "{bad}"], "is not JSON"),
    (["optimize", "--graph", "{path}x"], "No such file"),
])
def test_optimize_graph_refuses_bad_requests(argv: list[str], says: str, monkeypatch: pytest.MonkeyPatch,
                                             tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    g = Graph()
    g.output(g.exp(g.input((4, 8), "float16", "X")), "O")
    path, bad = tmp_path / "prog.json", tmp_path / "bad.json"
    path.write_text(json.dumps(g.to_json()))
    bad.write_text("[1, 2")
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(tune_cli, "_superoptimize", lambda: fake_pipeline(calls))
    assert cli.main([a.format(path=path, bad=bad) for a in argv]) == 1
    err = capsys.readouterr().err
    assert err.startswith("prism optimize: error: ") and says in err and len(err.strip().splitlines()) == 1
    assert calls == []


def test_a_bad_program_name_is_an_argument_error(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("optimize", "search"):
        with pytest.raises(SystemExit) as info:
            cli.main([command, "--graph", "p.json", "--name", "../up"])
        assert info.value.code == 2
        err = capsys.readouterr().err
        assert "argument --name" in err and len(err.strip().splitlines()) == 1
