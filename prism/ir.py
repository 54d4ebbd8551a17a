"""The μGraph IR: kernel graphs of custom kernels (block graphs) and pre-defined kernels.

A *block graph* is what one thread block runs. It has 1–3 grid dims and one for-loop dim.

* ``Load(tensor, imap, fmap)`` brings a tile of a device tensor: ``imap[p]`` is the data dim that
  grid dim p splits (None: replicated along p), ``fmap`` the data dim the for-loop splits. A dim
  split by a grid dim and by the loop is split by the grid first, then each grid chunk by the loop.
  ``transposed``: the tile comes from the tensor's transpose (its last two dims swapped); the maps
  and the tile name dims of that view. Code generation folds a transpose of a program input into
  the loads that read it (``prism.codegen.fold``); searched plans never carry one.
* ``UnaryOp``/``BinaryOp``/``MatmulOp``/``ReduceOp`` work on tiles (NumPy semantics, keepdim).
* ``Accum(x, reduce_dim)`` sums ``x`` over the loop iterations (optionally first summing it over
  one dim): ops before an Accum run in every iteration ("loop" phase), ops after run once
  ("post" phase). An op may not mix the two phases. ``Accum(x, fn=MAX)`` keeps the running max
  instead. ``Accum(x, rescale=c)`` is the online-softmax accumulator: with ``c`` a per-iteration
  shift (a loop value broadcasting against ``x``, summed over ``reduce_dim`` if given; in practice
  the iteration's row max), it is ``Σ_i x_i · exp(c_i − max_j c_j)``, computed with a running max ``m`` as
  ``acc ← acc · exp(m − m') + x_i · exp(c_i − m')``, ``m' = max(m, c_i)`` — the rescaling that keeps
  a safe softmax's sums and matmul accumulators finite, within a loop and across split partials.
* ``Save(x, tensor, omap)`` writes a post-phase tile: ``omap[p]`` is the output dim along which grid
  dim p concatenates. Every grid dim must be mapped (no duplicated writes).

Sizes are ``int`` (a μGraph) or a symbol name ``str`` (an sGraph's d, shared by name between
kernels, e.g. a combine kernel's loop equal to the split kernel's grid dim).
Tensors written by one kernel and loaded by a later one are intermediates, held in float32.
"""

from __future__ import annotations

import enum
import itertools
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, assert_never

from prism.errors import IRError, SerializationError
from prism.names import NameKind, name_problem, show
from prism.ops import (
    DTYPES,
    Binary,
    DimRecip,
    OpKind,
    Reduce,
    Scalar,
    Unary,
    broadcast_shape,
    matmul_shape,
    scalar_from_json,
    scalar_to_json,
)

if TYPE_CHECKING:
    from prism.graph import Graph

FORMAT = "prism.kernel_graph"
VERSION = 1
GRID_NAMES = ("x", "y", "z")

Size = int | str


@dataclass(frozen=True)
class Load:
    tensor: str
    imap: tuple[int | None, ...]
    fmap: int | None = None
    transposed: bool = False


@dataclass(frozen=True)
class UnaryOp:
    fn: Unary
    x: int
    scalar: Scalar | None = None


@dataclass(frozen=True)
class BinaryOp:
    fn: Binary
    a: int
    b: int


@dataclass(frozen=True)
class MatmulOp:
    a: int
    b: int


@dataclass(frozen=True)
class ReduceOp:
    fn: Reduce
    x: int
    dim: int


@dataclass(frozen=True)
class Accum:
    x: int
    reduce_dim: int | None = None
    fn: Reduce = Reduce.SUM
    rescale: int | None = None  # the per-iteration shift c (an op index): see the module docstring

    @property
    def plain(self) -> bool:
        """A plain sum over the iterations (no max, no rescaling)."""
        return self.fn is Reduce.SUM and self.rescale is None


@dataclass(frozen=True)
class Save:
    x: int
    tensor: str
    omap: tuple[int | None, ...]


BlockOp = Load | UnaryOp | BinaryOp | MatmulOp | ReduceOp | Accum | Save


