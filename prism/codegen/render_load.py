"""Input loaders: one device function per Load that copies a tile into shared memory with cp.async.

Each thread copies 16-byte vectors (8 halves or 4 floats) when the tile's rows allow it, else 8- or
4-byte pieces; consecutive threads take consecutive vectors of a row, so global reads coalesce.
What is copied where (vector width, guard, tile origin) is the ``LoadPlan`` of the lowered IR.
"""

from __future__ import annotations

from prism.codegen.lower import global_strides
from prism.codegen.lowered import Buf, KernelLowering, LoadPlan, Sweep, item_digits
from prism.codegen.render_expr import decompose, offset, paren, swizzled_at, with_at
from prism.codegen.tails import Origin

COPY_FN = {16: "cp_async16", 8: "cp_async8", 4: "cp_async4"}


def block_origin(terms: tuple[tuple[int, int], ...]) -> str:
    """C expression of a tile's first element: the sum of the block's coordinates (``bid``, the block
    index the kernel body runs as) times elements per block index."""
    parts = [f"(int)bid.{'xyz'[p]}" + (f" * {chunk}" if chunk != 1 else "") for p, chunk in terms]
    return " + ".join(parts) if parts else "0"


def valid_from(valid: int, o: Origin, it: str = "it") -> str:
    """C expression: a padded tail's valid elements from the start of a tile at ``o`` (``it``: the loop
    iteration whose tile it is; ``prism.codegen.tails``)."""
    parts = ([block_origin(o.terms)] if o.terms else []) + ([f"{it} * {o.step}"] if o.step else [])
    return f"({valid} - ({' + '.join(parts)}))" if parts else str(valid)


def tail_conds(low: KernelLowering, i: int, idx: list[str]) -> list[str]:
    """The C conditions that element ``idx`` of value ``i``'s tile is before a padded tail's end (none
    without a tail along it)."""
    tails = low.tails
    return [] if tails is None else [f"{idx[a]} < {valid_from(tails.valid, o)}" for a, o in tails.padded_axes(i)]


def sweep_lines(sw: Sweep, body: list[str], var: str = "e", pad: int = 4) -> list[str]:
    """The body of one sweep iteration at indent ``pad``, inside the guard ``var < bound`` if any."""
    ind = " " * pad
    if sw.bound is None:
        return [ind + b for b in body]
    return [f"{ind}if ({var} < {sw.bound}) {{", *[f"{ind}  {b}" for b in body], f"{ind}}}"]


def rotation_decl(low: KernelLowering) -> list[str]:
    """``rot``: the first iteration whose tiles this block loads (``KernelLowering.rotation``)."""
    if low.rotate == 1:
        return []
    terms, stride = [], 1
    for p, g in enumerate(low.grid):
        if g > 1:
            terms.append(f"{stride}ull * bid.{'xyz'[p]}" if stride > 1 else f"(unsigned long long)bid.{'xyz'[p]}")
        stride *= g
    bid = " + ".join(terms) or "0ull"
    r = low.rotate
    return [f"// loop order rotated over {r} phases of blocks: tiles of iteration (it + rot) % {low.loop}",
            f"const int rot = (int)(({bid}) * {r} / {low.blocks}) * {low.loop} / {r};"]


def tile_iter(low: KernelLowering, it: str, name: str) -> tuple[list[str], str]:
    """(declarations, index): the loop iteration whose tiles are loaded as stage ``it`` (``it`` itself
    unless the loop order is rotated; then ``name``)."""
    if low.rotate == 1:
        return [], it
    return [f"const int {name} = {it} + rot < {low.loop} ? {it} + rot : {it} + rot - {low.loop};"], name


def shared_address(info: LoadPlan) -> bool:
    """Whether the loader copies with cp.async and takes its tile as a 32-bit shared-memory byte address
    (``smem_u32``; the address arithmetic stays 32-bit), else as a pointer (element-wise copies)."""
    return info.nbytes >= 4


def _item_addresses(low: KernelLowering, info: LoadPlan) -> tuple[list[str], list[str], str, str]:
    """(declarations, tile indices, shared element offset, global element offset) of loader item ``e``."""
    decl, idx = decompose("e", info.buf.shape, "t", info.vec)
    dst = swizzled_at(info.buf, idx) if info.buf.swizzle else offset(info.buf.strides, idx)
    return decl, idx, dst, offset(global_strides(low.tensor_shapes[info.tensor]), idx)


def _shared_at(info: LoadPlan, dst: str) -> str:
    """The 32-bit shared byte address of element offset ``dst`` past the tile's address ``dst``."""
    return "dst" if dst == "0" else f"dst + ({dst}) * {info.buf.esize}"


