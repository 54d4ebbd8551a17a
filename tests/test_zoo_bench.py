"""bench.zoo_bench without a GPU: entry selection, speedup bookkeeping, the table and --from-json."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

import pytest

from bench import report, zoo_bench
from bench.zoo import ZOO


def test_entries_skip_missing_prefill_sizes() -> None:
    entries = zoo_bench._entries(["decode", "prefill"], [])
    assert ("scaled_attention", "prefill") not in entries and ("rms_norm", "prefill") in entries
    assert len({n for n, _ in entries}) == len(ZOO)


def _rec(program: str, which: str, **kw: Any) -> dict[str, Any]:
    return {"program": program, "which": which, "family": "reduction", "floor_us": 1.0, "errors": {},
            "plan_source": "searched", "prism_rel_err": 2e-4, **kw}


def _fake_result() -> dict[str, Any]:
    """Three entries as a saved run holds them: prefill between two decodes, stale derived fields."""
    return {"date": "2026-12-01T10:00:00+00:00", "gpu": "Fake GPU", "torch": "2.x", "samples": 8,
            "ceilings": {"copy_tb_per_s": 4.28, "matmul_tflop_per_s": 766.0},
            "systems": ["prism", "eager", "compile", "max_autotune"], "command": "python -m bench.zoo_bench",
            "rows": [
                _rec("rms_norm", "decode", prism_us=2.0, eager_us=4.0, compile_us=3.0, max_autotune_us=2.5,
                     speedup=99.0, best_baseline_us=0.1),
                _rec("rms_norm", "prefill", prism_us=10.0, eager_us=5.0, floor_us=4.0,
                     errors={"compile": "RuntimeError: boom | bang\nsecond line"}),
                _rec("softmax", "decode", eager_us=6.0, compile_us=1.5, prism_rel_err=0.31,
                     errors={"prism": "relative error 0.31"}),
            ]}


def _cells(text: str, program: str, which: str) -> list[str]:
    """The cells of the table's row for (program, which)."""
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[:2] == [program, which]:
            return cells
    raise AssertionError(f"no row {program} {which} in\n{text}")


def test_speedup_is_over_the_best_timed_baseline() -> None:
    rows = []
    for prism_us, eager, compile_ in ((2.0, 4.0, 3.0), (6.0, 5.0, None)):
        rec = _rec("p", "decode", prism_us=prism_us, eager_us=eager, compile_us=compile_)
        zoo_bench._finish(rec)
        rows.append(rec)
    assert rows[0]["best_baseline_us"] == 3.0 and rows[0]["speedup"] == 1.5
    assert rows[1]["best_baseline_us"] == 5.0 and abs(rows[1]["speedup"] - 5 / 6) < 1e-12


def test_table_rows_speedups_floor_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "zoo.json"
    path.write_text(json.dumps(_fake_result()))
    text = zoo_bench.table(zoo_bench.from_json(path))
    head = _cells(text, "entry", "which")
    assert head[2:] == ["Prism µs", "eager", "compile", "max-autotune", "best baseline", "speedup", "floor µs",
                        "% of floor", "rel err", "note / error"]
    # best baseline is max-autotune's 2.5 (not the stale 0.1 in the file): 2.5 / 2.0 = 1.25x; floor 1.0 / 2.0
    assert _cells(text, "rms_norm", "decode")[2:] == ["2.00", "4.00", "3.00", "2.50", "2.50", "1.25×", "1.00",
                                                      "50.0%", "2.0e-04", "plan searched"]
    prefill = _cells(text, "rms_norm", "prefill")
    assert prefill[2:10] == ["10.00", "5.00", "—", "—", "5.00", "0.50×", "4.00", "40.0%"]
    assert prefill[11] == "compile: RuntimeError: boom / bang second line; plan searched"
    failed = _cells(text, "softmax", "decode")
    assert failed[2:9] == ["—", "6.00", "1.50", "—", "1.50", "—", "1.00"] and failed[10] == "3.1e-01"
    assert failed[11].startswith("prism: relative error 0.31")
    # grouped: both decode rows before the prefill one, run order kept within a group
    keys = [[c.strip() for c in line.split("|")[1:3]] for line in text.splitlines()[2:5]]
    assert keys == [["rms_norm", "decode"], ["softmax", "decode"], ["rms_norm", "prefill"]]
    assert ("Prism timed on 2 of 3; geometric-mean speedup over the best baseline 0.79× "
            "(decode 1.25× on 1, prefill 0.50× on 1); not slower on 1.") in text
    assert "Fake GPU" in text and "766 TFLOP/s" in text


def test_from_json_rerenders_without_torch_or_matplotlib(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str],
                                                         caplog: pytest.LogCaptureFixture) -> None:
    for mod in ("torch", "matplotlib", "matplotlib.pyplot"):
        monkeypatch.setitem(sys.modules, mod, None)  # importing them raises ImportError
    path = tmp_path / "zoo-fake.json"
    saved = json.dumps(_fake_result())
    path.write_text(saved)
    with caplog.at_level(logging.WARNING):
        zoo_bench.main(["--from-json", str(path)])
    md = path.with_suffix(".md").read_text()
    assert md == zoo_bench.table(zoo_bench.from_json(path)) and "| 1.25×" in md
    out = capsys.readouterr().out
    assert md in out and f"table: {path.with_suffix('.md')}" in out and "plot:" not in out
    assert not path.with_suffix(".png").exists() and "matplotlib is not installed" in caplog.text
    assert path.read_text() == saved  # nothing measured, the JSON untouched


def test_plotted_speedups_per_system_and_floor() -> None:
    result = _fake_result()
    for rec in result["rows"]:
        zoo_bench._finish(rec)
    recs = zoo_bench.ordered(result["rows"])
    data = report.speedups(recs, ("eager", "compile", "max_autotune", "prism"))
    assert data["prism"] == [(0, 1.25), (2, 0.5)]  # softmax decode (index 1) has no Prism time
    assert data["compile"] == [(0, 2.5 / 3.0), (1, 1.0)]
    assert data["max_autotune"] == [(0, 1.0)]
    assert data["floor"] == [(0, 2.5), (1, 1.5), (2, 1.25)]


def test_a_run_without_baselines_writes_no_plot_and_does_not_fail(tmp_path: Path,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    result = _fake_result()
    for rec in result["rows"]:
        for system in ("eager", "compile", "max_autotune"):
            rec.pop(f"{system}_us", None)
        zoo_bench._finish(rec)
    with caplog.at_level(logging.WARNING):
        assert zoo_bench.write_plot(result, tmp_path / "zoo.png") is None
    assert "no entry has a baseline time" in caplog.text and not (tmp_path / "zoo.png").exists()


def test_plot_is_written_when_matplotlib_is_there(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    result = _fake_result()
    for rec in result["rows"]:
        zoo_bench._finish(rec)
    png = zoo_bench.write_plot(result, tmp_path / "zoo.png")
    assert png is not None and png.read_bytes()[:4] == b"\x89PNG"
