"""The kernel library: spec parsing, manifest, skip-if-unchanged, loader errors, nvcc on prism/kernels/."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from prism import library, plans
from prism.errors import LibraryError
from prism.graph import Graph
from prism.library import Built, Entry, build, parse_spec

GOOD = """
arch = "sm_80"
[[entry]]
config = "swiglu_d1024"
[[entry]]
program = "rmsnorm_linear"
sizes = { n = 1, d = 64 }
"""


def test_parse_spec() -> None:
    spec = parse_spec(GOOD)
    assert spec.arch == "sm_80"
    assert [e.name for e in spec.entries] == ["swiglu/n16_d1024", "rmsnorm_linear/n1_d64"]
    assert spec.entries[0].config == "swiglu_d1024"


def test_committed_spec_parses() -> None:
    spec = library.load_spec(library.ROOT / "spec.toml")
    assert len(spec.entries) >= 10
    assert {e.config for e in spec.entries if e.config} >= {"rmsnorm_linear_d1024", "qknorm_gqa_h2048"}


@pytest.mark.parametrize(
    "text,match",
    [
        ("arch = 80\n[[entry]]\nconfig='swiglu_d1024'", "arch 80"),
        ("[[entry]]\nconfig = 'nope'", "entry 1: unknown config 'nope'"),
        ("[[entry]]\nprogram = 'nope'\nsizes = {n = 1}", "unknown program 'nope'"),
        ("[[entry]]\nprogram = 'swiglu'\nsizes = {n = 1}", r"sizes \['n'\] of swiglu must be exactly \['d', 'n'\]"),
        ("[[entry]]\nprogram = 'swiglu'\nsizes = {n = 0, d = 4}", "positive integers"),
        ("[[entry]]\nconfig = 'swiglu_d1024'\n[[entry]]\nconfig = 'swiglu_d1024'",
         "entry 2: swiglu/n16_d1024 is listed twice"),
        ("[[entry]]\nconfig = 'swiglu_d1024'\ncolour = 'red'", r"unknown keys \['colour'\]"),
        ("[[entry]]\nconfig = 'swiglu_d1024'\ndtype = 'int8'", "dtype 'int8'"),
        ("[[entry]\n", "not valid TOML"),
        ("arch = 'sm_80'", "no \\[\\[entry\\]\\]"),
    ],
)
def test_bad_specs(text: str, match: str) -> None:
    with pytest.raises(LibraryError, match=match):
        parse_spec(text)


def _fake_optimize(calls: list[str]) -> object:
    def optimize(graph: Graph, entry: Entry, arch: str) -> Built:
        calls.append(entry.name)
        if entry.program == "swiglu":
            raise RuntimeError("boom")  # one failing entry must not stop the others
        kg = plans.hand_plans(entry.program, graph)[0].instantiate({"x": 1, "i": 1})
        return Built(kg, f"// {entry.name}\nextern \"C\" __global__ void k() {{}}\n", {"kernels": []}, 1.5, "FakeGPU")

    return optimize


def test_build_manifest_round_trip_and_skip(tmp_path: Path) -> None:
    spec = parse_spec(GOOD)
    calls: list[str] = []
    status = build(spec, _fake_optimize(calls), root=tmp_path, check_nvcc=False, progress=False)  # type: ignore[arg-type]
    assert status["rmsnorm_linear/n1_d64"] == "built"
    assert status["swiglu/n16_d1024"].startswith("failed: boom")
    manifest = library.read_manifest(tmp_path)
    rec = manifest["entries"]["rmsnorm_linear/n1_d64"]
    assert rec["tuned_on"] == "FakeGPU" and rec["code_target"] == "sm_80" and rec["time_us"] == 1.5
    assert (tmp_path / rec["source"]).read_text().startswith("// rmsnorm_linear/n1_d64")
    assert library.KernelGraph.from_json(rec["template"]).is_concrete
    # unchanged: skipped; the failed one is retried
    calls.clear()
    status = build(spec, _fake_optimize(calls), root=tmp_path, check_nvcc=False, progress=False)  # type: ignore[arg-type]
    assert status["rmsnorm_linear/n1_d64"] == "skipped" and calls == ["swiglu/n16_d1024"]
    # an edited source is rebuilt
    (tmp_path / rec["source"]).write_text("// edited\n")
    calls.clear()
    build(spec, _fake_optimize(calls), root=tmp_path, check_nvcc=False, progress=False)  # type: ignore[arg-type]
    assert "rmsnorm_linear/n1_d64" in calls


def test_loader_errors_name_nearest_shapes(tmp_path: Path) -> None:
    spec = parse_spec(GOOD)
    build(spec, _fake_optimize([]), root=tmp_path, check_nvcc=False, progress=False)  # type: ignore[arg-type]
    with pytest.raises(LibraryError, match=r"nearest available: \[\{'d': 64, 'n': 1\}\]"):
        library.load("rmsnorm_linear", {"n": 2, "d": 64}, root=tmp_path)
    with pytest.raises(LibraryError, match="no kernels for program 'gqa'"):
        library.load("gqa", {"batch": 1}, root=tmp_path)
    from prism.workloads import rmsnorm_linear

    with pytest.raises(LibraryError, match="rmsnorm_linear/n1_d64"):
        library.load(rmsnorm_linear(4, 64), root=tmp_path)


def test_loader_imports_without_z3_and_egglog() -> None:
    code = (
        "import sys; sys.modules['z3'] = None; sys.modules['egglog'] = None\n"
        "import prism, prism.library, prism.runtime, prism.codegen\n"
        "assert 'z3' not in [m for m in sys.modules if sys.modules[m] is not None]\n"
        "print('ok')"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr


COMMITTED = sorted(library.ROOT.glob("*/*.cu"))


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
@pytest.mark.skipif(not COMMITTED, reason="no kernels committed under prism/kernels/ yet")
def test_committed_kernels_compile_for_sm80() -> None:
    manifest = library.read_manifest()
    for cu in COMMITTED:
        err = library.nvcc_check(cu.read_text(), "sm_80")
        assert err is None, f"{cu}: {err}"
    listed = {rec["source"] for rec in manifest["entries"].values()}
    assert {cu.relative_to(library.ROOT).as_posix() for cu in COMMITTED} <= listed


def test_regenerate_rerenders_sources_without_tuning(tmp_path: Path) -> None:
    """``library regenerate`` on a copy of the committed library with one source as an older
    generator wrote it (intact: its hash matches the manifest): that source becomes what this
    generator writes for the entry's tuned plan (the check ``load`` makes), its hash follows, the
    tuned plan, sizes and measured time stay; every other entry is current and untouched."""
    import datetime
    import json

    root = tmp_path / "kernels"
    shutil.copytree(library.ROOT, root)
    doc = library.read_manifest(root)
    stale = sorted(doc["entries"])[0]
    rec = doc["entries"][stale]
    old = (root / rec["source"]).read_text() + "// as an older generator wrote it\n"
    (root / rec["source"]).write_text(old)
    rec["source_sha256"] = library.sha256(old)
    (root / "manifest.json").write_text(json.dumps(doc))
    before = library.read_manifest(root)["entries"]
    status = library.regenerate(root)
    assert status == {name: "regenerated" if name == stale else "current" for name in before}
    after = library.read_manifest(root)["entries"]
    for name, rec in after.items():
        kg, shipped = library._checked(rec, root)  # hashes and paths check out
        plan = library.codegen.generate(kg, arch=rec["arch"])
        assert library.sha256(library.library_source(plan)) == library.sha256(shipped.read_text()), name
        for key in ("template", "template_sha256", "sizes", "time_us", "date", "tuned_on"):
            assert rec[key] == before[name][key], (name, key)
        if name != stale:
            assert rec == before[name]
    assert after[stale]["regenerated"] == datetime.date.today().isoformat()
    assert set(library.regenerate(root).values()) == {"current"}
