"""Tensor-core matmuls: ldmatrix from padded shared-memory tiles, mma.sync m16n8k16, float32 fragments.

A is a row-major [m, k] half tile (``ldmatrix.x4``; rows past m are clamped to the last row, so a
tile of 8 rows wastes nothing beyond the 16-row mma), B a row-major [k, n] half tile
(``ldmatrix.x4.trans``, two n8 tiles per load) or, for a transposed load (``Buf.transposed``), the
[n, k] tile as the tensor stores it (``ldmatrix.x4`` without .trans: rows n, 16-byte chunks of k,
addressed like A). Each warp owns units of 16 rows x 16 columns and a
share of the k-steps (see ``MmaPlan``); fragments stay in registers (an accumulator across the
for-loop) or are written to a float32 tile, one partial copy per k-split.
"""

from __future__ import annotations

from prism.codegen.lowered import Buf, KernelLowering, MmaPlan
from prism.codegen.render_expr import swizzled_offset

KCHAINS = 2  # independent accumulator sets per warp in the k-loop


def frag_type(plan: MmaPlan) -> str:
    return f"float[{plan.per_warp}][2][4]"


def _unit_lines(plan: MmaPlan, nw: int, need_bt: bool) -> tuple[list[str], str | None]:
    """Declarations of u / bt / mt / np and the unit guard (None when every unit index is valid)."""
    if plan.blocked:  # slot j of this warp's tile in the wm x wn grid (one batch: no bt)
        assert not need_bt, "warp tiles: one batch"
        return [f"const int mt = {_tile_row(plan, f'j / {plan.wt_n}')};",
                f"const int np = {_tile_pair(plan, f'j % {plan.wt_n}')};"], None
    lines = []
    if plan.ksplit > 1:
        lines.append(f"const int u = warp % {plan.units};")
        guard = None
    else:
        lines.append(f"const int u = warp + j * {nw};")
        guard = None if plan.units % nw == 0 else f"u < {plan.units}"
    lines += [
        f"const int mt = (u / {plan.npairs}) % {plan.mtiles};" if plan.mtiles > 1 else "const int mt = 0;",
        f"const int np = u % {plan.npairs};" if plan.npairs > 1 else "const int np = 0;",
    ]
    if need_bt:
        lines.insert(1, f"const int bt = u / {plan.mtiles * plan.npairs};")
    return lines, guard


def _kpart(plan: MmaPlan, nw: int) -> list[str]:
    if plan.ksplit == 1:
        return []
    lines = [f"const int kpart = warp / {plan.kgroup};"]
    if plan.kgroup * plan.ksplit < nw:
        lines.append(f"if (kpart >= {plan.ksplit}) return;")
    return lines


def _a_address(plan: MmaPlan, a_buf: Buf, a_bs: int) -> tuple[list[str], str]:
    """A lane's A row address: rows ``mt * 16 + (lane & 15)`` (clamped to m), chunk ``lane >> 4``."""
    row = f"imin(mt * 16 + (lane & 15), {plan.m - 1})"
    base = f"A + {'bt * ' + str(a_bs) + ' + ' if a_bs else ''}"
    return _row_chunks(a_buf, base, row, "(lane >> 4)", "a", "A")


def _row_chunks(buf: Buf, base: str, row: str, chunk: str, var: str, label: str) -> tuple[list[str], str]:
    """Declarations of a lane's ldmatrix row address in a tile of k-chunk rows (A, or a transposed B),
    and its address at k-step ``t``: 16-byte chunk ``2t + chunk`` of row ``row``; in a swizzled tile
    that chunk XOR the row's key (the key is per row, the chunk moves with t: one XOR per k-step)."""
    if not buf.swizzle:
        return [f"const unsigned {var}_addr = smem_u32({base}{row} * {buf.pitch} + {chunk} * 8);"], \
            f"{var}_addr + t * 32"
    per, keys = buf.swizzle_key()
    key = f"{var}_row" if per == 1 else f"({var}_row / {per})"
    return [f"const int {var}_row = {row};",
            f"const unsigned {var}_addr = smem_u32({base}{var}_row * {buf.pitch});",
            f"const int {var}_key = {key} % {keys};  // swizzled {label}: chunk c of this row is at c ^ {var}_key"], \
        f"{var}_addr + (((t * 2 + {chunk}) ^ {var}_key) << 4)"


