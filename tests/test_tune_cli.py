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
