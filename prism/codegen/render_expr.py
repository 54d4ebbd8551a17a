"""Elementwise expressions over tiles: how a value of the block graph is read at a tile index.

Materialised values are read from their shared-memory tile (partial copies added); elementwise
ops are inlined, so a chain of them is computed in registers wherever it is consumed. Broadcasting
follows NumPy: a size-1 dim of an operand is read at index 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import assert_never

from prism.codegen.lowered import Buf, KernelLowering, Storage, Store, stored_index
from prism.ir import Accum, BinaryOp, Load, MatmulOp, ReduceOp, Save, UnaryOp
from prism.ops import Binary, Unary

UNARY_C: dict[Unary, str] = {
    Unary.EXP: "__expf({x})",
    Unary.SILU: "prism_silu({x})",
    Unary.GELU: "prism_gelu({x})",
    Unary.SQRT: "sqrtf({x})",
    Unary.RSQRT: "rsqrtf({x})",
    Unary.SQUARE: "prism_sq({x})",
    Unary.NEG: "(-{x})",
    Unary.SCALE: "({x} * {c})",
    Unary.ADD_SCALAR: "({x} + {c})",
    Unary.RELU: "prism_relu({x})",
    Unary.ABS: "fabsf({x})",
    Unary.TANH: "tanhf({x})",
    Unary.SIGMOID: "prism_sigmoid({x})",
    Unary.LOG: "__logf({x})",
    Unary.GELU_ERF: "prism_gelu_erf({x})",
    Unary.ERF: "erff({x})",
    Unary.MAX_SCALAR: "prism_max({x}, {c})",
    Unary.MIN_SCALAR: "prism_min({x}, {c})",
}

BINARY_C: dict[Binary, str] = {
    Binary.ADD: "({a} + {b})",
    Binary.SUB: "({a} - {b})",
    Binary.MUL: "({a} * {b})",
    Binary.DIV: "({a} / {b})",
    Binary.MAXIMUM: "prism_max({a}, {b})",
    Binary.MINIMUM: "prism_min({a}, {b})",
}


def flt(v: float) -> str:
    """A float literal in C (float32 precision, always with a dot or an exponent)."""
    s = f"{float(v):.9g}"
    if not any(ch in s for ch in ".en"):
        s += ".0"
    return s + "f"


def offset(strides: Sequence[int], idx: Sequence[str]) -> str:
    """C expression of the element offset of ``idx`` (index strings, "0" for a fixed zero)."""
    terms = []
    for s, i in zip(strides, idx, strict=True):
        if i == "0":
            continue
        term = i if _atomic(i) else f"({i})"
        terms.append(term if s == 1 else f"{term} * {s}")
    return " + ".join(terms) if terms else "0"


def _atomic(s: str) -> bool:
    return s.isidentifier() or s.isdigit() or (s.startswith("(") and s.endswith(")") and s.count("(") == 1)


def paren(s: str) -> str:
    """``s`` as one operand: parenthesised unless atomic or already enclosed in one pair."""
    if _atomic(s):
        return s
    depth = 0
    for n, ch in enumerate(s):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0:
            return s if n == len(s) - 1 and s[0] == "(" else f"({s})"
    return f"({s})"


def swizzled_offset(buf: Buf, row: str, col: str) -> str:
    """C expression of the element offset of (row, col) in a swizzled tile (``Buf.swizzle_key``): the
    loader's destination, each ldmatrix row address and every expression read go through it. The
    chunk index XOR the key is written as the column XOR ``key * chunk`` (the same bits)."""
    per, keys = buf.swizzle_key()
    row, col = paren(row), paren(col)
    if row == "0":  # key 0: the chunk is not permuted
        return col
    key = row if per == 1 else f"({row} / {per})"
    return f"{row} * {buf.pitch} + ({col} ^ (({key} % {keys}) * {buf.chunk}))"


def swizzled_at(buf: Buf, idx: Sequence[str]) -> str:
    """The element offset of ``idx`` in a swizzled tile: its leading dims (extent 1) by their strides,
    then its last two dims as (row, col) of ``swizzled_offset``."""
    lead, tail = offset(buf.strides[:-2], idx[:-2]), swizzled_offset(buf, idx[-2], idx[-1])
    return tail if lead == "0" else f"{lead} + {tail}"


def decompose(var: str, shape: Sequence[int], prefix: str, vec: int = 1) -> tuple[list[str], list[str]]:
    """Split a flat item index ``var`` over ``shape`` (row-major; the last dim in steps of ``vec``).

    Returns (C declarations, index strings per dim)."""
    lines: list[str] = []
    idx: list[str] = ["0"] * len(shape)
    rest = var
    n = len(shape)
    for d in range(n - 1, -1, -1):
        ext = shape[d] // vec if d == n - 1 else shape[d]
        name = f"{prefix}{d}"
        inner = math.prod(shape[:d])  # extents left of d
        if ext == 1:
            continue
        if inner == 1 and (d != n - 1 or vec == 1):
            expr = rest
        elif inner == 1:
            expr = f"{rest} * {vec}"
        else:
            expr = f"({rest} % {ext})" + (f" * {vec}" if d == n - 1 and vec > 1 else "")
        lines.append(f"const int {name} = {expr};")
        idx[d] = name
        if inner > 1:
            rest_name = f"{prefix}r{d}"
            lines.append(f"const int {rest_name} = {rest} / {ext};")
            rest = rest_name
    return lines, idx


def bcast(idx: Sequence[str], tile: Sequence[int], out: Sequence[int]) -> list[str]:
    return ["0" if t == 1 and o != 1 else i for i, t, o in zip(idx, tile, out, strict=True)]


def with_last(idx: Sequence[str], add: int) -> list[str]:
    return with_at(idx, -1, add)


def with_at(idx: Sequence[str], axis: int, add: int) -> list[str]:
    """``idx`` with ``add`` added to its entry ``axis`` (a literal where that entry is 0)."""
    out = list(idx)
    if add:
        out[axis] = str(add) if out[axis] == "0" else f"{out[axis]} + {add}"
    return out


def element_read(b: Buf, p: str, off: str) -> str:
    """One element of tile ``b`` at pointer ``p`` plus ``off``, as stored (past L1 where ``Buf.l2``)."""
    return f"ld_l2({p} + {off})" if b.l2 else f"{p}[{off}]"


EARLY_RUNS = 4  # runs a thread may hold from the kernel start (16 bytes each, per input): ``RunAt.runs``


@dataclass(frozen=True)
class RunAt:
    """Where a thread's runs start: the first at ``start``, an expression of ``tid`` or ``lane`` alone (the
    same text wherever a run starts there: a block-wide walk, a save of a one-row tile, a warp's walk and
    save of its rows), run ``var`` (a loop index below ``runs``) ``var * step`` elements on; each read only
    where its start is below ``bound`` (None: always)."""

    start: str
    bound: int | None
    runs: int = 1
    step: int = 0
    var: str = ""

    @staticmethod
    def over(start: str, step: int, extent: int, var: str) -> RunAt:
        """The runs ``step`` apart from ``start`` that cover ``extent`` elements (the last guarded where
        ``step`` does not divide it)."""
        return RunAt(start, extent if extent % step else None, -(-extent // step), step, var)

    def at(self, j: str) -> str:
        """The start of run ``j``."""
        return self.start if self.runs == 1 else f"{self.start} + {j} * {self.step}"

    def passes(self, name: str, body: list[str]) -> list[str]:
        """``body`` for each run, its start in ``name``: an unrolled loop over ``var`` (the compiler keeps
        each run's loads in registers and merges readers of the same run), guarded past ``bound``."""
        inner = [f"  if ({name} < {self.bound}) {{", *(f"    {x}" for x in body), "  }"] if self.bound is not None \
            else [f"  {x}" for x in body]
        return ["#pragma unroll", f"for (int {self.var} = 0; {self.var} < {self.runs}; ++{self.var}) {{",
                f"  const int {name} = {self.start} + {self.var} * {self.step};", *inner, "}"]


class EarlyReads:
    """The runs of read-only global tiles a loop-free kernel's block-wide walks and one-row saves read
    (each thread up to ``EARLY_RUNS`` runs, at offsets of ``tid`` alone, ``RunAt``), and those a warp-rows
    kernel's lanes read at offsets of ``lane`` alone (a weight's runs): every such run is
    loaded once, at the kernel's start, into a register array that every later reader of the run uses.
    A load written inside each walk sits behind the barriers of the reductions before it (the compiler
    does not move loads across ``__syncthreads``): a row read by two reductions and a save was loaded
    three times, and a norm's weight was first requested after both reductions, its latency on the
    critical path."""

    def __init__(self, readable: frozenset[str]) -> None:
        self.readable = readable  # the direct tiles no op of the kernel writes (buffer names)
        self.arrays: dict[tuple[str, str, int, int | None, int, int], str] = {}
        self.lines: list[str] = []

    @staticmethod
    def of(low: KernelLowering) -> EarlyReads | None:
        """For a kernel without a loop (its registers need not live through one); else None."""
        if low.loop != 1:
            return None
        written = set(low.saves_tensors())
        return EarlyReads(frozenset(lp.buf.name for lp in low.loads
                                    if lp.buf.direct and not lp.buf.gstep and not lp.buf.l2
                                    and lp.tensor not in written))

    def array(self, b: Buf, p: str, off: str, vec: int, at: RunAt) -> str:
        """The register array holding the runs of ``vec`` elements at ``p + off`` (the first; the others
        ``at.step`` elements apart along the last dim, which is contiguous), declared and loaded at the kernel
        start on first use; the array of the reader's run (``at.var``) where a thread holds several."""
        key = (p, off, vec, at.bound, at.runs, at.step if at.runs > 1 else 0)
        if (name := self.arrays.get(key)) is None:
            name = self.arrays[key] = f"early{len(self.arrays)}"
            half = b.dtype is Storage.HALF
            rows = "" if at.runs == 1 else f"[{at.runs}]"
            dst, at_j = (name, off) if at.runs == 1 else (f"{name}[j]", f"{off} + j * {at.step}")
            src = f"reinterpret_cast<const unsigned*>({p} + {at_j})" if half else f"{p} + {at_j}"
            guard = "" if at.bound is None else f"if ({at.at('j')} < {at.bound}) "
            load = f"{guard}ld_run({dst}, {src});"
            self.lines += [f"unsigned {name}{rows}[{vec // 2}];" if half else f"float {name}{rows}[{vec}];",
                           *([load] if at.runs == 1 else ["#pragma unroll", f"for (int j = 0; j < {at.runs}; ++j) {load}"])]
        return name if at.runs == 1 else f"{name}[{at.var}]"

    def declarations(self) -> list[str]:
        if not self.lines:
            return []
        return ["// runs of read-only inputs, each loaded once before the first barrier (EarlyReads)", *self.lines]


class Exprs:
    """Renders the value of op ``i`` at a tile index as a C float expression."""

    def __init__(self, low: KernelLowering, ptr: dict[str, str] | None = None,
                 early: EarlyReads | None = None) -> None:
        self.low = low
        self.ptr = ptr or {}  # buffer name -> C pointer expression (defaults to the name)
        self.early = early

    def tile_offset(self, b: Buf, idx: Sequence[str]) -> str:
        """The element offset of ``idx`` in tile ``b`` (padded rows, swizzled chunks, or in place in
        global memory); a transposed load's tile is stored with its last two dims swapped."""
        if b.transposed:
            idx = stored_index(idx)
        if b.direct:
            return offset(b.gstrides, idx)
        if not b.swizzle:
            return offset(b.strides, idx)
        return swizzled_at(b, idx)

    def pointer(self, b: Buf) -> str:
        """The C pointer tile ``b`` is indexed from (a direct Load's: its tile origin in global memory,
        of this iteration's tile when it streams: ``gi_<name>``, set in the loop)."""
        if b.direct:
            return f"gi_{b.name}" if b.gstep else f"g_{b.name}"
        return self.ptr.get(b.name, b.name)

    def buf_read(self, b: Buf, idx: Sequence[str]) -> str:
        p = self.pointer(b)
        off = self.tile_offset(b, idx)
        reads = []
        for c in range(1 if b.ring else b.copies):
            o = off if c == 0 else (f"{off} + {c * b.copy_elems}" if off != "0" else str(c * b.copy_elems))
            reads.append(element_read(b, p, o))
        if b.dtype is Storage.HALF:
            reads = [f"hload({r})" for r in reads]
        return reads[0] if len(reads) == 1 else "(" + " + ".join(reads) + ")"

    def read(self, i: int, idx: Sequence[str]) -> str:
        low = self.low
        store = low.stores[i]
        # lowering invariants: a matmul kept in fragments has one user, its accumulator, which reads
        # the fragments (lower._matmul_store); no op reads a Save (ir.check_structure)
        assert store is not Store.FRAG, f"op {i}: an mma fragment is read through its accumulator"
        assert store is not Store.SAVE, f"op {i}: a Save has no value to read"
        if i in low.held:  # one value, in every thread's register (``KernelLowering.held``)
            return f"{low.bufs[i].name}_r"
        if i in low.warp_rows:  # row pass j's value, in its warp's lanes (``KernelLowering.warp_rows``)
            return f"ra{i}[j]" if i in low.accs else f"{low.bufs[i].name}_r[j]"
        match store:
            case Store.INLINE:
                return self.define(i, idx)
            case Store.LOAD | Store.F32 | Store.H16 | Store.ACC:
                return self.buf_read(low.bufs[i], idx)
            case _:
                assert_never(store)

    def define(self, i: int, idx: Sequence[str]) -> str:
        """The op's own computation (for inline values and for the pass that materialises one)."""
        low = self.low
        op = low.kernel.ops[i]
        tile = low.tiles[i]
        assert tile is not None
        assert not isinstance(op, Save), f"op {i}: a Save has no value (ir.check_structure)"
        match op:
            case UnaryOp(fn, x, scalar):
                tx = low.tiles[x]
                assert tx is not None
                c = flt(scalar.resolve(dict(low.scalars))) if scalar is not None else ""
                return UNARY_C[fn].format(x=self.read(x, bcast(idx, tx, tile)), c=c)
            case BinaryOp(fn, a, b):
                ta, tb = low.tiles[a], low.tiles[b]
                assert ta is not None and tb is not None
                ra, rb = self.read(a, bcast(idx, ta, tile)), self.read(b, bcast(idx, tb, tile))
                if i in low.shifts:  # a masked (−inf) chunk: subtract 0, so exp gives 0
                    return f"({ra} - prism_shift({rb}))"
                return BINARY_C[fn].format(a=ra, b=rb)
            case Accum(x=x) if low.stores[i] is Store.INLINE:  # one iteration: the accumulator is its value
                return self.read(x, idx)
            case Load() | MatmulOp() | ReduceOp() | Accum():
                return self.read(i, idx)
            case _:
                assert_never(op)


class RunReads(Exprs):
    """Expressions for a thread's run of ``vec`` consecutive elements along the last dim (index ``var``
    plus 0 .. vec - 1, as ``with_last`` writes it): a shared-memory tile read along the run is loaded
    once, all ``vec`` elements in vector loads, into a register array. ``loads`` holds those arrays'
    declarations and loads, to emit before the expressions that read them. ``at``: where ``var`` is
    this thread's only run (``RunAt``); a read-only global tile's run is then ``EarlyReads``' array.
    ``axis`` -2: the run is along the next-to-last dim (``with_at``), which only a transposed load's
    tile stores along its rows (``Buf.transposed``): those tiles are read by vector loads, others one
    element at a time."""

    def __init__(self, ex: Exprs, var: str, vec: int, prefix: str, at: RunAt | None = None,
                 axis: int = -1) -> None:
        super().__init__(ex.low, ex.ptr, ex.early)
        self.var, self.vec, self.prefix, self.at, self.axis = var, vec, prefix, at, axis
        self.arrays: dict[tuple[str, str], str] = {}
        self.loads: list[str] = []

    def _early(self, b: Buf, p: str, idx: Sequence[str]) -> str | None:
        """The ``EarlyReads`` array of this run of ``b`` (leading indices fixed), or None."""
        if self.early is None or self.at is None or self.axis != -1 or b.name not in self.early.readable:
            return None
        if not all(i.isdigit() for i in idx[:-1]):
            return None
        off = self.tile_offset(b, [*idx[:-1], paren(self.at.start)])
        return self.early.array(b, p, off, self.vec, self.at)

    def _lane(self, last: str) -> int | None:
        if self.vec == 1:  # no run: every element is read on its own
            return None
        if last == self.var:
            return 0
        if self.var == "0":  # the run is the whole last dim: with_last writes its indices as literals
            return int(last) if last.isdigit() and int(last) < self.vec else None
        head, _, k = last.partition(" + ")
        return int(k) if head == self.var and k.isdigit() else None

    def _vectorisable(self, b: Buf) -> bool:
        """Every run of ``b`` starts aligned to its loads (a swizzled tile's runs stay in one chunk)."""
        unit = min(16, self.vec * b.esize)  # bytes each load needs aligned
        if b.l2 or self.axis != (-2 if b.transposed else -1):  # (``ld_l2``; a run across stored rows)
            return False
        if b.direct:
            return b.gstrides[-1] == 1 and b.galign % unit == 0
        steps = [*b.strides[:-1], *([b.copy_elems] if b.ring else [])]
        return ((not b.swizzle or b.chunk % self.vec == 0) and (b.ring or b.copies == 1) and b.strides[-1] == 1
                and b.offset % unit == 0 and all(s * b.esize % unit == 0 for s in steps))

    def buf_read(self, b: Buf, idx: Sequence[str]) -> str:
        k = self._lane(idx[self.axis]) if len(idx) >= -self.axis else None
        if k is None or not self._vectorisable(b):
            return super().buf_read(b, idx)
        p = self.pointer(b)
        at = list(idx)
        at[self.axis] = self.var
        off = self.tile_offset(b, at)
        name = self.arrays.get((p, off)) or self._early(b, p, idx)
        half = b.dtype is Storage.HALF
        if name is None:  # halves are held in 32-bit words (an array of halves is split into 2-byte loads)
            name = self.arrays[(p, off)] = f"{self.prefix}{len(self.arrays)}"
            decl = f"unsigned {name}[{self.vec // 2}];" if half else f"float {name}[{self.vec}];"
            src = f"reinterpret_cast<const unsigned*>({p} + {off})" if half else f"{p} + {off}"
            self.loads += [decl, f"ld_run({name}, {src});"]
        if not half:
            return f"{name}[{k}]"
        word = f"{name}[{k // 2}]"
        return f"hload((half_t)({word} >> 16))" if k % 2 else f"hload((half_t){word})"


def run_values(ex: Exprs, i: int, idx: Sequence[str], vec: int, prefix: str, *, own: bool = False,
               at: RunAt | None = None) -> list[str]:
    """C lines that set ``v0`` .. ``v{vec-1}`` to value ``i`` at the run ``idx`` .. ``idx + vec - 1`` along the
    last dim: the run's vector loads (``RunReads``; ``at``: its ``RunAt``), then one float each (``own``:
    compute i's op)."""
    rex = RunReads(ex, idx[-1], vec, prefix, at)
    value = rex.define if own else rex.read
    vals = [f"const float v{k} = {value(i, with_last(idx, k))};" for k in range(vec)]
    return [*rex.loads, *vals]