def op_args(op: BlockOp) -> tuple[int, ...]:
    match op:
        case Load():
            return ()
        case Accum(x=x, rescale=c) if c is not None:
            return (x, c)
        case UnaryOp(x=x) | ReduceOp(x=x) | Accum(x=x) | Save(x=x):
            return (x,)
        case BinaryOp(a=a, b=b) | MatmulOp(a=a, b=b):
            return (a, b)


def shift_by_max(ops: Sequence[BlockOp], i: int) -> bool:
    """Op ``i`` is ``x − max(x)`` with the max a ReduceOp of ``x`` in the same kernel (a softmax's shift,
    per tile in an online softmax). Where that max is −inf every ``x`` it covers is −inf (a chunk of
    positions masked with −inf): the op subtracts 0 there, so ``exp`` gives 0 where IEEE's −inf − −inf
    gives NaN, and a masked chunk adds nothing (the interpreter, the emulator and the generated code all
    do so; over the reals the op is unchanged)."""
    op = ops[i]
    if not (isinstance(op, BinaryOp) and op.fn is Binary.SUB):
        return False
    m = ops[op.b]
    return isinstance(m, ReduceOp) and m.fn is Reduce.MAX and m.x == op.a


def renumbered(op: BlockOp, new: Mapping[int, int]) -> BlockOp:
    """``op`` with each operand index ``a`` replaced by ``new[a]`` (ops moved to another kernel)."""
    match op:
        case Load():
            return op
        case Accum(x=x, rescale=c):
            return replace(op, x=new[x], rescale=None if c is None else new[c])
        case UnaryOp(x=x) | ReduceOp(x=x) | Save(x=x):
            return replace(op, x=new[x])
        case BinaryOp(a=a, b=b) | MatmulOp(a=a, b=b):
            return replace(op, a=new[a], b=new[b])
        case _:
            assert_never(op)


def live_ops(ops: Sequence[BlockOp]) -> list[bool]:
    """Per op, whether a Save depends on it (operands always precede their users)."""
    live = [isinstance(op, Save) for op in ops]
    for i in reversed(range(len(ops))):
        if live[i]:
            for a in op_args(ops[i]):
                live[a] = True
    return live


@dataclass(frozen=True)
class CustomKernel:
    name: str
    grid: tuple[Size, ...]
    loop: Size
    ops: tuple[BlockOp, ...]

    def without_dead_ops(self) -> CustomKernel:
        """The kernel without the ops no Save depends on (a searched kernel may load a program input
        no output reads): the same values saved, and no tile, buffer or warp sized for them."""
        live = live_ops(self.ops)
        if all(live) or not any(live):
            return self
        new = {old: i for i, old in enumerate(j for j, keep in enumerate(live) if keep)}
        return replace(self, ops=tuple(renumbered(op, new) for op, keep in zip(self.ops, live, strict=True) if keep))

    @property
    def loads(self) -> list[Load]:
        return [op for op in self.ops if isinstance(op, Load)]

    @property
    def saves(self) -> list[Save]:
        return [op for op in self.ops if isinstance(op, Save)]


@dataclass(frozen=True)
class PredefinedKernel:
    """One Graph primitive run over whole tensors by a library kernel."""

    name: str
    kind: OpKind
    inputs: tuple[str, ...]
    output: str
    fn: Unary | Binary | Reduce | None = None
    dim: int | None = None
    scalar: Scalar | None = None


Kernel = CustomKernel | PredefinedKernel


@dataclass(frozen=True)
class TensorSpec:
    name: str
    shape: tuple[int, ...]
    dtype: str


@dataclass(frozen=True)
class Tail:
    """A dim padded up to a tile multiple: every tensor axis of extent ``padded`` holds ``valid``
    elements in memory (``valid < padded``); the kernels run at ``padded`` and mask the rest
    (``prism.codegen.tails``: zero-filled copies, reductions that skip the tail)."""

    padded: int
    valid: int

    def __post_init__(self) -> None:
        if not 1 <= self.valid < self.padded:
            raise IRError(f"tail: {self.valid} valid of {self.padded} padded elements (need 1 <= valid < padded)")

    def true_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """The extents in memory of a tensor of ``shape`` as the kernels see it."""
        return tuple(self.valid if s == self.padded else s for s in shape)