def _b_address(plan: MmaPlan, b_buf: Buf, b_bs: int) -> tuple[list[str], str]:
    """A row-major B tile [k, n], read with ldmatrix .trans: lane rows k 0-15, columns n 0-7 / 8-15; a
    swizzled tile's key repeats every 8 rows, so one lane's chunk is the same at every k-step."""
    b_col = f"imin(np * 16 + (lane >> 4) * 8, {plan.n - 8})" if plan.two else "np * 16 + (lane >> 4) * 8"
    b_row = "((lane & 7) + ((lane >> 3) & 1) * 8)"
    b_off = swizzled_offset(b_buf, b_row, b_col) if b_buf.swizzle else f"{b_row} * {b_buf.pitch} + {b_col}"
    return [f"const unsigned b_addr = smem_u32(B + {'bt * ' + str(b_bs) + ' + ' if b_bs else ''}{b_off});"], \
        f"b_addr + t * {16 * b_buf.pitch * 2}"


def _bt_address(plan: MmaPlan, b_buf: Buf, b_bs: int) -> tuple[list[str], str]:
    """A transposed B tile [n, k]: lanes 0-7 / 8-15 address rows n 0-7 at k chunks 0 / 1, lanes 16-31
    rows n 8-15 likewise, so ldmatrix.x4 gives b[0], b[1] of the first n8 tile and b[2], b[3] of
    the second (the mma's B fragment: k pairs of one column n per lane)."""
    row = "(np * 16 + (lane & 7) + ((lane >> 4) << 3))"  # one operand: the address multiplies it
    if plan.two:
        row = f"imin({row}, {plan.n - 1})"
    base = f"B + {'bt * ' + str(b_bs) + ' + ' if b_bs else ''}"
    return _row_chunks(b_buf, base, row, "((lane >> 3) & 1)", "b", "B^T")


def _tile_row(plan: MmaPlan, r: str) -> str:
    """Unit row ``mt`` of row ``r`` of this warp's tile (``MmaPlan.blocked``; with a k split the warps
    of each k part cover the grid: ``warp % kgroup``)."""
    warp = f"(warp % {plan.kgroup})" if plan.ksplit > 1 else "warp"
    return f"({warp} / {plan.wn}) * {plan.wt_m} + {r}"


def _tile_pair(plan: MmaPlan, c: str) -> str:
    """Column pair ``np`` of pair ``c`` of this warp's tile."""
    return f"(warp % {plan.wn}) * {plan.wt_n} + {c}"


def _k_unroll(plan: MmaPlan) -> str:
    return "#pragma unroll" if plan.ksteps <= 32 else "#pragma unroll 8"  # even: q & 1 stays static


def _b_ldsm(b_buf: Buf) -> str:
    """The B operand's ldmatrix: a transposed tile [n, k] is addressed like A (no .trans)."""
    return "ldsm_x4" if b_buf.transposed else "ldsm_x4_t"


def _blocked_loads(plan: MmaPlan, a_buf: Buf, b_buf: Buf, a: str, b: str) -> list[str]:
    """One k-step's ldmatrix of a warp tile (k-step ``t``): A per unit row into ``a[r]``, B per column
    pair into ``b[c]`` (``a``/``b``: the fragment arrays, with a set index when prefetching)."""
    a_decl, a_step = _a_address(plan, a_buf, 0)
    b_decl, b_step = (_bt_address if b_buf.transposed else _b_address)(plan, b_buf, 0)
    return [
        "#pragma unroll",
        f"for (int r = 0; r < {plan.wt_m}; ++r) {{",
        f"  const int mt = {_tile_row(plan, 'r')};",
        *[f"  {x}" for x in a_decl],
        f"  ldsm_x4({a}[r], {a_step});",
        "}",
        "#pragma unroll",
        f"for (int c = 0; c < {plan.wt_n}; ++c) {{",
        f"  const int np = {_tile_pair(plan, 'c')};",
        *[f"  {x}" for x in b_decl],
        f"  {_b_ldsm(b_buf)}({b}[c], {b_step});",
        "}",
    ]


