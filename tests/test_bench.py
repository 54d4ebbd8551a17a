"""CPU smoke test of bench/: argument handling and result writing with fake measurements (no torch)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bench import cli, report
from bench.measure import Ceilings, Checked, SystemResult
from bench.programs import roofline
from bench.providers import PrismKernel
from prism import workloads
from prism.tune.timing import Timings
from prism.workloads import Config

# Fake per-system times (µs): Prism is 2.5× faster than compile, which is the best baseline.
FAKE_US = {"eager": 20.0, "compile": 10.0, "max_autotune": 12.0, "sdpa": 15.0, "prism": 4.0}


class FakeMeasurer:
    def __init__(self, fail: dict[tuple[str, str], str] | None = None, untimeable: set[str] | None = None) -> None:
        self.calls: list[tuple[str, str]] = []  # every check, in order
        self.timed: list[tuple[str, list[str]]] = []  # every time() call: the systems timed together
        self.fail = fail or {}
        self.untimeable = untimeable or set()

    def environment(self) -> dict[str, Any]:
        return {"date": "2026-12-01T10:00:00+00:00", "gpu": "Fake GPU 9000", "driver": "1.0", "torch": "0",
                "cuda": "13.0", "cupy": None}

    def ceilings(self) -> Ceilings:
        return Ceilings(4.0e12, 600e12)

    def check(self, cfg: Config, system: str, prism_fn: Callable[..., Any] | None) -> Checked:
        self.calls.append((cfg.id, system))
        if (cfg.id, system) in self.fail:
            return Checked(None, SystemResult(None, 0.5, self.fail[(cfg.id, system)]))
        if system == "prism":
            assert prism_fn is not None
            assert prism_fn() == cfg.id
        if system == "sdpa" and not cfg.program.startswith(("gqa", "qknorm_gqa")):
            return Checked(None, SystemResult(None, None, "not applicable: not attention"))
        return Checked(lambda: system, SystemResult(None, 1e-3))

    def time(self, cfg: Config, fns: dict[str, Callable[..., Any]]) -> Timings[str]:
        self.timed.append((cfg.id, list(fns)))
        assert all(fn() == s for s, fn in fns.items())
        return Timings({s: FAKE_US[s] for s in fns if s not in self.untimeable},
                       {s: "RuntimeError: capture failed" for s in fns if s in self.untimeable})


class FakeProvider:
    name = "fake"

    def prepare(self, cfg: Config) -> PrismKernel:
        return PrismKernel(lambda: cfg.id, {"tune_s": 1.5, "samples": 8, "prism_source": "superoptimize"})


def _run(tmp_path: Path, *argv: str, **kw: Any) -> tuple[int, dict[str, Any], Path]:
    rc = cli.main(["--out", str(tmp_path), *argv], **kw)
    files = sorted(tmp_path.glob("*.json"))
    assert len(files) == 1
    return rc, json.loads(files[0].read_text()), files[0]


def test_full_run_writes_json_and_plot(tmp_path: Path) -> None:
    m = FakeMeasurer()
    rc, res, path = _run(tmp_path, "--programs", "gqa,swiglu", measurer=m, provider=FakeProvider())
    assert rc == 0
    assert path.name == "2026-12-01-fake-gpu-9000.json"
    assert [r["config"] for r in res["configs"]] == ["swiglu_d1024", "swiglu_d4096", "gqa_h1024", "gqa_h2048"]
    assert res["command"].startswith("python -m bench --out")
    assert res["systems"] == ["prism", "eager", "compile", "max_autotune", "sdpa"]
    swiglu = next(r for r in res["configs"] if r["config"] == "swiglu_d1024")
    assert swiglu["sdpa_us"] is None and swiglu["errors"]["sdpa"].startswith("not applicable")
    for key in ("date", "gpu", "driver", "torch", "cuda", "cupy", "ceilings"):
        assert key in res
    for r in res["configs"]:
        for key in ("config", "prism_us", "eager_us", "compile_us", "max_autotune_us", "floor_us", "rel_err"):
            assert key in r
        assert r["best_baseline"] == "compile"
        assert r["speedup"] == pytest.approx(2.5)
        assert r["tune_s"] == 1.5
    assert res["summary"]["geomean_speedup"] == pytest.approx(2.5)
    assert res["summary"]["beats_best_baseline_everywhere"] is True
    # Roofline floor from the fake ceilings: swiglu_d4096 moves 2·(16·4096·2 + 4096²·2)·... bytes.
    cfg = workloads.config("swiglu_d4096")
    roof = roofline(cfg.build())
    assert roof.bytes == 2 * (16 * 4096 + 2 * 4096 * 4096 + 16 * 4096)
    assert roof.flops == 2 * (2 * 16 * 4096 * 4096)
    rec = res["configs"][1]
    assert rec["floor_us"] == pytest.approx(max(roof.bytes / 4e12, roof.flops / 600e12) * 1e6)
    png = path.with_suffix(".png")
    if pytest.importorskip is not None and _has_matplotlib():
        assert png.exists() and png.stat().st_size > 1000
    else:
        assert not png.exists()


def _has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def test_systems_and_config_selection(tmp_path: Path) -> None:
    m = FakeMeasurer()
    rc, res, _ = _run(tmp_path, "--configs", "gqa_h1024,rmsnorm_mlp_n8", "--systems", "eager,max-autotune",
                      "--tag", "baselines", "--no-plot", measurer=m)
    assert rc == 0
    assert m.calls == [("gqa_h1024", "eager"), ("gqa_h1024", "max_autotune"),
                       ("rmsnorm_mlp_n8", "eager"), ("rmsnorm_mlp_n8", "max_autotune")]
    assert res["systems"] == ["eager", "max_autotune"]
    r = res["configs"][0]
    assert r["prism_us"] is None and r["compile_us"] is None and r["rel_err"] is None
    assert r["best_baseline"] == "max_autotune" and r["speedup"] is None
    assert not list(tmp_path.glob("*.png"))


def test_failures_are_recorded_not_fatal(tmp_path: Path) -> None:
    m = FakeMeasurer(fail={("gqa_h1024", "prism"): "relative error 0.5 over 2e-02"})
    rc, res, _ = _run(tmp_path, "--configs", "gqa_h1024,gqa_h2048", "--no-plot", measurer=m, provider=FakeProvider())
    assert rc == 0
    bad, good = res["configs"]
    assert bad["prism_us"] is None and bad["rel_err"] == 0.5 and "prism" in bad["errors"]
    assert good["prism_us"] == 4.0
    assert "beats_best_baseline_everywhere" not in res["summary"]
    # a system that failed its check is not timed; the others of its configuration are timed together
    assert m.timed == [("gqa_h1024", ["eager", "compile", "max_autotune", "sdpa"]),
                       ("gqa_h2048", ["prism", "eager", "compile", "max_autotune", "sdpa"])]


def test_a_system_that_cannot_be_timed_keeps_its_error(tmp_path: Path) -> None:
    m = FakeMeasurer(untimeable={"max_autotune"})
    rc, res, _ = _run(tmp_path, "--configs", "swiglu_d1024", "--no-plot", measurer=m, provider=FakeProvider())
    assert rc == 0
    (r,) = res["configs"]
    assert m.timed == [("swiglu_d1024", ["prism", "eager", "compile", "max_autotune"])]  # sdpa: not applicable
    assert r["max_autotune_us"] is None and r["max_autotune_rel_err"] == 1e-3
    assert r["errors"]["max_autotune"] == "timing: RuntimeError: capture failed"
    assert r["compile_us"] == 10.0 and r["speedup"] == pytest.approx(2.5)


@pytest.mark.parametrize("argv", [["--configs", "nope"], ["--programs", "nope"], ["--systems", "nope"]])
def test_bad_arguments(tmp_path: Path, argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    try:
        rc = cli.main(["--out", str(tmp_path), *argv], measurer=FakeMeasurer())
    except SystemExit as e:  # argparse rejects unknown systems itself
        rc = int(e.code or 0)
    assert rc == 2
    assert not list(tmp_path.glob("*.json"))


def test_from_json_rerenders_and_updates_readme(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, _, path = _run(tmp_path, "--configs", "gqa_h1024", "--no-plot", measurer=FakeMeasurer(), provider=FakeProvider())
    readme = tmp_path / "README.md"
    readme.write_text(f"# bench\n\n{report.TABLE_START}\nOLD-TABLE\n{report.TABLE_END}\n\nmore text\n")
    monkeypatch.setattr(report, "README", readme)
    rc = cli.main(["--from-json", str(path), "--update-readme", "--no-plot"])
    assert rc == 0
    text = readme.read_text()
    assert "OLD-TABLE" not in text and "gqa_h1024" in text and "more text" in text and "2.50×" in text


def test_no_gpu_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("numpy")
    try:
        import torch

        if torch.cuda.is_available():
            pytest.skip("a GPU is present")
    except ImportError:
        pass
    rc = cli.main(["--out", str(tmp_path), "--systems", "eager"])
    assert rc == 2
    err = capsys.readouterr().err
    assert "GPU" in err or "PyTorch" in err


def test_the_mma_sync_ceiling_is_reported_when_measured() -> None:
    from bench.report import mma_note

    assert mma_note({"copy_tb_per_s": 4.2, "matmul_tflop_per_s": 700.0}) == ""
    assert mma_note({"mma_sync_tflop_per_s": None}) == ""
    assert "412 TFLOP/s fp16 mma.sync" in mma_note({"mma_sync_tflop_per_s": 412.3})


def test_latency_floor_probes_fit_one_block() -> None:
    # every calibration kernel's copies cover its bytes exactly and fit one block's shared memory on sm_80
    from bench.latency_floor import PROBES, _smem

    for p in PROBES:
        assert _smem(p) <= 163 * 1024, p.name
        if p.kind == "stream":
            sper = int(p.defines().split("#define SPER ")[1].split()[0])
            assert sper * 16 * p.threads * p.blocks == p.weight_bytes, p.name
        if p.kind in ("cols", "gemv"):
            assert p.n % p.cols == 0 and (p.k * (p.cols // 8)) % p.threads == 0, p.name
