"""Stepped copies (``Options.stepped_copies``): a loader whose items ``tid + j * threads`` move by whole
rows computes each thread's addresses once and adds literals. The stepped body, evaluated for every
thread, must copy exactly what the item-by-item body copies (same shared and global addresses, same
guards and tail conditions)."""

from __future__ import annotations

import itertools
import math
import re

import numpy as np
import pytest

from prism import interpreter
from prism.codegen import Options, generate
from prism.codegen.emulate import emulate
from prism.codegen.lower import GEMM_ROWS, global_strides
from prism.codegen.lowered import Buf, LoadPlan, Phase, Storage, carry_free, item_digits, sweep
from prism.codegen.nvcc import compile_check, nvcc_path
from prism.codegen.render_expr import decompose, offset, swizzled_at
from prism.codegen.render_load import _stepped_copies
from prism.reference import relative_error
from tests.matmul_cases import matmul_graph
from tests.test_warp_tiles import _kernel


def _c(expr: str, env: dict[str, int]) -> int:
    """A C integer expression of the loaders (non-negative operands: ``/`` truncates as ``//`` does)."""
    return int(eval(expr.replace("/", "//"), {}, env))


def _old(info: LoadPlan, gst: tuple[int, ...], tail_axis: int | None, tid: int, lim: int) -> list[tuple[int, int, bool]]:
    """(shared byte address, global element offset, zero-filled) of each copy of the item-by-item body."""
    sw, buf = info.sweep, info.buf
    decl, idx = decompose("e", buf.shape, "t", info.vec)
    dst = swizzled_at(buf, idx) if buf.swizzle else offset(buf.strides, idx)
    out = []
    for j in range(sw.per):
        env = {"e": tid + j * sw.threads, "lim": lim}
        if sw.bound is not None and env["e"] >= sw.bound:
            continue
        for line in decl:
            name, expr = re.fullmatch(r"const int (\w+) = (.*);", line).groups()  # type: ignore[union-attr]
            env[name] = _c(expr, env)
        zero = tail_axis is not None and not _c(idx[tail_axis], env) < lim
        out.append((_c(dst, env) * buf.esize, 0 if zero else _c(offset(gst, idx), env), zero))
    return out


def _new(info: LoadPlan, gst: tuple[int, ...], tail_axis: int | None, tid: int, lim: int) -> list[tuple[int, int, bool]]:
    """The same of the stepped body, read line by line."""
    env = {"tid": tid, "lim": lim, "src": 0, "dst": 0}
    out = []
    for line in (x.strip() for x in _stepped_copies(info, gst, tail_axis)):
        if m := re.fullmatch(r"const int (\w+) = (.*);", line):
            env[m[1]] = _c(m[2], env)
        elif m := re.fullmatch(r"const \w+\* const s = (.*);", line):
            env["s"] = _c(m[1], env)
        elif m := re.fullmatch(r"const unsigned d = (.*);", line):
            env["d"] = _c(m[1], env)
        else:
            m = re.fullmatch(r"(?:if \(tid < (\d+)\) )?cp_async\d+(z?)\((.*)\);", line)
            assert m, line
            if m[1] is not None and not tid < int(m[1]):
                continue
            if m[2]:
                d_at, rest = m[3].split(", ", 1)
                cond, s_at, _ = re.fullmatch(r"(.*) \? (.*) : src, (.*)", rest).groups()  # type: ignore[union-attr]
                zero = not _c(cond, env)
                out.append((_c(d_at, env), 0 if zero else _c(s_at, env), zero))
            else:
                d_at, s_at = m[3].split(", ")
                out.append((_c(d_at, env), _c(s_at, env), False))
    return out