def _blocked_mmas(plan: MmaPlan, a: str, b: str) -> list[str]:
    """Every unit's two mma of one k-step from the tile's fragments ``a[r]``, ``b[c]``."""
    b_mma = f"if ({_tile_pair(plan, 'c')} * 16 + 8 < {plan.n}) " if plan.two else ""
    return [
        "#pragma unroll",
        f"for (int r = 0; r < {plan.wt_m}; ++r) {{",
        "#pragma unroll",
        f"  for (int c = 0; c < {plan.wt_n}; ++c) {{",
        f"    mma16816(acc[r * {plan.wt_n} + c][0], {a}[r], {b}[c][0], {b}[c][1]);",
        f"    {b_mma}mma16816(acc[r * {plan.wt_n} + c][1], {a}[r], {b}[c][2], {b}[c][3]);",
        "  }",
        "}",
    ]


def _indented(lines: list[str], by: str) -> list[str]:
    """``lines`` indented ``by``, but for pragmas (kept in column 0 like the rest of the renderer)."""
    return [x if x.startswith("#pragma") else by + x for x in lines]


def _blocked_mma(plan: MmaPlan, a_buf: Buf, b_buf: Buf, nw: int) -> list[str]:
    """The body of ``mma_<i>`` over a warp tile (``MmaPlan.blocked``): per k-step, one ldmatrix of A
    per unit row and one of B per column pair of the tile, then every unit's two mma from those
    fragments (wt_m x wt_n x 2 independent chains: no second chain needed); with a k split, over this
    warp's k part (``MmaPlan.kgroup``). With ``MmaPlan.prefetch`` two fragment sets alternate: k-step
    t + 1's ldmatrix are issued before k-step t's mma, so the mma wait on no shared-memory load but the first."""
    assert not plan.ragged, "warp tiles split the k-steps evenly (lower._k_split_tiles)"
    frags = f"unsigned a{{}}[{plan.wt_m}][4], b{{}}[{plan.wt_n}][4];"
    k0 = f"kpart * {plan.ksteps} + " if plan.ksplit > 1 else ""  # this warp's share of the k-steps
    if not plan.prefetch:
        steps = ([f"for (int t = 0; t < {plan.ksteps}; ++t) {{"] if not k0 else
                 [f"for (int q = 0; q < {plan.ksteps}; ++q) {{", f"  const int t = {k0}q;"])
        return [*_kpart(plan, nw), _k_unroll(plan), *steps, "  " + frags.format("", ""),
                *_indented(_blocked_loads(plan, a_buf, b_buf, "a", "b"), "  "),
                *_indented(_blocked_mmas(plan, "a", "b"), "  "), "}"]
    return [
        *_kpart(plan, nw),
        frags.format("[2]", "[2]") + "  // two fragment sets: k-step t + 1 loads while t multiplies",
        "{",
        f"  const int t = {k0}0;",
        *_indented(_blocked_loads(plan, a_buf, b_buf, "a[0]", "b[0]"), "  "),
        "}",
        _k_unroll(plan),
        f"for (int q = 0; q < {plan.ksteps}; ++q) {{",
        f"  if (q + 1 < {plan.ksteps}) {{",
        f"    const int t = {k0}q + 1;",
        *_indented(_blocked_loads(plan, a_buf, b_buf, "a[(q + 1) & 1]", "b[(q + 1) & 1]"), "    "),
        "  }",
        *_indented(_blocked_mmas(plan, "a[q & 1]", "b[q & 1]"), "  "),
        "}",
    ]


