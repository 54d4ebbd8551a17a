"""Run each kernel-graph JSON file (named CONFIG__N__tT.json) once on the GPU in its own process,
checked against the reference; print one line per failure.

    PRISM_CACHE_DIR=... PYTHONPATH=. python scripts/gpu_scan_files.py DIR [--jobs J]"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(__file__))
from gpu_fault_scan import CHILD

ap = argparse.ArgumentParser()
ap.add_argument("dir")
ap.add_argument("--jobs", type=int, default=14)
args = ap.parse_args()
files = sorted(os.listdir(args.dir))


def run(name: str) -> tuple[str, int, str]:
    cid = name.split("__")[0]
    p = subprocess.run([sys.executable, "-c", CHILD, cid, os.path.join(args.dir, name)], capture_output=True,
                       text=True, timeout=120)
    return name, p.returncode, (p.stdout + p.stderr)[-300:].replace("\n", " | ")


with ThreadPoolExecutor(args.jobs) as pool:
    res = list(pool.map(run, files))
for name, rc, tail in res:
    if rc:
        print("FAIL", name, rc, tail)
print(f"{sum(1 for _, rc, _ in res if rc)} of {len(res)} failed")
