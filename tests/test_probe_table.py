"""The hardening probe (scripts/probe_table.py, issue 16) in its quick form: every probe class runs a
few hostile cases, and none may find a defect (a bare exception, a traceback, an accepted bad value,
injected source, a write outside its folder, a known-wrong axiom accepted, a wrong result).

Known defects the probe still reports (``KNOWN_DEFECTS``, docs/hardening.md) are listed but do not
fail the run with ``--allow-known``; any other defect does."""

from __future__ import annotations

from types import ModuleType

import pytest

from tests.scripts_loader import load_script


def _probe() -> ModuleType:
    return load_script("probe_table")


def test_quick_probe_finds_no_defect(capsys: pytest.CaptureFixture[str]) -> None:
    probe = _probe()
    rc = probe.main(["--quick", "--no-nvcc", "--allow-known"])
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| ") and "---" not in line][1:-1]
    assert len(rows) >= 12, out  # every class ran
    for row in rows:
        _, name, tried, handled, left, _ = (c.strip() for c in row.split("|", 5))
        if "nvcc" in name:
            continue  # --no-nvcc: skipped, and the row says so
        assert int(tried) > 0 and int(tried) == int(handled) + int(left), row
    assert rc == 0, out
    defects = [line for line in out.splitlines() if line.startswith("- [")]
    assert all(line.endswith("(known: docs/hardening.md)") for line in defects), defects


def test_the_probe_can_fail() -> None:
    """A probe that cannot fail proves nothing: a bare exception, an accepted bad value and a wrong
    result are each counted as a defect."""
    probe = _probe()
    p = probe.Probe(quick=True, seed=0, nvcc=False)
    p.case("r", "bare", lambda: probe.typed(lambda: {}["k"]))
    p.case("r", "accepted", lambda: probe.typed(lambda: None))
    p.case("r", "unnamed", lambda: probe.typed(lambda: (_ for _ in ()).throw(probe.GraphError("op", "bad")),
                                               names="'zz'"))
    p.case("r", "raises", lambda: 1 / 0)  # type: ignore[arg-type,return-value]
    p.case("r", "ok", lambda: probe.typed(lambda: (_ for _ in ()).throw(probe.GraphError("op", "bad 'zz'")),
                                          names="'zz'"))
    row = p.rows["r"]
    assert (row.tried, row.handled, len(row.defects)) == (5, 1, 4), row.defects
