"""Input loaders: one device function per Load that copies a tile into shared memory with cp.async.

Each thread copies 16-byte vectors (8 halves or 4 floats) when the tile's rows allow it, else 8- or
4-byte pieces; consecutive threads take consecutive vectors of a row, so global reads coalesce.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from prism.codegen.lower import Buf, KernelLowering
from prism.codegen.render_expr import decompose, offset
from prism.ir import Load

COPY_FN = {16: "cp_async16", 8: "cp_async8", 4: "cp_async4"}


@dataclass(frozen=True)
class LoadInfo:
    op: int
    tensor: str
    buf: Buf
    fn: str  # device function name
    block_offset: str  # C expression: element offset of the block's first tile
    iter_stride: int  # elements between consecutive loop iterations' tiles (0: invariant)
    vec: int  # elements per copy
    ctype: str


def global_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(math.prod(shape[d + 1:]) for d in range(len(shape)))


def load_info(low: KernelLowering, i: int) -> LoadInfo:
    op = low.kernel.ops[i]
    assert isinstance(op, Load)
    shape = low.tensor_shapes[op.tensor]
    tile = low.tiles[i]
    assert tile is not None
    buf = low.bufs[i]
    gst = global_strides(shape)
    terms = []
    for a in range(len(shape)):
        size = shape[a]
        for p, g in enumerate(low.grid):
            if op.imap[p] == a:
                size //= g
                chunk = size * gst[a]
                terms.append(f"(int)blockIdx.{'xyz'[p]}" + (f" * {chunk}" if chunk != 1 else ""))
    block_offset = " + ".join(terms) if terms else "0"
    iter_stride = tile[op.fmap] * gst[op.fmap] if op.fmap is not None else 0
    es = buf.esize
    vec = 1
    for nbytes in (16, 8, 4):
        v = nbytes // es
        if v >= 1 and tile[-1] % v == 0 and shape[-1] % v == 0 and buf.pitch % v == 0:
            vec = v
            break
    ctype = "half_t" if buf.dtype == "half" else "float"
    return LoadInfo(i, op.tensor, buf, f"load_{buf.name}", block_offset, iter_stride, vec, ctype)


def render_loader(low: KernelLowering, info: LoadInfo) -> str:
    shape = low.tensor_shapes[info.tensor]
    tile = info.buf.shape
    gst = global_strides(shape)
    items = math.prod(tile) // info.vec
    nt = low.threads
    per = -(-items // nt)
    nbytes = info.vec * info.buf.esize
    decl, idx = decompose("e", tile, "t", info.vec)
    dst = offset(info.buf.strides, idx)
    src = offset(gst, idx)
    copy = (f"{COPY_FN[nbytes]}(dst + {dst}, src + {src});" if nbytes >= 4
            else f"dst[{dst}] = src[{src}];")
    guard = items % nt != 0
    body = [*decl, copy]
    lines = [
        f"// {info.tensor}{list(shape)} -> tile {list(tile)}: {items} copies of {nbytes} B over {nt} threads",
        f"__device__ __forceinline__ void {info.fn}({info.ctype}* dst, const {info.ctype}* __restrict__ src,"
        " const int tid) {",
        "#pragma unroll",
        f"  for (int j = 0; j < {per}; ++j) {{",
        f"    const int e = tid + j * {nt};",
    ]
    if guard:
        lines.append(f"    if (e < {items}) {{")
        lines += [f"      {b}" for b in body]
        lines.append("    }")
    else:
        lines += [f"    {b}" for b in body]
    lines += ["  }", "}"]
    return "\n".join(lines)
