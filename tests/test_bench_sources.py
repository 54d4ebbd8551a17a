"""Every Prism figure of a bench run names its plan source, and only figures from
``prism.superoptimize`` become headlines (speedup, geometric mean, targets): ``--prism
searched-or-hand`` falls back to hand plans for a program missing from the search cache, and that
must show (issue 16)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bench import cli, providers, report
from bench.providers import Budget, PrismKernel, SearchedOrHandProvider
from prism.workloads import Config
from tests.test_bench import FakeMeasurer


class SourcedProvider:
    """A fake provider whose figures come from ``source(cfg)``."""

    def __init__(self, source: Callable[[Config], str | None], name: str = "fake") -> None:
        self.source, self.name = source, name

    def prepare(self, cfg: Config) -> PrismKernel:
        src = self.source(cfg)
        return PrismKernel(lambda: cfg.id, {"prism_source": src} if src else {})


def _run(tmp_path: Path, provider: Any) -> dict[str, Any]:
    rc = cli.main(["--out", str(tmp_path), "--configs", "swiglu_d1024,gqa_h1024", "--no-plot"],
                  measurer=FakeMeasurer(), provider=provider)
    assert rc == 0
    (path,) = tmp_path.glob("*.json")
    result: dict[str, Any] = json.loads(path.read_text())
    return result


def test_hand_plan_figures_are_shown_as_such_and_never_headlines(tmp_path: Path) -> None:
    res = _run(tmp_path, SourcedProvider(lambda cfg: "hand-plans" if cfg.program == "gqa" else "superoptimize"))
    swiglu, gqa = res["configs"]
    assert swiglu["prism_source"] == "superoptimize" and swiglu["speedup"] == pytest.approx(2.5)
    assert gqa["prism_source"] == "hand-plans" and gqa["prism_us"] == 4.0 and gqa["speedup"] is None
    summary = res["summary"]
    assert summary["not_from_superoptimize"] == {"gqa_h1024": "hand-plans"}
    assert "beats_best_baseline_everywhere" not in summary and "geomean_target_met" not in summary
    text = report.table(res)
    assert "Prism plan" in text and "| hand-plans" in text and "| superoptimize" in text
    assert "not from prism.superoptimize" in text and "gqa_h1024 (hand-plans)" in text


def test_a_provider_that_does_not_say_is_named_by_the_run(tmp_path: Path) -> None:
    res = _run(tmp_path, SourcedProvider(lambda cfg: None, name="hand-plans"))
    assert {r["prism_source"] for r in res["configs"]} == {"hand-plans"}
    assert res["summary"]["geomean_speedup"] is None


def test_an_old_record_without_a_source_is_not_a_headline() -> None:
    rec = report.finish_record({"config": "c", "prism_us": 4.0, "compile_us": 10.0, "floor_us": 1.0})
    assert report.plan_source(rec) == "unknown" and rec["speedup"] is None and rec["floor_fraction"] is None
    assert report.summarize([rec])["geomean_speedup"] is None


def test_searched_or_hand_falls_back_visibly(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                             caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("PRISM_CACHE_DIR", str(tmp_path))  # an empty search cache
    monkeypatch.setattr(providers.HandPlanProvider, "prepare",
                        lambda self, cfg: PrismKernel(lambda: None, {"prism_source": self.name}))
    monkeypatch.setattr(providers.SuperoptimizeProvider, "prepare",
                        lambda self, cfg: PrismKernel(lambda: None, {"prism_source": self.name}))
    from prism import workloads

    kernel = SearchedOrHandProvider(Budget()).prepare(workloads.config("swiglu_d1024"))
    assert kernel.info["prism_source"] == "hand-plans"
    assert "never a headline" in caplog.text


def test_a_superoptimize_record_names_the_plan_that_won(monkeypatch: pytest.MonkeyPatch) -> None:
    """The suite's JSON keeps which verified plan the tuner chose, at which sizes, from where, and its
    kernels: what the next look at a figure needs (a fake superoptimize: no GPU)."""
    import types

    import prism.pipeline
    from prism import workloads

    seen: dict[str, Any] = {}

    def fake(graph: Any, *, program: str = "", inductor: bool = True, **kwargs: Any) -> Any:
        seen.update(kwargs, program=program, inductor=inductor)
        kernels = (types.SimpleNamespace(name="k0"), types.SimpleNamespace(name="k1"))
        return types.SimpleNamespace(kernel_graph=types.SimpleNamespace(kernels=kernels), summary={
            "best_us": 3.0, "template": 7, "sizes": {"k0_x": 64}, "plan_source": "searched", "tune_s": 1.0})

    monkeypatch.setattr(prism.pipeline, "superoptimize", fake)
    info = providers.SuperoptimizeProvider(Budget()).prepare(workloads.config("swiglu_d1024")).info
    assert (info["prism_template"], info["prism_sizes"], info["prism_plan_source"]) == (7, {"k0_x": 64}, "searched")
    assert info["prism_kernels"] == ["k0", "k1"] and info["prism_tuner_us"] == 3.0
    assert seen["inductor"] is False  # the suite times Prism's own kernels


def _record(config: str, prism_us: float, best_us: float, floor_us: float) -> dict[str, Any]:
    return report.finish_record({"config": config, "prism_us": prism_us, "compile_us": best_us, "floor_us": floor_us,
                                 "prism_source": "superoptimize"})


@pytest.mark.parametrize(("small_us", "best_us", "geomean_met", "small_met"),
                         [(2.9, 7.5, True, True), (3.1, 8.0, True, False), (2.9, 5.8, False, True)])
def test_the_summary_checks_the_issues_targets(small_us: float, best_us: float, geomean_met: bool,
                                               small_met: bool) -> None:
    """2.5x geometric mean over the best baseline, the two d = 4096 GEMVs at 80% of their floor, the
    other configurations at 3 µs or less."""
    recs = [_record("rmsnorm_linear_d4096", 10.0, 25.0, 8.5), _record("swiglu_d4096", 20.0, 50.0, 15.0),
            _record("gqa_h1024", small_us, best_us, 0.25)]
    summary = report.summarize(recs)
    assert summary["geomean_target_met"] is geomean_met and summary["small_target_met"] is small_met
    assert summary["floor_target_met"] is False  # swiglu_d4096 at 75% of its floor