@dataclass(frozen=True)
class KernelGraph:
    """A whole program as kernels. ``inputs``/``outputs`` match the source Graph's by name; with a
    ``tail``, their shapes are padded (``Tail``) and the program's are ``true_inputs``/``true_outputs``."""

    program: str
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    kernels: tuple[Kernel, ...]
    tail: Tail | None = None

    @property
    def true_inputs(self) -> tuple[TensorSpec, ...]:
        return self.inputs if self.tail is None else tuple(replace(t, shape=self.tail.true_shape(t.shape))
                                                           for t in self.inputs)

    @property
    def true_outputs(self) -> tuple[TensorSpec, ...]:
        return self.outputs if self.tail is None else tuple(replace(t, shape=self.tail.true_shape(t.shape))
                                                            for t in self.outputs)

    @property
    def symbols(self) -> list[str]:
        """Symbolic size names in order of first appearance."""
        out: list[str] = []
        for k in self.kernels:
            if isinstance(k, CustomKernel):
                for s in (*k.grid, k.loop):
                    if isinstance(s, str) and s not in out:
                        out.append(s)
        return out

    @property
    def is_concrete(self) -> bool:
        return not self.symbols

    def instantiate(self, sizes: Mapping[str, int]) -> KernelGraph:
        """Replace symbolic sizes by integers."""
        missing = [s for s in self.symbols if s not in sizes]
        if missing:
            raise IRError(f"{self.program}: no value for the sizes {missing}")

        def sub(s: Size) -> Size:
            return int(sizes[s]) if isinstance(s, str) else s

        kernels = tuple(
            replace(k, grid=tuple(sub(s) for s in k.grid), loop=sub(k.loop)) if isinstance(k, CustomKernel) else k
            for k in self.kernels
        )
        return replace(self, kernels=kernels)

    def with_shapes(self, inputs: Mapping[str, tuple[int, ...]], outputs: Mapping[str, tuple[int, ...]]) -> KernelGraph:
        """The same plan for other input/output sizes (ranks must agree; the program's sizes: a tail
        is dropped)."""
        ins = tuple(replace(t, shape=tuple(inputs[t.name])) for t in self.inputs)
        outs = tuple(replace(t, shape=tuple(outputs[t.name])) for t in self.outputs)
        return replace(self, inputs=ins, outputs=outs, tail=None)

    def padded(self, tail: Tail) -> KernelGraph:
        """This plan (no tail, the program's shapes) run at ``tail.padded`` wherever a tensor has an
        axis of ``tail.valid`` elements."""
        def pad(specs: tuple[TensorSpec, ...]) -> tuple[TensorSpec, ...]:
            return tuple(replace(t, shape=tuple(tail.padded if s == tail.valid else s for s in t.shape)) for t in specs)
        assert self.tail is None, "a plan is padded once"
        return replace(self, inputs=pad(self.inputs), outputs=pad(self.outputs), tail=tail)

    def without_dead_ops(self) -> KernelGraph:
        """Every custom kernel without its dead ops (``CustomKernel.without_dead_ops``); the plan as it
        is where that would leave it ill-formed."""
        kernels = tuple(k.without_dead_ops() if isinstance(k, CustomKernel) else k for k in self.kernels)
        if kernels == self.kernels:
            return self
        pruned = replace(self, kernels=kernels)
        try:
            check_structure(pruned)
        except IRError:
            return self
        return pruned

    def to_json(self) -> dict[str, object]:
        return {"format": FORMAT, "version": VERSION, **_kg_to_obj(self)}

    def dumps(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True)

    @staticmethod
    def of(graph: Graph, program: str, kernels: Sequence[Kernel]) -> KernelGraph:
        """``kernels`` as a plan of ``graph``: its inputs and outputs, by name, shape and dtype."""
        return KernelGraph(program, tuple(TensorSpec(t.name, t.shape, t.dtype) for t in graph.inputs),
                           tuple(TensorSpec(t.name, t.shape, t.dtype) for t in graph.outputs), tuple(kernels))

    @staticmethod
    def from_json(obj: object) -> KernelGraph:
        if not isinstance(obj, dict) or obj.get("format") != FORMAT:
            raise SerializationError(f"not a Prism kernel graph document (format {FORMAT!r} expected)")
        if obj.get("version") != VERSION:
            raise SerializationError(f"kernel graph format version {obj.get('version')!r}; this Prism reads {VERSION}")
        try:
            kg = _kg_from_obj(obj)
        except (KeyError, TypeError, ValueError, IRError) as e:
            raise SerializationError(f"malformed kernel graph document: {e!r}") from e
        if (bad := kernel_graph_name_problem(kg)) is not None:
            raise SerializationError(f"kernel graph document: {bad}")
        return kg

    @staticmethod
    def loads(text: str) -> KernelGraph:
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as e:
            raise SerializationError(f"kernel graph document is not JSON: {e}") from e
        return KernelGraph.from_json(obj)


