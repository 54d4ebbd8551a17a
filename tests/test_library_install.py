"""The kernel library ships as package data: after ``pip install`` (outside the checkout),
``prism.library.load`` finds the manifest and the shipped sources."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

LOAD = """
import sys
from pathlib import Path
from prism import library, runtime
site = Path(sys.argv[1]).resolve()
assert Path(library.__file__).resolve().is_relative_to(site), library.__file__
entries = library.read_manifest()["entries"]
assert entries and all((library.ROOT / r["source"]).is_file() for r in entries.values())
runtime.compile_plan = lambda plan: type("K", (), {})()  # no GPU here: the kernel is not compiled
k = library.load("swiglu", {"n": 16, "d": 4096})
assert k.summary["library"] is True
print("loaded", len(entries))
"""


@pytest.mark.skipif(importlib.util.find_spec("setuptools") is None, reason="needs setuptools (the dev extra)")
def test_installed_package_loads_library_kernels(tmp_path: Path) -> None:
    src, site = tmp_path / "src", tmp_path / "site"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    shutil.copytree(REPO / "prism", src / "prism", ignore=shutil.ignore_patterns("__pycache__"))
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                        "--target", str(site), str(src)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    shipped = {p.relative_to(site / "prism") for p in (site / "prism" / "kernels").rglob("*") if p.is_file()}
    in_tree = {p.relative_to(REPO / "prism") for p in (REPO / "prism" / "kernels").rglob("*") if p.is_file()}
    assert shipped == in_tree
    r = subprocess.run([sys.executable, "-c", LOAD, str(site)], capture_output=True, text=True, timeout=300,
                       cwd=tmp_path, env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.startswith("loaded")
