"""Is the width-8 fault (docs/codegen.md, "The width-8 fault") about the width? (GPU; issue 17)

    PYTHONPATH=. python3 scripts/width_fault_probe.py --out $OUT [--budget 170]

Builds from docs/width8-fault-kernel-graph.json (searched template 5 of swiglu_d4096 at k0_x=2,
k0_y=512, k0_i=16, k1_x=8: split-K over grid x, then a combine kernel) these variants for sm_90:

* ``w8s7``: the faulting graph itself, its 8-wide output tile allowed (the refusal in
  ``lower._check_matmul`` replaced here by a width % 8 check); the generator picks 7 stages, 4 warps.
* ``w16s7``: the same graph with k0_y=256 (grid (2, 256)): the first kernel's matmuls become
  [16x128] @ [128x16], k still split 4 ways over 4 warps (2 k-steps each), rings still placed in the
  order Wg, Wu, X; ``Options(stages=7, warps=4)`` keeps the 7 stages (the heuristic picks 5 here).
* ``w16s5``: k0_y=256 with the default options (5 stages, 4 warps): the kernel Prism generates today.

Each variant runs in fresh processes (a misaligned-address fault ends the CUDA context), each
process launching the plan repeatedly on fresh random inputs with the output poisoned with NaN,
against the float64 reference (first kernel's partial sums t0, t1 and the output O). ``nvcc``
builds compile the first kernel's source with the nvcc of the machine into a cubin instead of
NVRTC. ``memcheck`` items run one process under compute-sanitizer. Items run in priority order
until the budget (seconds) is spent. Output: $OUT/results.jsonl (one line per launch or failure),
$OUT/summary.txt, $OUT/artifacts.tar.gz (sources, cubins, SASS, sanitizer logs).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from typing import Any

import numpy as np

# PRISM_SRC: a snapshot of the package to import instead of the checkout (e.g. one commit's, under build/)
sys.path.insert(0, os.environ.get("PRISM_SRC") or os.path.join(os.path.dirname(__file__), ".."))

import prism.codegen.lower as lower_mod
from prism.codegen import Options, generate
from prism.codegen.arch import arch as get_arch
from prism.ir import KernelGraph

ROOT = os.path.join(os.path.dirname(__file__), "..")
GRAPH = os.path.join(ROOT, "docs", "width8-fault-kernel-graph.json")
ARCH = "sm_90"


def variant(name: str) -> tuple[KernelGraph, Options]:
    with open(GRAPH) as f:
        obj = json.load(f)
    if name == "w8s7":
        if not hasattr(lower_mod, "MMA_WIDTH"):
            raise SystemExit("PRISM_SRC predates lower.MMA_WIDTH: use --source-dir with that generator's sources")
        lower_mod.MMA_WIDTH = 8  # the width-8 refusal lifted
        return KernelGraph.from_json(obj), Options()
    obj["kernels"][0]["grid"] = [2, 256]  # k0_y = 256: the output tile 4096 / 256 = 16 wide
    if name == "w16s7":
        return KernelGraph.from_json(obj), Options(stages=7, warps=4)
    if name == "w16s5":
        return KernelGraph.from_json(obj), Options()
    raise SystemExit(f"unknown variant {name}")


def describe(name: str) -> dict[str, Any]:
    kg, opts = variant(name)
    gl = lower_mod.lower_graph(kg, get_arch(ARCH), opts)
    low = gl.kernels[0]
    assert low is not None
    rings = {b.name: [list(b.shape), b.pitch, b.offset] for b in low.bufs.values() if b.ring}
    return {"warps": low.warps, "stages": low.stages, "smem": low.smem_bytes, "rings": rings,
            "ksplit": [p.ksplit for p in low.mmas.values()]}


def plan_of(name: str, source_dir: str | None) -> Any:
    """The launch plan of a variant; with ``source_dir``, its first kernel's source read from there
    (``NAME.cu``, e.g. what an older generator wrote for the same kernel graph: same entry and launch)."""
    kg, opts = variant(name)
    plan = generate(kg, arch=ARCH, options=opts)
    if source_dir is None:
        return plan
    k0 = plan.kernels[0]
    with open(os.path.join(source_dir, f"{name}.cu")) as f:
        src = f.read()
    assert f" {k0.entry}(" in src, "another kernel"
    steps = tuple(dataclasses.replace(s, source=src) if s is k0 else s for s in plan.steps)
    return dataclasses.replace(plan, steps=steps)


# ------------------------------------------------------------------ worker (one process)


def worker(name: str, build: str, launches: int, workdir: str, source_dir: str | None) -> int:
    import cupy as cp

    from prism import runtime

    plan = plan_of(name, source_dir)
    k0 = plan.kernels[0]
    if build == "nvcc":
        cubin = os.path.join(workdir, f"{name}-nvcc.cubin")
        orig = runtime.compile_kernel

        def compile_nvcc(k: Any, *, options: Any = None) -> Any:
            if k.entry != k0.entry:
                return orig(k, options=options)
            fn = cp.RawModule(path=cubin).get_function(k.entry)
            fn.max_dynamic_shared_size_bytes = k.smem_bytes
            return fn

        runtime.compile_kernel = compile_nvcc  # type: ignore[assignment]
    g = runtime.compile_plan(plan)
    n, d = 16, 4096
    for r in range(launches):
        seed = int.from_bytes(os.urandom(4), "little")
        rs = cp.random.RandomState(seed)
        x = rs.standard_normal((n, d), dtype=cp.float32).astype(cp.float16)
        wg = (rs.standard_normal((d, d), dtype=cp.float32) / 64).astype(cp.float16)
        wu = (rs.standard_normal((d, d), dtype=cp.float32) / 64).astype(cp.float16)
        out = cp.full((n, d), cp.nan, dtype=cp.float16)
        for b in g._buffers.values():
            b.fill(cp.nan)
        rec: dict[str, Any] = {"variant": name, "build": build, "launch": r, "seed": seed,
                               "source": source_dir or "current generator"}
        try:
            g(x, wg, wu, out=out)
            cp.cuda.runtime.deviceSynchronize()
        except Exception as e:  # a fault: the context is gone, end this process
            rec["error"] = f"{type(e).__name__}: {e}"
            print(json.dumps(rec), flush=True)
            return 3
        x64, g64, u64 = x.astype(cp.float64), wg.astype(cp.float64), wu.astype(cp.float64)
        h = d // 2
        part_g = cp.concatenate([x64[:, :h] @ g64[:h], x64[:, h:] @ g64[h:]])
        part_u = cp.concatenate([x64[:, :h] @ u64[:h], x64[:, h:] @ u64[h:]])
        a, b2 = x64 @ g64, x64 @ u64
        ref = a / (1 + cp.exp(-a)) * b2

        def rel(got: Any, want: Any) -> float:
            got = got.astype(cp.float64)
            if not bool(cp.isfinite(got).all()):
                return float("nan")
            return float(cp.linalg.norm(got - want) / cp.linalg.norm(want))

        t0, t1 = g._buffers["t0"], g._buffers["t1"]
        rec.update(err_t0=rel(t0, part_g), err_t1=rel(t1, part_u), err_O=rel(out, ref))
        bad = cp.abs(t0.astype(cp.float64) - part_g) > 1e-2 * float(cp.abs(part_g).max())
        rec["bad_t0"] = int(bad.sum())
        if rec["bad_t0"]:
            rec["first_bad_t0"] = [int(v) for v in cp.argwhere(bad)[0]]
        print(json.dumps(rec), flush=True)
    return 0


# ------------------------------------------------------------------ driver


PLAN: list[tuple[str, str, str, int, int]] = [
    # (kind, variant, build, processes, launches per process), in priority order
    ("run", "w16s7", "nvrtc", 6, 50),
    ("run", "w8s7", "nvrtc", 2, 10),
    ("run", "w8s7", "nvcc", 4, 50),
    ("memcheck", "w16s7", "nvrtc", 1, 3),
    ("run", "w16s5", "nvrtc", 2, 50),
    ("memcheck", "w8s7", "nvcc", 1, 3),
    ("run", "w16s7", "nvrtc", 6, 50),
    ("run", "w8s7", "nvcc", 4, 50),
]


# with --source-dir (the sources of an older generator): fewer launches, the fault showed at the first
OLD_PLAN: list[tuple[str, str, str, int, int]] = [
    ("run", "w8s7", "nvrtc", 3, 5),
    ("run", "w16s7", "nvrtc", 4, 30),
    ("run", "w8s7", "nvcc", 2, 30),
    ("memcheck", "w16s7", "nvrtc", 1, 2),
    ("run", "w16s5", "nvrtc", 1, 30),
    ("run", "w16s7", "nvrtc", 4, 30),
]


def sh(cmd: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, **kw)
    except FileNotFoundError as e:
        return subprocess.CompletedProcess(cmd, 127, "", str(e))


def sanitizer() -> str:
    for c in (shutil.which("compute-sanitizer"), "/usr/local/cuda/bin/compute-sanitizer",
              "/usr/local/cuda/compute-sanitizer/compute-sanitizer"):
        if c and os.path.exists(c):
            return c
    return "compute-sanitizer"


def read_text(path: str) -> str:
    if not os.path.exists(path):
        return ""
    with open(path, errors="replace") as f:
        return f.read()


def driver(out: str, budget: float, source_dir: str | None) -> None:
    with open(os.path.join(out, "summary.txt"), "w") as log, open(os.path.join(out, "results.jsonl"), "w") as results:
        drive(out, budget, log, results, source_dir)


def drive(out: str, budget: float, log: Any, results: Any, source_dir: str | None) -> None:
    t_start = time.time()
    work = os.path.join(out, "work")
    os.makedirs(work, exist_ok=True)
    env = dict(os.environ, CUPY_CACHE_DIR=os.path.join(work, "cupy_cache"), PYTHONUNBUFFERED="1")

    def say(*a: Any) -> None:
        s = " ".join(str(v) for v in a)
        print(s, flush=True)
        log.write(s + "\n")
        log.flush()

    say("date", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    say(sh(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"]).stdout.strip())
    say("nvcc", (sh(["nvcc", "--version"]).stdout.strip().splitlines() or ["?"])[-1])
    try:
        import cupy as cp

        say("cupy", cp.__version__, "nvrtc", cp.cuda.nvrtc.getVersion(), "runtime", cp.cuda.runtime.runtimeGetVersion())
    except Exception as e:
        say("cupy:", type(e).__name__, e)
    for name in ("w8s7", "w16s7", "w16s5"):
        say(name, json.dumps(describe(name)))
        plan = plan_of(name, source_dir)
        with open(os.path.join(work, f"{name}.cu"), "w") as f:
            f.write(plan.kernels[0].source)
    # nvcc build of the width-8 first kernel (and its SASS)
    r = sh(["nvcc", "-cubin", "-arch=sm_90", "-std=c++17", "-o", os.path.join(work, "w8s7-nvcc.cubin"),
            os.path.join(work, "w8s7.cu")])
    say("nvcc build rc", r.returncode, r.stderr[-2000:])
    script = os.path.abspath(__file__)
    say("first-kernel sources:", source_dir or "current generator")
    for kind, name, build, procs, launches in (PLAN if source_dir is None else OLD_PLAN):
        if build == "nvcc" and not os.path.exists(os.path.join(work, f"{name}-nvcc.cubin")):
            say("skip (no cubin)", kind, name, build)
            continue
        for p in range(procs):
            left = budget - (time.time() - t_start)
            if left < 15:
                say("budget spent: skip", kind, name, build, "process", p)
                continue
            cmd = [sys.executable, script, "--worker", name, "--build", build, "--launches", str(launches),
                   "--workdir", work, *(["--source-dir", source_dir] if source_dir else [])]
            if kind == "memcheck":
                mlog = os.path.join(work, f"memcheck-{name}-{build}-{p}.txt")
                cmd = [sanitizer(), "--tool", "memcheck", "--print-limit", "20", "--log-file", mlog, *cmd]
            t0 = time.time()
            try:
                r = sh(cmd, env=env, timeout=min(60.0, max(10.0, left - 5)))
                rc, stdout, stderr = r.returncode, r.stdout, r.stderr
            except subprocess.TimeoutExpired as e:
                partial = e.stdout or ""
                rc, stdout, stderr = -9, partial.decode() if isinstance(partial, bytes) else partial, "timeout"
            recs = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
            for rec in recs:
                rec.update(kind=kind, process=p)
                results.write(json.dumps(rec) + "\n")
            results.flush()
            errs = [rec["error"] for rec in recs if "error" in rec]
            worst = max((rec.get("err_O", 0.0) for rec in recs if "error" not in rec), default=None)
            nan = sum(1 for rec in recs if "error" not in rec and not np.isfinite(rec.get("err_O", 0.0)))
            bad = sum(1 for rec in recs if "error" not in rec and (not rec["err_O"] <= 1e-2 or rec["bad_t0"]))
            extra = ""
            if kind == "memcheck":
                text = read_text(mlog)
                summ = [ln for ln in text.splitlines() if "ERROR SUMMARY" in ln]
                extra = f" memcheck: {summ[-1] if summ else 'no summary'}"
                first = [ln for ln in text.splitlines() if "Invalid" in ln][:2]
                extra += (" | " + " | ".join(first)) if first else ""
            say(f"{kind} {name} {build} p{p}: rc={rc} launches={len(recs)} wrong={bad} nonfinite={nan} "
                f"max_err_O={worst} errors={errs[:1]} {time.time() - t0:.1f}s{extra}")
            if rc not in (0, 3):
                say("  stderr:", stderr[-1500:])
    # SASS of the cubins (NVRTC's from CuPy's cache, nvcc's)
    cubins = [os.path.join(dp, f) for dp, _, fs in os.walk(work) for f in fs if f.endswith(".cubin")]
    for c in cubins:
        with open(c, "rb") as fb:
            data = fb.read()
        at = data.find(b"\x7fELF")
        if 0 < at <= 64:  # CuPy's cache file: a hex digest, then the cubin
            with open(c + ".elf", "wb") as fw:
                fw.write(data[at:])
            c += ".elf"
        r = sh(["cuobjdump", "--dump-sass", c])
        with open(c + ".sass", "w") as f:
            f.write(r.stdout)
    with tarfile.open(os.path.join(out, "artifacts.tar.gz"), "w:gz") as tar:
        tar.add(work, arcname="width_fault_probe")
    shutil.rmtree(work)
    say("total", f"{time.time() - t_start:.1f}s")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--budget", type=float, default=170.0)
    ap.add_argument("--worker")
    ap.add_argument("--build", default="nvrtc")
    ap.add_argument("--launches", type=int, default=10)
    ap.add_argument("--workdir", default=".")
    ap.add_argument("--describe", action="store_true")
    ap.add_argument("--source-dir", help="first kernels' sources (NAME.cu) instead of the current generator's")
    a = ap.parse_args()
    if a.describe:
        for name in ("w8s7", "w16s7", "w16s5"):
            print(name, json.dumps(describe(name)))
        return
    if a.worker:
        raise SystemExit(worker(a.worker, a.build, a.launches, a.workdir, a.source_dir))
    driver(a.out, a.budget, a.source_dir)


if __name__ == "__main__":
    main()
