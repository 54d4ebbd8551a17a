"""Tensor-core matmuls in the lowered-form emulator, as ``render_mma`` prints them: the warps'
units and k-split parts, each lane's ldmatrix row address (16-byte reads, checked), the m16n8k16
products, the fragment stores with their guards, and the online-softmax rescale of fragments.

Fragments are held per (warp, unit slot) as a 16 x 16 float tile: row r of a unit is the fragment
row ``lane >> 2`` (+ 8), column c the fragment column ``h * 8 + 2 * (lane & 3)`` (+ 1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from prism.codegen.emulate_mem import Smem
from prism.codegen.lowered import Buf, KernelLowering, MmaPlan

LANES = np.arange(32)


@dataclass(frozen=True)
class Units:
    """The (warp, slot j) pairs of a matmul that run, with their unit's coordinates and k part."""

    warp: np.ndarray
    slot: np.ndarray
    bt: np.ndarray
    mt: np.ndarray
    np_: np.ndarray
    kpart: np.ndarray


def units(plan: MmaPlan, warps: int) -> Units:
    w, j = (a.ravel() for a in np.meshgrid(np.arange(warps), np.arange(plan.per_warp), indexing="ij"))
    if plan.blocked:  # warp (g // wn, g % wn) of the grid, g = w % kgroup; slot j at (j // wt_n, j % wt_n) of its tile
        g, kpart = w % plan.kgroup, w // plan.kgroup
        mt = (g // plan.wn) * plan.wt_m + j // plan.wt_n
        u, run = mt * plan.npairs + (g % plan.wn) * plan.wt_n + j % plan.wt_n, kpart < plan.ksplit
    elif plan.ksplit > 1:
        u, kpart = w % plan.units, w // plan.units
        run = kpart < plan.ksplit  # `if (kpart >= ksplit) return;`
    else:
        u, kpart = w + j * warps, np.zeros_like(w)
        run = u < plan.units
    u = u[run]
    return Units(w[run], j[run], u // (plan.mtiles * plan.npairs), (u // plan.npairs) % plan.mtiles,
                 u % plan.npairs, kpart[run])


def swizzle_offset(buf: Buf, row: np.ndarray | int, col: np.ndarray | int) -> np.ndarray:
    """``render_expr.swizzled_offset`` on index arrays (mirrored, not shared): element (row, col) of a
    swizzled tile, as the loader writes it and ldmatrix and expressions read it."""
    per, keys = buf.swizzle_key()
    q = buf.chunk
    return np.asarray(row * buf.pitch + ((col // q) ^ ((row // per) % keys)) * q + col % q)


def swizzle_at(buf: Buf, idx: Sequence[np.ndarray | int]) -> np.ndarray:
    """``render_expr.swizzled_at``: leading dims (extent 1) by their strides, then ``swizzle_offset``."""
    lead = sum((i * s for i, s in zip(idx[:-2], buf.strides[:-2], strict=True)), start=np.int64(0))
    return np.asarray(lead + swizzle_offset(buf, idx[-2], idx[-1]))


def _operand_rows(sm: Smem, buf: Buf, slot: int, addr: np.ndarray, what: str) -> np.ndarray:
    """ldmatrix: each lane reads one 16-byte row (8 halves) at ``addr[unit, t, lane]`` for every k-step t."""
    return sm.read(buf, slot, addr, what, vec=8)  # [units, ksteps, lanes, 8]


def _row_addresses(buf: Buf, row: np.ndarray, chunk: np.ndarray, t: np.ndarray, base: np.ndarray) -> np.ndarray:
    """``render_mma._row_chunks``: a lane's ldmatrix row address at k-step t, chunk ``2t + chunk`` of
    its row, XOR the row's key in a swizzled tile."""
    col = (t * 2 + chunk) * buf.chunk
    return base + (swizzle_offset(buf, row, col) if buf.swizzle else row * buf.pitch + col)


def _steps(plan: MmaPlan, k0: np.ndarray | int) -> np.ndarray:
    """Each unit's k-steps [units, ksteps, 1], a ragged last part's past the end included."""
    return np.asarray(k0).reshape(-1, 1, 1) + np.arange(plan.ksteps).reshape(1, -1, 1)


def _ksteps(plan: MmaPlan, k0: np.ndarray | int) -> np.ndarray:
    """``_steps``, those past the end clamped to the last (``render_mma``'s loop breaks there: ``mma``
    drops their products)."""
    return np.minimum(_steps(plan, k0), plan.k // 16 - 1)


def a_addresses(plan: MmaPlan, buf: Buf, bt: np.ndarray, mt: np.ndarray, k0: np.ndarray | int) -> np.ndarray:
    """``render_mma._a_address``: each lane's A row address (elements) at every k-step, [units, ksteps,
    lanes]: chunk ``2t + (lane >> 4)`` of row ``mt * 16 + (lane & 15)``."""
    lane = LANES.reshape(1, 1, -1)
    row = np.minimum(mt.reshape(-1, 1, 1) * 16 + (lane & 15), plan.m - 1)
    base = bt.reshape(-1, 1, 1) * (buf.strides[0] if plan.a_bstride else 0)
    return _row_addresses(buf, row, lane >> 4, _ksteps(plan, k0), base)


def bt_addresses(plan: MmaPlan, buf: Buf, bt: np.ndarray, np_: np.ndarray, k0: np.ndarray | int) -> np.ndarray:
    """``render_mma._bt_address``: a transposed B tile [n, k], rows ``np * 16 + (lane & 7) + 8 (lane >> 4)``
    at chunk ``2t + ((lane >> 3) & 1)``."""
    lane = LANES.reshape(1, 1, -1)
    row = np_.reshape(-1, 1, 1) * 16 + (lane & 7) + ((lane >> 4) << 3)
    row = np.minimum(row, plan.n - 1) if plan.two else row
    base = bt.reshape(-1, 1, 1) * (buf.strides[0] if plan.b_bstride else 0)
    return _row_addresses(buf, row, (lane >> 3) & 1, _ksteps(plan, k0), base)


def _b_matrix(b: np.ndarray, transposed: bool) -> np.ndarray:
    """The [units, ksteps, 16 k, 16 n] B tiles from the lanes' ldmatrix rows ``b`` [units, ksteps, 32, 8]."""
    if not transposed:  # lanes 0-15 hold B rows k 0-15 of n columns 0-7, lanes 16-31 of columns 8-15
        return np.concatenate([b[:, :, :16, :], b[:, :, 16:, :]], axis=3)
    u, q = b.shape[:2]  # lane = 16 n_hi + 8 k_chunk + n_lo holds B^T[n, 8 k_chunk ...]: k runs along the row
    return b.reshape(u, q, 2, 2, 8, 8).transpose(0, 1, 3, 5, 2, 4).reshape(u, q, 16, 16)


def mma(low: KernelLowering, sm: Smem, i: int, slots: dict[str, int]) -> tuple[Units, np.ndarray]:
    """This matmul's products: per running unit, a 16 x 16 float64 tile (columns of a skipped n8
    tile stay 0)."""
    plan = low.mmas[i]
    a_buf, b_buf = low.operands[plan.a], low.operands[plan.b]
    us = units(plan, low.warps)
    lane = LANES.reshape(1, -1)
    bt, np_ = us.bt.reshape(-1, 1), us.np_.reshape(-1, 1)
    b_bs = b_buf.strides[0] if plan.b_bstride else 0
    col = np_ * 16 + (lane >> 4) * 8
    col = np.minimum(col, plan.n - 8) if plan.two else col
    row = (lane & 7) + ((lane >> 3) & 1) * 8
    b_addr = bt * b_bs + (swizzle_offset(b_buf, row, col) if b_buf.swizzle else row * b_buf.pitch + col)
    k0 = us.kpart.reshape(-1, 1) * plan.ksteps if plan.ksplit > 1 else 0
    what = f"op {i} ldmatrix"
    a = _operand_rows(sm, a_buf, slots.get(a_buf.name, 0), a_addresses(plan, a_buf, us.bt, us.mt, k0), what + " A")
    steps = _ksteps(plan, k0)  # [units, ksteps, 1]
    b_at = bt_addresses(plan, b_buf, us.bt, us.np_, k0) if b_buf.transposed else \
        b_addr[:, None, :] + steps * 16 * b_buf.pitch
    b = _operand_rows(sm, b_buf, slots.get(b_buf.name, 0), b_at, what + " B")
    # lanes 0-15 hold A rows 0-15 of k columns 0-7, lanes 16-31 those of columns 8-15
    at = np.concatenate([a[:, :, :16, :], a[:, :, 16:, :]], axis=3)  # [units, ksteps, 16 rows, 16 k]
    at = at * (_steps(plan, k0) < plan.k // 16)[..., None]  # a ragged part's steps past the end: not run
    bm = _b_matrix(b, b_buf.transposed)
    prod = np.einsum("uqmk,uqkn->umn", at, bm)
    if plan.two:
        prod[(us.np_ * 16 + 8 >= plan.n), :, 8:] = 0.0  # `if (two) mma16816(...)`: the second n8 tile skipped
    return us, prod


def frag_store(low: KernelLowering, sm: Smem, i: int, us: Units, tiles: np.ndarray, dst: Buf) -> None:
    """``store_<i>``: each lane writes its fragment pairs (rows r0, r0 + 8) into its k part's copy."""
    plan = low.mmas[i]
    p = dst.pitch
    bs = dst.strides[0] if plan.batch > 1 else 0
    lane = LANES
    rows = (lane >> 2).reshape(1, 1, 1, -1) + np.array([0, 8]).reshape(1, 1, 2, 1)  # [u, h, rr, lane]
    cols = (np.array([0, 8]).reshape(1, 2, 1, 1) + 2 * (lane & 3).reshape(1, 1, 1, -1))
    rows, cols = np.broadcast_arrays(rows, cols)
    r = us.mt.reshape(-1, 1, 1, 1) * 16 + rows
    c = us.np_.reshape(-1, 1, 1, 1) * 16 + cols
    ok = r < plan.m
    if plan.n % 16:
        ok &= c < plan.n
    u = np.broadcast_to(np.arange(len(us.warp)).reshape(-1, 1, 1, 1), ok.shape)
    off = us.bt.reshape(-1, 1, 1, 1) * bs + r * p + c
    kpart = np.broadcast_to(us.kpart.reshape(-1, 1, 1, 1), ok.shape)
    rr, cc = np.broadcast_to(rows, ok.shape), np.broadcast_to(cols, ok.shape)
    pair = np.stack([tiles[u, rr, cc], tiles[u, rr, cc + 1]], axis=-1)
    if p % 2 == 0:  # st_f2: one 8-byte store per pair
        sm.write(dst, kpart[ok], off[ok], pair[ok], f"op {i} fragment store")
    else:
        for e in range(2):
            sm.write(dst, kpart[ok], off[ok] + e, pair[ok][:, e], f"op {i} fragment store")


def frag_rescale(low: KernelLowering, sm: Smem, i: int, c: int, us: Units, acc: np.ndarray, run_max: np.ndarray,
                 f: np.ndarray, slots: dict[str, int]) -> None:
    """``rescale_<i>``: acc ← acc·e^(m−m') + f·e^(c−m'), m' = max(m, c), per fragment row r < m."""
    plan = low.mmas[i]
    cb, tc = low.bufs[c], low.tiles[c]
    assert tc is not None
    cbs = cb.strides[0] if len(tc) == 3 and tc[0] > 1 else 0
    crs = cb.strides[-2] if tc[-2] > 1 else 0
    rows = us.mt.reshape(-1, 1) * 16 + np.arange(16).reshape(1, -1)
    ok = rows < plan.m
    cv = np.full(rows.shape, np.nan)
    cv[ok] = sm.read(cb, slots.get(cb.name, 0), (us.bt.reshape(-1, 1) * cbs + rows * crs)[ok], f"op {i} rescale shift")
    w, j = us.warp, us.slot
    m = run_max[w, j]
    mn = np.where(ok, np.fmax(m, cv), m)
    with np.errstate(invalid="ignore", over="ignore"):
        fa = np.where(m == mn, 1.0, np.exp(m - mn))
        fb = np.where(cv == mn, 1.0, np.exp(cv - mn))
    new = acc[w, j] * fa[:, :, None] + f * fb[:, :, None]
    acc[w, j] = np.where(ok[:, :, None], new, acc[w, j])
    run_max[w, j] = mn