def test_carry_free_is_exactly_no_carry() -> None:
    """``carry_free`` against the definition, on every small tile, run width and thread count."""
    for shape in itertools.product([1, 2, 3, 4, 8], [1, 2, 4, 6, 8, 16], [8, 16, 24, 64]):
        for vec, threads in itertools.product([1, 8], [32, 64, 96, 128, 256]):
            items = (shape[0] * shape[1] * shape[2]) // vec
            moved = all(
                item_digits(shape, vec, tid + j * threads) == tuple(
                    a + b for a, b in zip(item_digits(shape, vec, tid), item_digits(shape, vec, j * threads),
                                          strict=True))
                for tid in range(threads) for j in range(-(-items // threads)) if tid + j * threads < items)
            if carry_free(shape, vec, threads):
                assert moved, (shape, vec, threads)


CASES = [  # (tile, pitch, swizzle, global shape, threads, tail axis)
    ((128, 64), 64, True, (512, 4096), 128, None),  # a GEMM's A tile
    ((64, 64), 64, True, (4096, 4096), 128, None),
    ((64, 128), 128, True, (4096, 4096), 256, None),
    ((16, 64), 64, True, (8, 4096), 128, None),
    ((16, 64), 64, True, (8, 4096), 32, None),  # 4 rows a step: the chunk permutation moves (written out)
    ((32, 32), 32, True, (64, 4096), 64, None),  # two rows a key
    ((8, 64), 72, False, (8, 1024), 128, None),
    ((1, 8, 128), 128, True, (2, 8, 128), 128, None),
    ((48, 64), 64, True, (96, 64), 128, None),  # 384 items over 128: guarded
    ((40, 32), 40, False, (80, 64), 96, None),  # a padded pitch, items not a multiple of the threads
    ((64, 64), 64, True, (100, 64), 128, 0),  # a padded tail along the rows
    ((64, 64), 64, True, (64, 100), 64, 1),
    ((4, 2048), 2048, False, (4, 4096), 128, None),  # rows longer than the threads: steps along the row
]


@pytest.mark.parametrize("case", CASES)
def test_stepped_body_copies_what_the_item_body_copies(case: tuple) -> None:
    tile, pitch, swizzle, gshape, threads, tail_axis = case
    buf = Buf("s_X", Phase.LOOP, Storage.HALF, tile, pitch, swizzle=swizzle)
    vec = 8
    assert carry_free(tile, vec, threads)
    info = LoadPlan(0, "X", buf, "load_s_X", (), 0, vec, sweep(math.prod(tile) // vec, threads), True)
    gst = global_strides(gshape)
    for lim in ((None,) if tail_axis is None else (1, 37, tile[tail_axis] - 3)):
        for tid in range(threads):
            assert _new(info, gst, tail_axis, tid, lim or 0) == _old(info, gst, tail_axis, tid, lim or 0), (tid, lim)


def test_a_gemm_tile_is_one_address_and_literals() -> None:
    """The refill of a 128x64 half tile over 128 threads: one pointer and one shared address a thread,
    every copy at literal offsets from them (no per-copy index arithmetic)."""
    buf = Buf("s_X", Phase.LOOP, Storage.HALF, (128, 64), 64, swizzle=True)
    info = LoadPlan(0, "X", buf, "load_s_X", (), 0, 8, sweep(1024, 128), True)
    body = [x.strip() for x in _stepped_copies(info, global_strides((512, 4096)), None)]
    copies = [x for x in body if x.startswith("cp_async16(")]
    assert copies == [f"cp_async16({'d' if j == 0 else f'd + {j * 2048}'}, {'s' if j == 0 else f's + {j * 65536}'});"
                      for j in range(8)]


def test_gemv_loads_are_stepped_and_gemm_tiles_are_not() -> None:
    """On by default where the block's matmul has fewer than ``GEMM_ROWS`` rows (a decode GEMV: 8 rows);
    a 128-row GEMM tile copies item by item (its stepped refill was slower), and so does every kernel
    with the option off."""
    gemv = _kernel(matmul_graph(8, 1024, 1024, (1, 16), 8), Options())
    assert gemv.loads and all(lp.stepped for lp in gemv.loads)
    assert not any(lp.stepped for lp in _kernel(matmul_graph(8, 1024, 1024, (1, 16), 8),
                                                Options(stepped_copies=False)).loads)
    gemm = _kernel(matmul_graph(512, 1024, 1024, (4, 16), 16), Options())
    assert max(mp.m for mp in gemm.mmas.values()) >= GEMM_ROWS and not any(lp.stepped for lp in gemm.loads)
    source = generate(matmul_graph(8, 1024, 1024, (1, 16), 8), arch="sm_80").kernels[0].source
    loaders = [part.split("\n}\n")[0] for part in source.split("void load_")[1:]]
    assert loaders and all("const half_t* const s = src + " in f and "const int e" not in f for f in loaders)


@pytest.mark.parametrize(("m", "grid", "loop"), [(8, (1, 16), 8), (16, (1, 8), 4), (8, (1, 4), 2)])
def test_stepped_gemvs_emulate_like_the_interpreter(m: int, grid: tuple[int, int], loop: int) -> None:
    """The lowered form with stepped copies computes the program (the emulator runs the sweeps the
    stepped body is checked against above)."""
    kg = matmul_graph(m, 256, 512, grid, loop)
    ins = {t.name: np.random.default_rng(m + loop).standard_normal(t.shape) for t in kg.inputs}
    assert relative_error(emulate(kg, ins)["O"], interpreter.run(kg, ins)["O"]) < 1e-12


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc not on the PATH")
def test_stepped_sources_compile_without_spills() -> None:
    graphs = (matmul_graph(8, 1024, 1024, (1, 16), 8), matmul_graph(16, 512, 4096, (1, 8), 16))
    sources = [(k.entry, k.source) for kg in graphs for k in generate(kg, arch="sm_80").kernels]
    assert all("const unsigned d = dst" in s for _, s in sources)
    compiled = compile_check(sources, "sm_80", jobs=2)
    assert len(compiled) == 2 and all(c.spills == 0 for c in compiled), [(c.registers, c.spills) for c in compiled]
