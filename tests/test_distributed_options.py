"""The distributed build's command-line options, and Dask staying optional (no cluster, no import)."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from prism import distributed, library
from prism.distributed import ClusterOptions
from prism.errors import OptionError


def _args(*argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    library.add_arguments(p)
    return p.parse_args(["build", *argv])


def test_cluster_options_from_the_command_line() -> None:
    assert distributed.options(_args()) is None
    assert distributed.options(_args("--scheduler", "tcp://h:8786")) == ClusterOptions(scheduler="tcp://h:8786")
    assert distributed.options(_args("--local-cluster")) == ClusterOptions(workers=2, gpus=(None,))
    assert distributed.options(_args("--local-cluster", "--workers", "3", "--gpus", "0,1")) == ClusterOptions(
        workers=3, gpus=("0", "1"))
    with pytest.raises(OptionError, match="--gpus 0,1: 2 GPU workers but --workers 1"):
        distributed.options(_args("--local-cluster", "--workers", "1", "--gpus", "0,1"))


@pytest.mark.parametrize("argv", [["--workers", "0"], ["--gpus", "a,b"], ["--scheduler", "x", "--local-cluster"]])
def test_bad_cluster_flags_are_refused(argv: list[str]) -> None:
    with pytest.raises(SystemExit):
        _args(*argv)


NO_DASK = """
import sys
from pathlib import Path
from prism import library, plans

def optimize(graph, entry, arch):
    kg = plans.hand_plans(entry.program, graph)[0].instantiate({"x": 1, "i": 1})
    return library.Built(kg, "// k\\n", {"kernels": []}, 1.0, "FakeGPU")

spec = library.parse_spec('[[entry]]\\nprogram = "rmsnorm_linear"\\nsizes = { n = 1, d = 64 }')
status = library.build(spec, optimize, root=Path(sys.argv[1]), check_nvcc=False, progress=False)
assert status == {"rmsnorm_linear/n1_d64": "built"}, status
print(sorted(m for m in sys.modules if m.split(".")[0] in ("dask", "distributed")))
"""


def test_a_build_without_a_scheduler_never_imports_dask(tmp_path: object) -> None:
    r = subprocess.run([sys.executable, "-c", NO_DASK, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip().splitlines()[-1] == "[]"
