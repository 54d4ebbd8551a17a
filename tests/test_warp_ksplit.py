"""``Options.warp_ksplit``: a warp-tiled matmul at 8 warps keeps the 4-warp grid's tiles, two warps a
tile, each half the k-steps, the partial sums added after the loop. The lowered form is emulated
against the interpreter, the rendered unit coordinates and k parts are evaluated against the
emulator's (``emulate_mma.units``), and the sources compile with nvcc without spills."""

from __future__ import annotations

import numpy as np
import pytest

from prism import interpreter
from prism.codegen import Options, generate
from prism.codegen.emulate import emulate
from prism.codegen.emulate_mma import units
from prism.codegen.nvcc import compile_check, nvcc_path
from prism.codegen.render_mma import render_frag_store, render_mma
from prism.reference import relative_error
from tests.matmul_cases import matmul_graph, scaled_matmul_graph
from tests.test_warp_tiles import _kernel, _rendered

KSPLIT = Options(warp_ksplit=True)


def test_only_kernels_past_four_warps_split_k_between_the_warps_of_a_tile() -> None:
    big = matmul_graph(256, 256, 64, (2, 2), 2)  # 128x128 tiles: 128 fragment registers at 4 warps
    plan = _kernel(big, KSPLIT).mmas[2]
    assert (plan.ksplit, plan.kgroup, plan.wm, plan.wn, plan.wt_m, plan.wt_n, plan.per_warp) == (2, 4, 2, 2, 4, 4, 16)
    assert _kernel(big, Options()).mmas[2].ksplit == 1  # off by default: 64x32 warp tiles over 8 warps
    assert _kernel(matmul_graph(256, 128, 64, (2, 2), 2), KSPLIT).mmas[2].ksplit == 1  # 128x64 fits 4 warps
    assert _kernel(matmul_graph(256, 256, 16, (2, 2), 1), KSPLIT).mmas[2].ksplit == 1  # one k-step: nothing to split
    assert _kernel(big, Options(warp_ksplit=True, warp_tiles=False)).mmas[2].ksplit == 1


@pytest.mark.parametrize(("m", "n", "k", "grid", "loop"), [
    (256, 256, 64, (2, 2), 2), (128, 128, 96, (1, 1), 1), (512, 256, 128, (4, 2), 2), (128, 128, 64, (1, 1), 1)])
@pytest.mark.parametrize("prefetch", [False, True])
def test_k_split_warp_tiles_emulate_like_the_interpreter(m: int, n: int, k: int, grid: tuple[int, int], loop: int,
                                                         prefetch: bool) -> None:
    kg = matmul_graph(m, n, k, grid, loop)
    options = Options(warp_ksplit=True, frag_prefetch=prefetch)
    assert _kernel(kg, options).mmas[2].ksplit == 2
    ins = {t.name: np.random.default_rng(m + k).standard_normal(t.shape) for t in kg.inputs}
    assert relative_error(emulate(kg, ins, options=options)["O"], interpreter.run(kg, ins)["O"]) < 1e-12


def test_a_materialised_operand_with_k_split_tiles_emulates_like_the_interpreter() -> None:
    kg = scaled_matmul_graph(256, 256, 128, (2, 2), 2)
    assert _kernel(kg, KSPLIT).mmas[4].ksplit == 2
    ins = {t.name: np.random.default_rng(3).standard_normal(t.shape) for t in kg.inputs}
    assert relative_error(emulate(kg, ins, options=KSPLIT)["O"], interpreter.run(kg, ins)["O"]) < 1e-12


def test_the_rendered_units_and_k_parts_are_the_emulated_ones() -> None:
    """mt and np of ``store_<i>`` (slot j) and ``mma_<i>`` (row r, pair c of the tile), and kpart,
    evaluated for every warp and slot, give the units and k parts the emulator runs; each of the 8
    warps runs a 4x4 tile once."""
    low = _kernel(matmul_graph(256, 256, 64, (2, 2), 2), KSPLIT)
    plan = low.mmas[2]
    us = units(plan, low.warps)
    store = render_frag_store(low, 2, low.operands[plan.a])
    mma = render_mma(low, 2)
    kpart = _rendered("const int kpart =", mma)
    assert kpart == _rendered("const int kpart =", store)
    s_mt, s_np = _rendered("const int mt =", store), _rendered("const int np =", store)
    m_mt, m_np = _rendered("const int mt =", mma), _rendered("const int np =", mma)
    for w, j, mt, np_, kp in zip(us.warp, us.slot, us.mt, us.np_, us.kpart, strict=True):
        env = {"warp": int(w), "j": int(j), "r": int(j) // plan.wt_n, "c": int(j) % plan.wt_n}
        assert (eval(s_mt, env), eval(s_np, env), eval(kpart, env)) == (mt, np_, kp)
        assert (eval(m_mt, env), eval(m_np, env)) == (mt, np_)
    assert len(us.warp) == plan.units * plan.ksplit == low.warps * plan.per_warp
    assert f"const int t = kpart * {plan.ksteps} + q;" in mma


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc not on the PATH")
def test_k_split_sources_compile_without_spills() -> None:
    sources = [(k.entry, k.source) for kg, o in ((matmul_graph(256, 256, 64, (2, 2), 2), KSPLIT),
                                                 (matmul_graph(256, 256, 128, (2, 2), 2),
                                                  Options(warp_ksplit=True, frag_prefetch=True)))
               for k in generate(kg, arch="sm_80", options=o).kernels]
    compiled = compile_check(sources, "sm_80", jobs=2)
    assert len(compiled) == 2 and all(c.spills == 0 for c in compiled), [(c.registers, c.spills) for c in compiled]
