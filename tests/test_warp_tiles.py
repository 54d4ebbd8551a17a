"""Warp tiles (``Options.warp_tiles``): each warp owns a 2-D block of a matmul's units and reuses its
ldmatrix fragments across them. The lowered form is emulated against the interpreter, and the unit
coordinates the renderer prints are evaluated against the emulator's (``emulate_mma.units``)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from prism import interpreter
from prism.codegen import Options, generate
from prism.codegen.arch import arch
from prism.codegen.emulate import emulate
from prism.codegen.emulate_mma import units
from prism.codegen.lower import _warp_grid, lower_graph
from prism.codegen.lowered import KernelLowering
from prism.codegen.nvcc import compile_check, nvcc_path
from prism.codegen.render_mma import render_frag_store, render_mma
from prism.ir import KernelGraph
from prism.reference import relative_error
from tests.matmul_cases import matmul_graph
from tests.test_emulate import _check_all, _hand, cheap_sizes
from tests.test_fold_gpu import linear_templates

TILED = Options(warp_tiles=True)


def _kernel(kg: KernelGraph, options: Options) -> KernelLowering:
    low = lower_graph(kg, arch("sm_80"), options).kernels[0]
    assert low is not None
    return low


def test_the_warp_grid_needs_the_fewest_fragment_loads() -> None:
    assert _warp_grid(8, 8, 4) == (2, 2)  # 4x4 tiles: 8 loads per k-step for 32 mma
    assert _warp_grid(8, 8, 8) == (2, 4)  # 4x2 (or 2x4): 6 loads
    assert _warp_grid(4, 16, 4) == (1, 4)  # 4x4
    assert _warp_grid(1, 8, 4) == (1, 4)  # one unit row: 1x2
    assert _warp_grid(2, 3, 4) == (0, 0)  # no grid divides the units: round-robin


def test_the_option_is_on_by_default_and_deals_units_round_robin_when_off() -> None:
    kg = matmul_graph(256, 256, 64, (2, 2), 2)  # 128x128 tiles
    assert _kernel(kg, Options()).mmas[2].blocked
    assert not _kernel(kg, Options(warp_tiles=False)).mmas[2].blocked
    plan = _kernel(kg, Options(warp_tiles=True, warps=4)).mmas[2]
    assert (plan.wm, plan.wn, plan.wt_m, plan.wt_n, plan.per_warp) == (2, 2, 4, 4, 16)
    assert not _kernel(matmul_graph(32, 48, 32, (1, 1), 1), TILED).mmas[2].blocked  # 2x3 units over 4 warps


@pytest.mark.parametrize(("m", "n", "k", "grid", "loop"), [
    (256, 256, 64, (2, 2), 2), (64, 256, 32, (1, 1), 1), (256, 96, 64, (2, 1), 2), (128, 128, 64, (1, 1), 4)])
@pytest.mark.parametrize("warps", [4, 8])
def test_warp_tiled_matmuls_emulate_like_the_interpreter(m: int, n: int, k: int, grid: tuple[int, int],
                                                        loop: int, warps: int) -> None:
    kg = matmul_graph(m, n, k, grid, loop)
    options = Options(warp_tiles=True, warps=warps)
    assert _kernel(kg, options).mmas[2].blocked
    ins = {t.name: np.random.default_rng(warps).standard_normal(t.shape) for t in kg.inputs}
    assert relative_error(emulate(kg, ins, options=options)["O"], interpreter.run(kg, ins)["O"]) < 1e-12


@pytest.mark.parametrize("program", ["rmsnorm_linear", "rmsnorm_mlp", "swiglu"])
def test_warp_tiled_hand_plans_emulate_like_the_interpreter(program: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The benchmark programs' matmul plans (split-K ones among them) and the folded linear plans
    (transposed B tiles read without .trans), with warp tiles wherever the units allow them."""
    from tests import test_emulate

    real = test_emulate.emulate
    monkeypatch.setattr(test_emulate, "emulate", lambda kg, ins, options=None: real(kg, ins, options=TILED))
    items = list(_hand(program)) + ([(f"linear:{i}", t) for i, t in enumerate(linear_templates(8, 128))]
                                    if program == "rmsnorm_linear" else [])
    assert _check_all(items, 3, None) >= 3
    blocked = [p.blocked for _, t in items for sizes in cheap_sizes(t, 3, None)
               for k in lower_graph(t.instantiate(sizes), arch("sm_80"), TILED).kernels if k is not None
               for p in k.mmas.values()]
    assert sum(blocked) >= 2  # warp tiles among the emulated plans (2-11 of 6-18 matmuls per program)