# ---------------------------------------------------------------------------------- JSON


def _op_to_obj(op: BlockOp) -> dict[str, object]:
    match op:
        case Load(tensor, imap, fmap, transposed):
            load: dict[str, object] = {"op": "load", "tensor": tensor, "imap": list(imap), "fmap": fmap}
            return load | {"transposed": True} if transposed else load
        case UnaryOp(fn, x, scalar):
            return {"op": "unary", "fn": fn.value, "x": x, "scalar": scalar_to_json(scalar)}
        case BinaryOp(fn, a, b):
            return {"op": "binary", "fn": fn.value, "a": a, "b": b}
        case MatmulOp(a, b):
            return {"op": "matmul", "a": a, "b": b}
        case ReduceOp(fn, x, dim):
            return {"op": "reduce", "fn": fn.value, "x": x, "dim": dim}
        case Accum(x, reduce_dim, fn, rescale):
            out: dict[str, object] = {"op": "accum", "x": x, "reduce_dim": reduce_dim}
            if not op.plain:  # plain accumulators keep the old form (cached plans stay valid)
                out |= {"fn": fn.value, "rescale": rescale}
            return out
        case Save(x, tensor, omap):
            return {"op": "save", "x": x, "tensor": tensor, "omap": list(omap)}


def _op_from_obj(o: Mapping[str, Any]) -> BlockOp:
    """One block op of a decoded JSON document (``Any``: whatever the JSON held; a bad value raises)."""
    kind = o["op"]

    def opt(v: Any) -> int | None:
        return None if v is None else int(v)

    def i(key: str) -> int:
        return int(o[key])

    if kind == "load":
        return Load(str(o["tensor"]), tuple(opt(v) for v in o["imap"]), opt(o["fmap"]), o.get("transposed") is True)
    if kind == "unary":
        return UnaryOp(Unary(o["fn"]), i("x"), scalar_from_json(o.get("scalar")))
    if kind == "binary":
        return BinaryOp(Binary(o["fn"]), i("a"), i("b"))
    if kind == "matmul":
        return MatmulOp(i("a"), i("b"))
    if kind == "reduce":
        return ReduceOp(Reduce(o["fn"]), i("x"), i("dim"))
    if kind == "accum":
        return Accum(i("x"), opt(o.get("reduce_dim")), Reduce(str(o.get("fn", "sum"))), opt(o.get("rescale")))
    if kind == "save":
        return Save(i("x"), str(o["tensor"]), tuple(opt(v) for v in o["omap"]))
    raise ValueError(f"unknown block op {kind!r}")


def _size_from_obj(v: object) -> Size:
    if isinstance(v, bool) or not isinstance(v, int | str):
        raise ValueError(f"bad size {v!r}")
    return v


def _kg_to_obj(kg: KernelGraph) -> dict[str, object]:
    kernels: list[dict[str, object]] = []
    for k in kg.kernels:
        if isinstance(k, CustomKernel):
            kernels.append(
                {"type": "custom", "name": k.name, "grid": list(k.grid), "loop": k.loop,
                 "ops": [_op_to_obj(op) for op in k.ops]}
            )
        else:
            kernels.append(
                {"type": "predefined", "name": k.name, "kind": k.kind.value, "inputs": list(k.inputs),
                 "output": k.output, "fn": None if k.fn is None else k.fn.value, "dim": k.dim,
                 "scalar": scalar_to_json(k.scalar)}
            )
    out: dict[str, object] = {
        "program": kg.program,
        "inputs": [[t.name, list(t.shape), t.dtype] for t in kg.inputs],
        "outputs": [[t.name, list(t.shape), t.dtype] for t in kg.outputs],
        "kernels": kernels,
    }
    return out if kg.tail is None else out | {"tail": [kg.tail.padded, kg.tail.valid]}  # (no tail: the old form)


