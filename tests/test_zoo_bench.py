"""bench.zoo_bench without a GPU: entry selection, speedup bookkeeping and the table."""

from __future__ import annotations

from bench import zoo_bench
from bench.zoo import ZOO


def test_entries_skip_missing_prefill_sizes() -> None:
    entries = zoo_bench._entries(["decode", "prefill"], [])
    assert ("scaled_attention", "prefill") not in entries and ("rms_norm", "prefill") in entries
    assert len({n for n, _ in entries}) == len(ZOO)


def test_speedup_is_over_the_best_timed_baseline_and_the_table_says_so() -> None:
    rows = []
    for prism_us, eager, compile_ in ((2.0, 4.0, 3.0), (6.0, 5.0, None)):
        rec = {"program": "p", "which": "decode", "floor_us": 1.0, "prism_us": prism_us, "eager_us": eager,
               "compile_us": compile_, "errors": {}, "plan_source": "searched", "prism_rel_err": 1e-4}
        zoo_bench._finish(rec)
        rows.append(rec)
    assert rows[0]["best_baseline_us"] == 3.0 and rows[0]["speedup"] == 1.5
    assert rows[1]["best_baseline_us"] == 5.0 and abs(rows[1]["speedup"] - 5 / 6) < 1e-12
    text = zoo_bench.table(rows)
    assert "not slower on 1" in text and "| p | decode |" in text