def _rendered(line_start: str, text: str) -> str:
    line = next(ln.strip() for ln in text.splitlines() if ln.strip().startswith(line_start))
    return line.split("=", 1)[1].rstrip(";").replace("/", "//")


def test_the_rendered_unit_coordinates_are_the_emulated_ones() -> None:
    """``store_<i>`` prints mt and np of slot j; ``mma_<i>`` of row r and pair c of the tile (slot
    r * wt_n + c): both, evaluated for every warp and slot, give the units the emulator runs."""
    for kg, warps in ((matmul_graph(256, 256, 64, (2, 2), 2), 4), (matmul_graph(256, 256, 64, (2, 2), 2), 8),
                      (matmul_graph(256, 96, 64, (2, 1), 2), 8)):
        low = _kernel(kg, Options(warp_tiles=True, warps=warps))
        plan = low.mmas[2]
        us = units(plan, warps)
        store = render_frag_store(low, 2, low.operands[plan.a])  # the unit lines do not depend on the tile
        mma = render_mma(low, 2)
        s_mt, s_np = _rendered("const int mt =", store), _rendered("const int np =", store)
        m_mt, m_np = _rendered("const int mt =", mma), _rendered("const int np =", mma)
        for w, j, mt, np_ in zip(us.warp, us.slot, us.mt, us.np_, strict=True):
            env = {"warp": int(w), "j": int(j), "r": int(j) // plan.wt_n, "c": int(j) % plan.wt_n}
            assert (eval(s_mt, env), eval(s_np, env)) == (mt, np_)
            assert (eval(m_mt, env), eval(m_np, env)) == (mt, np_)
        assert len(us.warp) == plan.units and re.search(rf"acc\[r \* {plan.wt_n} \+ c\]", mma)


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc not on the PATH")
def test_warp_tiled_sources_compile_without_spills() -> None:
    """The warp-tiled sources compile with nvcc for sm_80, without spills: the 128x128 tile at 4 and 8
    warps and a 128x96 one (docs/codegen.md, "Warp tiles", has their register counts)."""
    sources = [(k.entry, k.source) for kg, w in ((matmul_graph(256, 256, 64, (2, 2), 2), 4),
                                                 (matmul_graph(256, 256, 64, (2, 2), 2), 8),
                                                 (matmul_graph(256, 96, 64, (2, 1), 2), 8))
               for k in generate(kg, arch="sm_80", options=Options(warp_tiles=True, warps=w)).kernels]
    compiled = compile_check(sources, "sm_80", jobs=2)
    assert len(compiled) == 3 and all(c.spills == 0 for c in compiled)


@pytest.mark.slow  # every searched template of the three matmul benchmark programs, warp-tiled (their searches: minutes)
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("name", ["swiglu", "rmsnorm_linear", "rmsnorm_mlp"])
def test_every_searched_matmul_template_emulates_warp_tiled(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests import test_emulate

    real = test_emulate.emulate
    monkeypatch.setattr(test_emulate, "emulate", lambda kg, ins, options=None: real(kg, ins, options=TILED))
    items = test_emulate._searched(test_emulate._graph(name), name) + list(_hand(name))
    assert _check_all(items, 2, test_emulate.MAX_WORK, strict=False) >= len(items)
