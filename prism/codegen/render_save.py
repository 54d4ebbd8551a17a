"""Output savers and materialising passes.

A saver evaluates the (inlined) elementwise chain of its value for ``vec`` consecutive elements of
a row and writes them with one 16-byte store where alignment allows (8 halves / 4 floats). A
materialising pass writes a value into a half tile in shared memory (a matmul operand).
"""

from __future__ import annotations

import math

from prism.codegen.lower import Buf, KernelLowering
from prism.codegen.render_expr import Exprs, decompose, offset, with_last
from prism.codegen.render_load import global_strides
from prism.codegen.render_reduce import _indent
from prism.ir import Save


def save_vec(low: KernelLowering, i: int) -> int:
    op = low.kernel.ops[i]
    assert isinstance(op, Save)
    tile = low.tiles[op.x]
    assert tile is not None
    shape = low.tensor_shapes[op.tensor]
    es = 2 if low.tensor_dtypes[op.tensor] != "float32" else 4
    for v in (16 // es, 8 // es, 4 // es, 2 // es, 1):
        if v >= 1 and tile[-1] % v == 0 and shape[-1] % v == 0:
            return v
    return 1


def render_save(low: KernelLowering, ex: Exprs, i: int) -> list[str]:
    op = low.kernel.ops[i]
    assert isinstance(op, Save)
    tile = low.tiles[op.x]
    assert tile is not None
    shape = low.tensor_shapes[op.tensor]
    half = low.tensor_dtypes[op.tensor] != "float32"
    vec = save_vec(low, i)
    gst = global_strides(shape)
    terms = []
    for p, a in enumerate(op.omap):
        if a is not None:
            chunk = tile[a] * gst[a]
            terms.append(f"(int)blockIdx.{'xyz'[p]}" + (f" * {chunk}" if chunk != 1 else ""))
    base = " + ".join(terms) if terms else "0"
    items = math.prod(tile) // vec
    nt = low.threads
    per = -(-items // nt)
    decl, idx = decompose("e", tile, f"s{i}_", vec)
    vals = [f"const float v{k} = {ex.read(op.x, with_last(idx, k))};" for k in range(vec)]
    fn = ("st_h" if half else "st_f") + str(vec)
    store = f"{fn}({_ident_ptr(op.tensor)} + blk_{i} + {offset(gst, idx)}, {', '.join(f'v{k}' for k in range(vec))});"
    body = [*decl, *vals, store]
    lines = [
        f"// save {op.tensor}{list(shape)} <- tile {list(tile)}, omap {op.omap}: {vec}-element stores",
        "{",
        f"  const int blk_{i} = {base};",
        "#pragma unroll",
        f"  for (int j = 0; j < {per}; ++j) {{",
        f"    const int e = tid + j * {nt};",
    ]
    if items % nt:
        lines += [f"    if (e < {items}) {{", *_indent(body, 6), "    }"]
    else:
        lines += _indent(body, 4)
    lines += ["  }", "}"]
    return lines


def render_materialise(low: KernelLowering, ex: Exprs, i: int, dst: Buf, *, own: bool) -> list[str]:
    """Write value ``i`` into the half tile ``dst`` (``own``: dst is i's storage, so compute i's op)."""
    tile = low.tiles[i]
    assert tile is not None
    n = math.prod(tile)
    nt = low.threads
    per = -(-n // nt)
    decl, idx = decompose("e", tile, f"m{i}_")
    val = ex.define(i, idx) if own else ex.read(i, idx)
    body = [*decl, f"{dst.name}[{offset(dst.strides, idx)}] = hstore({val});"]
    lines = [f"// {dst.name} = half(op {i}) [{', '.join(map(str, tile))}]", "#pragma unroll 4",
             f"for (int j = 0; j < {per}; ++j) {{", f"  const int e = tid + j * {nt};"]
    if n % nt:
        lines += [f"  if (e < {n}) {{", *_indent(body, 4), "  }"]
    else:
        lines += _indent(body, 2)
    lines.append("}")
    return lines


def _ident_ptr(tensor: str) -> str:
    from prism.codegen.lower import ident

    return ident(tensor)