def render_mma(low: KernelLowering, i: int) -> str:
    """``mma_<i>(acc, A, B, warp, lane)``: acc += A @ B over this warp's units and k-steps."""
    plan = low.mmas[i]
    a_buf, b_buf = low.operands[plan.a], low.operands[plan.b]
    assert not (a_buf.swizzle and plan.a_bstride) and not (b_buf.swizzle and plan.b_bstride), "swizzle: one batch"
    nw = low.warps
    if plan.blocked:
        return "\n".join([
            f"// op {i}: {plan.m}x{plan.k} @ {plan.k}x{plan.n}: {plan.units} units of 16x16, warp tiles of "
            f"{plan.wt_m}x{plan.wt_n} on a {plan.wm}x{plan.wn} grid of {nw} warps, {plan.ksteps} k-steps",
            f"__device__ __forceinline__ void mma_{i}(float (&acc)[{plan.per_warp}][2][4], const half_t* A,"
            " const half_t* B, const int warp, const int lane) {",
            *[f"  {x}" for x in _blocked_mma(plan, a_buf, b_buf, nw)],
            "}"])
    a_bs = a_buf.strides[0] if plan.a_bstride else 0
    b_bs = b_buf.strides[0] if plan.b_bstride else 0
    unit, guard = _unit_lines(plan, nw, bool(a_bs or b_bs))
    two = plan.two
    k0 = "kpart * " + str(plan.ksteps) if plan.ksplit > 1 else "0"
    unroll = _k_unroll(plan)
    a_decl, a_step = _a_address(plan, a_buf, a_bs)
    b_decl, b_step = (_bt_address if b_buf.transposed else _b_address)(plan, b_buf, b_bs)
    b_load = f"  {_b_ldsm(b_buf)}(b, {b_step});"
    body = [*unit, *a_decl, *b_decl]
    if two:
        body.append(f"const bool two = np * 16 + 8 < {plan.n};")
    chains = min(KCHAINS, plan.ksteps)
    dst = "c[q & 1]" if chains == 2 else "acc[j]"
    if chains == 2:
        body.append("float c[2][2][4] = {};  // two independent accumulation chains (mma latency)")
    body += [
        unroll,
        f"for (int q = 0; q < {plan.ksteps}; ++q) {{",
        f"  const int t = {k0} + q;" if plan.ksplit > 1 else "  const int t = q;",
        *([f"  if (t >= {plan.k // 16}) break;  // the last k part's share is shorter"] if plan.ragged else []),
        "  unsigned a[4], b[4];",
        f"  ldsm_x4(a, {a_step});",
        b_load,
        f"  mma16816({dst}[0], a, b[0], b[1]);",
        f"  if (two) mma16816({dst}[1], a, b[2], b[3]);" if two else f"  mma16816({dst}[1], a, b[2], b[3]);",
        "}",
    ]
    if chains == 2:
        body += [
            "#pragma unroll",
            "for (int h = 0; h < 2; ++h) {",
            "#pragma unroll",
            "  for (int r = 0; r < 4; ++r) acc[j][h][r] += c[0][h][r] + c[1][h][r];",
            "}",
        ]
    lines = [
        f"// op {i}: [{plan.batch}x]{plan.m}x{plan.k} @ {plan.k}x{plan.n}: {plan.units} units of 16x16 over {nw} warps"
        f" ({plan.per_warp} per warp), k split {plan.ksplit} ways, {plan.ksteps} k-steps per warp",
        f"__device__ __forceinline__ void mma_{i}(float (&acc)[{plan.per_warp}][2][4], const half_t* A,"
        " const half_t* B, const int warp, const int lane) {",
        *[f"  {x}" for x in _kpart(plan, nw)],
        "#pragma unroll",
        f"  for (int j = 0; j < {plan.per_warp}; ++j) {{",
    ]
    lines.append(f"    {body[0]}")
    if guard:
        lines.append(f"    if ({guard}) {{")
        lines += [f"      {x}" for x in body[1:]]
        lines.append("    }")
    else:
        lines += [f"    {x}" for x in body[1:]]
    lines += ["  }", "}"]
    return "\n".join(lines)


