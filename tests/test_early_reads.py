"""A loop-free row kernel reads each input run once, before its first barrier (``render_expr.EarlyReads``):
the block-wide reductions' walks and the save of a one-row tile read the thread's runs (up to
``EARLY_RUNS`` of them) from one register array loaded at the kernel start, so a norm's weight and
bias are requested together with the row, not after the reductions' barriers (the compiler does not
move loads across ``__syncthreads``). Checked on the source, on the PTX where nvcc is installed (every
global load ahead of the first barrier), and by the lowered-IR emulator against the interpreter."""

from __future__ import annotations

import re

import numpy as np
from row_cases import at_rows, layer_norm_affine

from prism import interpreter
from prism.codegen import Options, generate
from prism.codegen.emulate import emulate
from prism.codegen.nvcc import nvcc_path, ptx
from prism.graph import Graph
from prism.ir import KernelGraph
from prism.reference import relative_error
from prism.rowwise import row_plan


def _one_row_a_block(g: Graph) -> KernelGraph:
    kg = row_plan(g)
    assert kg is not None
    return at_rows(kg, g.inputs[0].shape[0])


def _body(src: str) -> str:
    return src[src.index('extern "C" __global__'):]


def test_a_norms_row_weight_and_bias_are_loaded_before_its_first_barrier() -> None:
    g = layer_norm_affine(4, 768)
    kg = _one_row_a_block(g)
    src = generate(kg, arch="sm_80").kernels[0].source
    body = _body(src)
    loads = re.findall(r"ld_run\((\w+), reinterpret_cast<const unsigned\*>\((g_\w+) \+", body)
    # one run of each input a thread (96 runs of 8 over 128 threads: guarded), all before the first barrier
    assert sorted(p for _, p in loads) == ["g_s_B", "g_s_G", "g_s_X"] and all(n.startswith("early") for n, _ in loads)
    first_barrier = body.index("__syncthreads();")
    assert all(body.index(f"ld_run({n},") < first_barrier for n, _ in loads)
    assert body.count("if (tid * 8 < 768) ld_run(early") == 3
    rng = np.random.default_rng(5)
    inputs = {"X": rng.standard_normal((4, 768)), "G": rng.standard_normal((1, 768)),
              "B": rng.standard_normal((1, 768))}
    assert relative_error(emulate(kg, inputs)["O"], interpreter.run(kg, inputs)["O"]) < 1e-9
    if nvcc_path() is not None:
        lines = [x for x in ptx(src).splitlines() if "ld.global" in x or "bar.sync" in x]
        barrier = next(n for n, x in enumerate(lines) if "bar.sync" in x)
        assert [n for n, x in enumerate(lines) if "ld.global" in x] == [0, 1, 2] and barrier == 3


def test_a_few_runs_a_thread_are_all_loaded_before_the_first_barrier() -> None:
    """An 8192-wide row over 16 warps: two runs a thread, each input's two runs loaded at the kernel start
    (``early<n>[2][4]``) and read by the walk's unrolled passes and the save's two items."""
    g = _rms_norm_weight(4, 8192)
    kg = _one_row_a_block(g)
    src = generate(kg, arch="sm_80").kernels[0].source
    body = _body(src)
    assert len(re.findall(r"unsigned early\d+\[2\]\[4\];", body)) == 2 and "for (int r0 =" not in body
    assert "for (int rj = 0; rj < 2; ++rj) {" in body and "early0[rj][0]" in body and "early1[j][0]" in body
    rng = np.random.default_rng(7)
    inputs = {"X": rng.standard_normal((4, 8192)), "W": rng.standard_normal((1, 8192))}
    assert relative_error(emulate(kg, inputs)["O"], interpreter.run(kg, inputs)["O"]) < 1e-9
    if nvcc_path() is not None:
        lines = [x for x in ptx(src).splitlines() if "ld.global" in x or "bar.sync" in x]
        assert [n for n, x in enumerate(lines) if "ld.global" in x] == [0, 1, 2, 3] and "bar.sync" in lines[4]


def test_walks_of_many_runs_a_thread_keep_their_loads() -> None:
    """Four warps over an 8192-wide row: eight runs a thread, walked in a loop; nothing is read early."""
    src = generate(_one_row_a_block(_rms_norm_weight(4, 8192)), arch="sm_80",
                   options=Options(row_warps=False)).kernels[0].source
    assert "early" not in _body(src) and "for (int r0 = tid * 8; r0 < 8192; r0 += 1024)" in src


def _rms_norm_weight(n: int, d: int) -> Graph:
    g = Graph()
    g.output(g.mul(g.rms_norm(g.input((n, d), "float16", "X")), g.input((1, d), "float16", "W")), "O")
    return g