def render_loader(low: KernelLowering, info: LoadPlan) -> str:
    shape = low.tensor_shapes[info.tensor]
    tile = info.buf.shape
    sw = info.sweep
    nbytes = info.nbytes
    decl, idx, dst, src = _item_addresses(low, info)
    tails = low.tails
    tail_axis = None if tails is None or info.op not in tails.loads else tails.loads[info.op][1]
    ok = None if tail_axis is None else f"{idx[tail_axis]} < lim"
    if shared_address(info):
        at = _shared_at(info, dst)
        copy = (f"{COPY_FN[nbytes]}({at}, src + {src});" if ok is None else  # (a tail's zeros: the tile origin read)
                f"{COPY_FN[nbytes]}z({at}, {ok} ? src + {src} : src, {ok});")
        dtype = "unsigned"
    else:
        copy = f"dst[{dst}] = src[{src}];" if ok is None else f"dst[{dst}] = {ok} ? src[{src}] : ({info.ctype})0;"
        dtype = f"{info.ctype}*"
    lim = "" if ok is None else ", const int lim"
    if info.stepped and shared_address(info):
        body = _stepped_copies(info, global_strides(shape), tail_axis)
    else:
        body = ["#pragma unroll", f"  for (int j = 0; j < {sw.per}; ++j) {{", f"    const int e = tid + j * {sw.threads};",
                *sweep_lines(sw, [*decl, copy]), "  }"]
    lines = [
        f"// {info.tensor}{list(shape)} -> tile {list(tile)}: {sw.items} copies of {nbytes} B over {sw.threads} threads"
        + ("" if ok is None else "; zeros past the padded tail's valid elements"),
        f"__device__ __forceinline__ void {info.fn}({dtype} dst, const {info.ctype}* __restrict__ src,"
        f" const int tid{lim}) {{",
        *body,
        "}",
    ]
    return "\n".join(lines)


def carried_fn(info: LoadPlan) -> str:
    """The device function that fills a thread's carried copy addresses (``KernelLowering.carried``)."""
    return f"addr_{info.fn}"


def render_carried_addresses(low: KernelLowering, info: LoadPlan) -> str:
    """``KernelLowering.carried``: each of a thread's copies of ``info``'s tile as a global pointer and a
    32-bit shared address (item ``tid + j * threads``, indexed as the loader indexes it), for the loop
    to copy at them plus literals and to advance the pointers once a ring turn."""
    sw = info.sweep
    decl, _, dst, src = _item_addresses(low, info)
    return "\n".join([
        f"// {info.tensor}: each thread's {sw.per} copies of the tile as carried addresses (global, shared)",
        f"__device__ __forceinline__ void {carried_fn(info)}(const {info.ctype}* (&p)[{sw.per}], unsigned (&d)[{sw.per}],"
        f" const unsigned dst, const {info.ctype}* __restrict__ src, const int tid) {{",
        "#pragma unroll", f"  for (int j = 0; j < {sw.per}; ++j) {{", f"    const int e = tid + j * {sw.threads};",
        *[f"    {line}" for line in decl], f"    p[j] = src + {src};", f"    d[j] = {_shared_at(info, dst)};", "  }", "}"])


def _stepped_copies(info: LoadPlan, gst: tuple[int, ...], tail_axis: int | None) -> list[str]:
    """A stepped loader's body (``LoadPlan.stepped``): thread ``tid``'s first addresses, then copy ``j``
    at them plus the offsets of item ``j * threads``, each a literal (``lowered.carry_free``: item
    ``tid + j * threads`` is item ``tid`` moved by it). A swizzled destination keeps the literal only
    where the move leaves the chunk permutation as it is, else its address is written out."""
    sw, buf, tile = info.sweep, info.buf, info.buf.shape
    decl, idx = decompose("tid", tile, "t", info.vec)
    dst0 = swizzled_at(buf, idx) if buf.swizzle else offset(buf.strides, idx)
    out = [*decl, f"const {info.ctype}* const s = src + {offset(gst, idx)};",
           "const unsigned d = dst" + ("" if dst0 == "0" else f" + ({dst0}) * {buf.esize}") + ";"]
    for j in range(sw.per):
        first = j * sw.threads
        step = item_digits(tile, info.vec, first)
        moved = list(idx)
        for a, k in enumerate(step):
            moved = with_at(moved, a, k)
        s_at = _plus("s", sum(k * g for k, g in zip(step, gst, strict=True)))
        d_step = _dst_step(buf, step)
        d_at = (_plus("d", d_step * buf.esize) if d_step is not None
                else f"dst + ({swizzled_at(buf, moved)}) * {buf.esize}")
        fn = COPY_FN[info.nbytes]
        if tail_axis is None:
            copy = f"{fn}({d_at}, {s_at});"
        else:
            cond = f"{paren(moved[tail_axis])} < lim"
            copy = f"{fn}z({d_at}, {cond} ? {s_at} : src, {cond});"
        left = sw.threads if sw.bound is None else sw.bound - first  # threads with an item at this j
        out.append(copy if left >= sw.threads else f"if (tid < {left}) {copy}")
    return ["  " + line for line in out]


def _plus(base: str, k: int) -> str:
    return base if k == 0 else f"{base} + {k}"


def _dst_step(buf: Buf, step: tuple[int, ...]) -> int | None:
    """The element offset in shared memory that moving an index by ``step`` adds, or None where it
    depends on the index (a swizzled tile's rows moved to another chunk permutation)."""
    if not buf.swizzle:
        return sum(k * s for k, s in zip(step, buf.strides, strict=True))
    per, keys = buf.swizzle_key()
    rows, cols = step[-2], step[-1]
    width = keys * buf.chunk
    if rows % (per * keys) or cols % width or width & (width - 1):
        return None
    return sum(k * s for k, s in zip(step[:-2], buf.strides[:-2], strict=True)) + rows * buf.pitch + cols