def render_frag_store(low: KernelLowering, i: int, dst: Buf) -> str:
    """``store_<i>(acc, D, warp, lane)``: write this warp's fragments into its partial copy of D."""
    plan = low.mmas[i]
    nw = low.warps
    p = dst.pitch
    bs = dst.strides[0] if plan.batch > 1 else 0
    unit, guard = _unit_lines(plan, nw, bool(bs))
    pair = p % 2 == 0
    body = [*unit]
    body += [
        "const int r0 = mt * 16 + (lane >> 2);",
        "#pragma unroll",
        "for (int h = 0; h < 2; ++h) {",
        "  const int col = np * 16 + h * 8 + 2 * (lane & 3);",
        f"  float* d = D + {'bt * ' + str(bs) + ' + ' if bs else ''}r0 * {p} + col;",
    ]
    cond_col = f"col < {plan.n} && " if plan.n % 16 else ""
    if pair:
        body += [
            f"  if ({cond_col}r0 < {plan.m}) st_f2(d, acc[j][h][0], acc[j][h][1]);",
            f"  if ({cond_col}r0 + 8 < {plan.m}) st_f2(d + {8 * p}, acc[j][h][2], acc[j][h][3]);",
        ]
    else:
        body += [
            f"  if ({cond_col}r0 < {plan.m}) {{ d[0] = acc[j][h][0]; d[1] = acc[j][h][1]; }}",
            f"  if ({cond_col}r0 + 8 < {plan.m}) {{ d[{8 * p}] = acc[j][h][2]; d[{8 * p + 1}] = acc[j][h][3]; }}",
        ]
    body.append("}")
    lines = [
        f"__device__ __forceinline__ void store_{i}(const float (&acc)[{plan.per_warp}][2][4], float* D,"
        " const int warp, const int lane) {",
        *[f"  {x}" for x in _kpart(plan, nw)],
    ]
    if plan.ksplit > 1:
        lines.append(f"  D += kpart * {dst.copy_elems};")
    lines += ["#pragma unroll", f"  for (int j = 0; j < {plan.per_warp}; ++j) {{"]
    lines.append(f"    {body[0]}")
    if guard:
        lines.append(f"    if ({guard}) {{")
        lines += [f"      {x}" for x in body[1:]]
        lines.append("    }")
    else:
        lines += [f"    {x}" for x in body[1:]]
    lines += ["  }", "}"]
    return "\n".join(lines)


def render_frag_rescale(low: KernelLowering, i: int, c: int) -> str:
    """``rescale_<i>(acc, f, m, C, warp, lane)``: the online-softmax update of matmul fragments,
    ``acc ← acc·e^(m−m') + f·e^(c−m')`` with ``m' = max(m, c)`` per row (``C``: the row-wise shift
    tile of op ``c`` in shared memory; ``m``: the running max of each fragment row, r0 and r0 + 8)."""
    plan = low.mmas[i]
    nw = low.warps
    cb = low.bufs[c]
    tc = low.tiles[c]
    assert tc is not None and tc[-1] == 1
    cbs = cb.strides[0] if len(tc) == 3 and tc[0] > 1 else 0
    crs = cb.strides[-2] if tc[-2] > 1 else 0
    unit, guard = _unit_lines(plan, nw, bool(cbs))
    row = f"{'bt * ' + str(cbs) + ' + ' if cbs else ''}"
    body = [*unit, "#pragma unroll", "for (int rr = 0; rr < 2; ++rr) {",
            "  const int r = mt * 16 + (lane >> 2) + rr * 8;",
            f"  if (r >= {plan.m}) continue;",
            f"  const float cv = C[{row}r * {crs}];",
            "  const float mn = fmaxf(m[j][rr], cv);",
            "  const float a = m[j][rr] == mn ? 1.0f : __expf(m[j][rr] - mn);",
            "  const float b = cv == mn ? 1.0f : __expf(cv - mn);",
            "  m[j][rr] = mn;",
            "#pragma unroll",
            "  for (int h = 0; h < 2; ++h) {",
            "    acc[j][h][2 * rr] = acc[j][h][2 * rr] * a + f[j][h][2 * rr] * b;",
            "    acc[j][h][2 * rr + 1] = acc[j][h][2 * rr + 1] * a + f[j][h][2 * rr + 1] * b;",
            "  }",
            "}"]
    lines = [
        f"__device__ __forceinline__ void rescale_{i}(float (&acc)[{plan.per_warp}][2][4], "
        f"const float (&f)[{plan.per_warp}][2][4], float (&m)[{plan.per_warp}][2], const float* C, const int warp, "
        "const int lane) {",
        *[f"  {x}" for x in _kpart(plan, nw)],
        "#pragma unroll", f"  for (int j = 0; j < {plan.per_warp}; ++j) {{",
    ]
    lines.append(f"    {body[0]}")
    inner = body[1:]
    if guard:
        lines.append(f"    if ({guard}) {{")
        lines += [f"      {x}" for x in inner]
        lines.append("    }")
    else:
        lines += [f"    {x}" for x in inner]
    lines += ["  }", "}"]
    return "\n".join(lines)