def _fn_from(kind: OpKind, v: object) -> Unary | Binary | Reduce | None:
    if v is None:
        return None
    if kind is OpKind.UNARY:
        return Unary(v)
    if kind is OpKind.BINARY:
        return Binary(v)
    if kind is OpKind.REDUCE:
        return Reduce(v)
    raise ValueError(f"{kind.value} kernels take no fn")


def _kg_from_obj(obj: Mapping[str, Any]) -> KernelGraph:
    """A kernel graph from a decoded JSON document (``Any``: whatever the JSON held; a bad value raises)."""
    def specs(key: str) -> tuple[TensorSpec, ...]:
        out = []
        for n, shp, dt in obj[key]:
            if dt not in DTYPES:
                raise ValueError(f"{key}: tensor {n!r} has dtype {dt!r}, not one of {', '.join(DTYPES)}")
            if not isinstance(shp, list) or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 1
                                                    for s in shp):
                raise ValueError(f"{key}: tensor {n!r} has shape {shp!r}, not a list of positive integers")
            out.append(TensorSpec(str(n), tuple(shp), str(dt)))
        return tuple(out)

    kernels: list[Kernel] = []
    for k in obj["kernels"]:
        if k["type"] == "custom":
            kernels.append(
                CustomKernel(str(k["name"]), tuple(_size_from_obj(s) for s in k["grid"]), _size_from_obj(k["loop"]),
                             tuple(_op_from_obj(o) for o in k["ops"]))
            )
        elif k["type"] == "predefined":
            kind = OpKind(k["kind"])
            kernels.append(
                PredefinedKernel(str(k["name"]), kind, tuple(str(t) for t in k["inputs"]), str(k["output"]),
                                 _fn_from(kind, k["fn"]), None if k["dim"] is None else int(k["dim"]),
                                 scalar_from_json(k["scalar"]))
            )
        else:
            raise ValueError(f"unknown kernel type {k['type']!r}")
    tail = obj.get("tail")
    if tail is not None and not (isinstance(tail, list) and len(tail) == 2 and all(type(v) is int for v in tail)):
        raise ValueError(f"tail {tail!r} is not [padded, valid]")
    return KernelGraph(str(obj["program"]), specs("inputs"), specs("outputs"), tuple(kernels),
                       None if tail is None else Tail(tail[0], tail[1]))


# ---------------------------------------------------------------------------------- validation


def _names_of(kg: KernelGraph) -> Iterator[tuple[NameKind, object, str]]:
    """Every name in a kernel graph: (kind, name, where it appears)."""
    yield NameKind.PROGRAM, kg.program, "program"
    for role, specs in (("input", kg.inputs), ("output", kg.outputs)):
        for t in specs:
            yield NameKind.TENSOR, t.name, role
    for k in kg.kernels:
        yield NameKind.KERNEL, k.name, "kernel"
        where = f"kernel {show(k.name)}"
        if isinstance(k, CustomKernel):
            for s in (*k.grid, k.loop):
                if not isinstance(s, int):
                    yield NameKind.SIZE, s, f"{where}, size"
            for op in k.ops:
                if isinstance(op, Load | Save):
                    yield NameKind.TENSOR, op.tensor, f"{where}, {type(op).__name__.lower()}"
                elif isinstance(op, UnaryOp) and isinstance(op.scalar, DimRecip):
                    yield NameKind.TENSOR, op.scalar.tensor, f"{where}, scalar"
        else:
            for operand in (*k.inputs, k.output):
                yield NameKind.TENSOR, operand, f"{where}, operand"
            if isinstance(k.scalar, DimRecip):
                yield NameKind.TENSOR, k.scalar.tensor, f"{where}, scalar"


def kernel_graph_name_problem(kg: KernelGraph) -> str | None:
    """The first bad name of a kernel graph, with where it is and why (None when all are valid)."""
    for kind, name, where in _names_of(kg):
        if (bad := name_problem(name, kind)) is not None:
            return f"{where} {show(name)}: {bad}"
    return None


class OpPhase(enum.StrEnum):
    """When an op of a custom kernel runs: in the for-loop (what a Load feeds), after it (what an
    Accum feeds), or last (a Save)."""

    LOOP = "loop"
    POST = "post"
    SAVE = "save"


