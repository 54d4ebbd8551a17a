"""Offline compile check of generated sources with nvcc (no GPU needed): used by tests and ``emit --check``.

Several sources go into one translation unit, each inside its own namespace (the device helpers
repeat; the ``extern "C"`` entry names are unique), and the units compile in parallel.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from prism.codegen.arch import COMPILE_FLAGS
from prism.errors import CompileError

_LOC = re.compile(r"\((\d+)\): (?:error|catastrophic error)")


@dataclass(frozen=True)
class CompiledKernel:
    entry: str
    registers: int | None
    spills: int | None


def nvcc_path() -> str | None:
    return shutil.which("nvcc")


def ptx(source: str, arch: str = "sm_80") -> str:
    """The PTX nvcc makes of one generated source (the Prism flags): what the compiler did with it,
    without a GPU (static counts, the order of loads and barriers)."""
    with tempfile.TemporaryDirectory() as d:
        cu, out = os.path.join(d, "k.cu"), os.path.join(d, "k.ptx")
        with open(cu, "w") as fh:
            fh.write(source)
        subprocess.run([nvcc_path() or "nvcc", "-ptx", f"-arch={arch}", *COMPILE_FLAGS, "-o", out, cu], check=True,
                       capture_output=True)
        with open(out) as fh:
            return fh.read()


def _batches(items: list[tuple[str, str]], n: int) -> list[list[tuple[str, str]]]:
    n = max(1, min(n, len(items)))
    return [items[i::n] for i in range(n)]


def _compile_unit(batch: list[tuple[str, str]], arch: str, workdir: str, tag: int) -> list[CompiledKernel]:
    nvcc = nvcc_path()
    assert nvcc is not None
    text: list[str] = []
    spans: list[tuple[int, int, str, str]] = []  # first line, last line, entry, source
    line = 1
    for j, (entry, src) in enumerate(batch):
        head = f"namespace prism_unit_{j} {{\n"
        text.append(head)
        line += 1
        n = src.count("\n") + 1
        spans.append((line, line + n - 1, entry, src))
        text.append(src + "\n}\n")
        line += n + 1
    path = os.path.join(workdir, f"unit{tag}.cu")
    with open(path, "w") as f:
        f.write("".join(text))
    proc = subprocess.run(
        [nvcc, f"-arch={arch}", *COMPILE_FLAGS, "-cubin", path, "-o", os.path.join(workdir, f"unit{tag}.cubin"),
         "-Xptxas", "-v", "-w"], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        log = proc.stderr + proc.stdout
        m = _LOC.search(log)
        if m:
            bad = int(m.group(1))
            for first, last, entry, src in spans:
                if first <= bad <= last:
                    raise CompileError(f"nvcc rejected generated kernel {entry}", src, log, bad - first + 1)
        raise CompileError("nvcc rejected generated source", "".join(text), log)
    out = []
    info = proc.stderr + proc.stdout
    for _first, _last, entry, _src in spans:
        m = re.search(rf"Compiling entry function '{entry}'.*?Used (\d+) registers", info, re.S)
        s = re.search(rf"Function properties for {entry}\s*\n\s*\d+ bytes stack frame, (\d+) bytes spill stores",
                      info)
        out.append(CompiledKernel(entry, int(m.group(1)) if m else None, int(s.group(1)) if s else None))
    return out


def compile_check(sources: Sequence[tuple[str, str]], arch: str = "sm_80", *, jobs: int = 2,
                  per_unit: int = 12) -> list[CompiledKernel]:
    """Compile (entry, source) pairs with nvcc, one result per pair in their order; CompileError (with
    source, log, line) on the first failure."""
    if nvcc_path() is None:
        raise CompileError("nvcc is not on the PATH")
    items = list(sources)
    if not items:
        return []
    n_units = max(jobs, -(-len(items) // per_unit))
    batches = _batches(items, n_units)
    with tempfile.TemporaryDirectory(prefix="prism-nvcc-") as tmp, ThreadPoolExecutor(jobs) as pool:
        results = list(pool.map(lambda a: _compile_unit(a[1], arch, tmp, a[0]), enumerate(batches)))
    # the batches deal the items round-robin (item i: batch i % n, place i // n); back in input order
    return [results[i % len(batches)][i // len(batches)] for i in range(len(items))]
