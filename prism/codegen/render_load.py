"""Input loaders: one device function per Load that copies a tile into shared memory with cp.async.

Each thread copies 16-byte vectors (8 halves or 4 floats) when the tile's rows allow it, else 8- or
4-byte pieces; consecutive threads take consecutive vectors of a row, so global reads coalesce.
What is copied where (vector width, guard, tile origin) is the ``LoadPlan`` of the lowered IR.
"""

from __future__ import annotations

from prism.codegen.lower import global_strides
from prism.codegen.lowered import KernelLowering, LoadPlan, Sweep
from prism.codegen.render_expr import decompose, offset, swizzled_at
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


def render_loader(low: KernelLowering, info: LoadPlan) -> str:
    shape = low.tensor_shapes[info.tensor]
    tile = info.buf.shape
    sw = info.sweep
    nbytes = info.nbytes
    decl, idx = decompose("e", tile, "t", info.vec)
    dst = swizzled_at(info.buf, idx) if info.buf.swizzle else offset(info.buf.strides, idx)
    src = offset(global_strides(shape), idx)
    tails = low.tails
    ok = None if tails is None or info.op not in tails.loads else f"{idx[tails.loads[info.op][1]]} < lim"
    if shared_address(info):
        at = "dst" if dst == "0" else f"dst + ({dst}) * {info.buf.esize}"
        copy = (f"{COPY_FN[nbytes]}({at}, src + {src});" if ok is None else  # (a tail's zeros: the tile origin read)
                f"{COPY_FN[nbytes]}z({at}, {ok} ? src + {src} : src, {ok});")
        dtype = "unsigned"
    else:
        copy = f"dst[{dst}] = src[{src}];" if ok is None else f"dst[{dst}] = {ok} ? src[{src}] : ({info.ctype})0;"
        dtype = f"{info.ctype}*"
    lim = "" if ok is None else ", const int lim"
    lines = [
        f"// {info.tensor}{list(shape)} -> tile {list(tile)}: {sw.items} copies of {nbytes} B over {sw.threads} threads"
        + ("" if ok is None else "; zeros past the padded tail's valid elements"),
        f"__device__ __forceinline__ void {info.fn}({dtype} dst, const {info.ctype}* __restrict__ src,"
        f" const int tid{lim}) {{",
        "#pragma unroll",
        f"  for (int j = 0; j < {sw.per}; ++j) {{",
        f"    const int e = tid + j * {sw.threads};",
        *sweep_lines(sw, [*decl, copy]),
        "  }",
        "}",
    ]
    return "\n".join(lines)