@dataclass(frozen=True)
class KernelShapes:
    """Shape inference of one custom kernel at concrete sizes."""

    tiles: tuple[tuple[int, ...] | None, ...]  # per op; None for Save
    phases: tuple[OpPhase, ...]


def _err(kg: KernelGraph, k: Kernel, i: int | None, msg: str) -> IRError:
    where = f"{kg.program}: kernel {k.name!r}" + (f", op {i}" if i is not None else "")
    return IRError(f"{where}: {msg}")


def load_shape(shape: tuple[int, ...], transposed: bool) -> tuple[int, ...]:
    """The shape a Load sees of a tensor of ``shape``: its transpose's when ``transposed``."""
    return (*shape[:-2], shape[-1], shape[-2]) if transposed and len(shape) >= 2 else shape


def load_tile(shape: tuple[int, ...], load: Load, grid: tuple[int, ...], loop: int) -> tuple[int, ...] | None:
    """Tile extent of a Load, or None when a split does not divide the dim."""
    tile = []
    for a, extent in enumerate(shape):
        div = math.prod(g for p, g in enumerate(grid) if load.imap[p] == a)
        if load.fmap == a:
            div *= loop
        if extent % div:
            return None
        tile.append(extent // div)
    return tuple(tile)


def check_structure(kg: KernelGraph) -> None:
    """Checks that need no sizes: references, phases, mapping rules, tensor flow."""
    produced = {t.name: len(t.shape) for t in kg.inputs}
    names = set()
    for k in kg.kernels:
        if k.name in names:
            raise _err(kg, k, None, "duplicate kernel name")
        names.add(k.name)
        _check_dim_recips(kg, k)
        if isinstance(k, PredefinedKernel):
            for t in k.inputs:
                if t not in produced:
                    raise _err(kg, k, None, f"reads tensor {t!r} before any kernel writes it")
            if k.output in produced:
                raise _err(kg, k, None, f"tensor {k.output!r} is written twice")
            produced[k.output] = -1
            continue
        if not 1 <= len(k.grid) <= 3:
            raise _err(kg, k, None, f"{len(k.grid)} grid dims; a block graph has 1 to 3")
        for s in (*k.grid, k.loop):
            if isinstance(s, bool) or not ((isinstance(s, int) and s >= 1) or (isinstance(s, str) and s.isidentifier())):
                raise _err(kg, k, None, f"size {s!r} is neither a positive integer nor a symbol name")
        phases: list[OpPhase] = []
        for i, op in enumerate(k.ops):
            phases.append(_op_phase(kg, k, i, op, phases, produced))
    for spec in kg.outputs:
        if spec.name not in produced:
            raise IRError(f"{kg.program}: output {spec.name!r} is never written")


def _check_dim_recips(kg: KernelGraph, k: Kernel) -> None:
    """A ``DimRecip`` scalar (1 / a dim's size) names a graph input and one of its dims: the only
    shapes code generation and the interpreter resolve it against."""
    ranks = {t.name: len(t.shape) for t in kg.inputs}
    scalars = [k.scalar] if isinstance(k, PredefinedKernel) else [op.scalar for op in k.ops if isinstance(op, UnaryOp)]
    for s in scalars:
        if isinstance(s, DimRecip) and (s.tensor not in ranks or not -ranks[s.tensor] <= s.dim < ranks[s.tensor]):
            raise _err(kg, k, None, f"scalar 1/size of dim {s.dim} of {s.tensor!r}: not a dim of a graph input")


def _op_phase(kg: KernelGraph, k: CustomKernel, i: int, op: BlockOp, phases: list[OpPhase],
              produced: dict[str, int]) -> OpPhase:
    """The phase of op ``i`` (``phases``: those of the ops before it), after checking its operands,
    its maps and the tensor it loads or saves (a Save adds its tensor to ``produced``)."""
    for a in op_args(op):
        if not 0 <= a < i:
            raise _err(kg, k, i, f"operand {a} does not name an earlier op")
        if phases[a] is OpPhase.SAVE:
            raise _err(kg, k, i, "a Save has no value to use")
    arg_phases = {phases[a] for a in op_args(op)}
    match op:
        case Load(tensor=tensor, imap=imap):
            if tensor not in produced:
                raise _err(kg, k, i, f"loads tensor {tensor!r} before any kernel writes it")
            if len(imap) != len(k.grid):
                raise _err(kg, k, i, f"imap {imap} has {len(imap)} entries for {len(k.grid)} grid dims")
            split = [a for a in imap if a is not None]
            if len(split) != len(set(split)):
                raise _err(kg, k, i, f"imap {imap} splits one data dim along two grid dims")
            return OpPhase.LOOP
        case Accum():
            if arg_phases != {OpPhase.LOOP}:
                raise _err(kg, k, i, "an accumulator sums a loop-phase value")
            if op.fn is Reduce.MAX and (op.reduce_dim is not None or op.rescale is not None):
                raise _err(kg, k, i, "a max accumulator takes no reduce_dim and no rescale")
            return OpPhase.POST
        case Save(tensor=tensor, omap=omap):
            if arg_phases != {OpPhase.POST}:
                raise _err(kg, k, i, "a saver writes a value computed after the loop (through an Accum)")
            if len(omap) != len(k.grid):
                raise _err(kg, k, i, f"omap {omap} has {len(omap)} entries for {len(k.grid)} grid dims")
            if any(a is None for a in omap):
                raise _err(kg, k, i, f"omap {omap} leaves a grid dim unmapped (blocks would overwrite each other)")
            if len(set(omap)) != len(omap):
                raise _err(kg, k, i, f"omap {omap} concatenates two grid dims along one data dim")
            if tensor in produced:
                raise _err(kg, k, i, f"tensor {tensor!r} is written twice")
            produced[tensor] = -1
            return OpPhase.SAVE
        case _:
            if len(arg_phases) != 1:
                raise _err(kg, k, i, "mixes a per-iteration value with a post-loop value")
            return arg_phases.pop()


def infer(kg: KernelGraph, *, structure: bool = True) -> tuple[dict[str, tuple[int, ...]], list[KernelShapes | None]]:
    """Validate a concrete kernel graph; return every tensor's shape and each kernel's tile shapes.
    ``structure=False`` skips the size-free checks (a caller that ran ``check_structure`` on the template)."""
    if structure:
        check_structure(kg)
    if not kg.is_concrete:
        raise IRError(f"{kg.program}: sizes {kg.symbols} are symbolic; instantiate them first")
    shapes: dict[str, tuple[int, ...]] = {t.name: t.shape for t in kg.inputs}
    per_kernel: list[KernelShapes | None] = []
    for k in kg.kernels:
        if isinstance(k, PredefinedKernel):
            shapes[k.output] = predefined_shape(kg, k, [shapes[t] for t in k.inputs])
            per_kernel.append(None)
            continue
        per_kernel.append(_custom_shapes(kg, k, shapes))
    for t in kg.outputs:
        if shapes[t.name] != t.shape:
            raise IRError(f"{kg.program}: output {t.name!r} is written with shape {shapes[t.name]}, "
                          f"declared {t.shape}")
    return shapes, per_kernel


Tile = tuple[int, ...]


def _custom_shapes(kg: KernelGraph, k: CustomKernel, shapes: dict[str, Tile]) -> KernelShapes:
    """Tile shapes and phases of one custom kernel's ops at concrete sizes; its Saves add the shapes
    of the tensors they write to ``shapes``."""
    grid = tuple(int(g) for g in k.grid)
    loop = int(k.loop)
    tiles: list[Tile | None] = []
    phases: list[OpPhase] = []
    for i, op in enumerate(k.ops):
        tile, phase = _op_shape(kg, k, i, op, tiles, phases, shapes, grid, loop)
        tiles.append(tile)
        phases.append(phase)
    return KernelShapes(tuple(tiles), tuple(phases))


def _op_shape(kg: KernelGraph, k: CustomKernel, i: int, op: BlockOp, tiles: list[Tile | None],
              phases: list[OpPhase], shapes: dict[str, Tile], grid: tuple[int, ...],
              loop: int) -> tuple[Tile | None, OpPhase]:
    """The tile and phase of op ``i`` (``tiles`` and ``phases``: those of the ops before it)."""
    def tile_of(j: int) -> Tile:
        t = tiles[j]
        assert t is not None  # check_structure: no op reads a Save
        return t

    match op:
        case Load(tensor, imap, fmap, transposed):
            shp = load_shape(shapes[tensor], transposed)
            if transposed and len(shapes[tensor]) < 2:
                raise _err(kg, k, i, f"a transposed load of {tensor}{list(shapes[tensor])}: it has rank < 2")
            if any(a is not None and not 0 <= a < len(shp) for a in (*imap, fmap)):
                raise _err(kg, k, i, f"maps name a dim outside {tensor}{list(shp)}")
            tile = load_tile(shp, op, grid, loop)
            if tile is None:
                raise _err(kg, k, i, f"grid {grid} / loop {loop} do not divide {tensor}{list(shp)} "
                           f"under imap {imap}, fmap {fmap}")
            return tile, OpPhase.LOOP
        case UnaryOp(x=x):
            return tiles[x], phases[x]
        case BinaryOp(fn, a, b):
            ta, tb = tile_of(a), tile_of(b)
            if (tile := broadcast_shape(ta, tb)) is None:
                raise _err(kg, k, i, f"{fn.value} of tiles {list(ta)} and {list(tb)} does not broadcast")
            return tile, phases[a]
        case MatmulOp(a, b):
            ta, tb = tile_of(a), tile_of(b)
            if (tile := matmul_shape(ta, tb)) is None:
                raise _err(kg, k, i, f"matmul of tiles {list(ta)} @ {list(tb)} does not fit")
            return tile, phases[a]
        case ReduceOp(x=x, dim=dim) | Accum(x=x, reduce_dim=dim):
            tx = tile_of(x)
            if dim is not None and not 0 <= dim < len(tx):
                raise _err(kg, k, i, f"reduction dim {dim} is outside the tile {list(tx)}")
            tile = tuple(1 if d == dim else s for d, s in enumerate(tx))
            if isinstance(op, Accum) and op.rescale is not None:
                tc = tile_of(op.rescale)
                if broadcast_shape(tile, tc) != tile:
                    raise _err(kg, k, i, f"rescale tile {list(tc)} does not broadcast to {list(tile)}")
            return tile, OpPhase.POST if isinstance(op, Accum) else phases[x]
        case Save(x, tensor, omap):
            tx = tile_of(x)
            if any(a is not None and not 0 <= a < len(tx) for a in omap):
                raise _err(kg, k, i, f"omap {omap} names a dim outside the tile {list(tx)}")
            out = list(tx)
            for p, od in enumerate(omap):
                if od is not None:
                    out[od] *= grid[p]
            shapes[tensor] = tuple(out)
            return None, OpPhase.SAVE
        case _:
            assert_never(op)


def predefined_shape(kg: KernelGraph, k: PredefinedKernel, ins: list[tuple[int, ...]]) -> tuple[int, ...]:
    """The shape of predefined kernel ``k``'s output from its inputs' (IRError when they do not fit)."""
    shape: tuple[int, ...] | None
    match k.kind:
        case OpKind.UNARY:
            shape = ins[0] if len(ins) == 1 else None
        case OpKind.BINARY:
            shape = broadcast_shape(ins[0], ins[1]) if len(ins) == 2 else None
        case OpKind.MATMUL:
            shape = matmul_shape(ins[0], ins[1]) if len(ins) == 2 else None
        case OpKind.REDUCE:
            shape = None
            if len(ins) == 1 and k.dim is not None and 0 <= k.dim < len(ins[0]):
                shape = tuple(1 if d == k.dim else s for d, s in enumerate(ins[0]))
        case OpKind.TRANSPOSE:
            shape = (*ins[0][:-2], ins[0][-1], ins[0][-2]) if len(ins) == 1 and len(ins[0]) >= 2 else None
        case OpKind.INPUT:
            shape = None
    if shape is None:
        raise _err(kg, k, None, f"{k.kind.value} does not accept operands {ins}")
    return shape


def validate(kg: KernelGraph) -> KernelGraph:
    """Raise IRError unless ``kg`` is a well-formed concrete μGraph; return it."""
    infer(kg)
    return kg


def grid_coords(grid: tuple[int, ...]) -> itertools.product[tuple[int, ...]]:
    return itertools.product(*(range(g) for g in grid))
