"""The μGraph interpreter: runs a concrete kernel graph block by block in float64 NumPy.

For every kernel, every grid coordinate and every loop iteration it does what a thread block
would: load tiles, run the per-iteration ops, add into the accumulators; after the loop it runs the
post-loop ops and saves tiles into their place in the output tensor. It is the definition of what a
block graph means; the CUDA generator implements the same semantics.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import assert_never

import numpy as np

from prism.errors import InputError, IRError
from prism.graph import OpKind
from prism.ir import (
    Accum,
    BinaryOp,
    BlockOp,
    CustomKernel,
    KernelGraph,
    KernelShapes,
    Load,
    MatmulOp,
    PredefinedKernel,
    ReduceOp,
    Save,
    UnaryOp,
    grid_coords,
    infer,
    shift_by_max,
)
from prism.memo import remember
from prism.ops import BINARY_NUMPY, REDUCE_NUMPY, UNARY_NUMPY, Binary, Reduce, Unary, shifted


def load_slices(
    shape: tuple[int, ...], load: Load, grid: tuple[int, ...], loop: int, coord: tuple[int, ...], it: int
) -> tuple[slice, ...]:
    """Which part of the tensor block ``coord`` reads in iteration ``it``."""
    out = []
    for a, extent in enumerate(shape):
        start, size = 0, extent
        for p, g in enumerate(grid):
            if load.imap[p] == a:
                size //= g
                start += coord[p] * size
        if load.fmap == a:
            size //= loop
            start += it * size
        out.append(slice(start, start + size))
    return tuple(out)


def save_slices(tile: tuple[int, ...], save: Save, coord: tuple[int, ...]) -> tuple[slice, ...]:
    """Where block ``coord`` writes its tile."""
    starts = [0] * len(tile)
    for p, a in enumerate(save.omap):
        if a is not None:
            starts[a] = coord[p] * tile[a]
    return tuple(slice(s, s + t) for s, t in zip(starts, tile, strict=True))


def _run_custom(k: CustomKernel, tensors: dict[str, np.ndarray], shapes: dict[str, tuple[int, ...]],
                scalars: dict[str, tuple[int, ...]], phases: tuple[str, ...]) -> None:
    grid = tuple(int(g) for g in k.grid)
    loop = int(k.loop)
    for save in k.saves:
        tensors[save.tensor] = np.full(shapes[save.tensor], np.nan)
    shifts = {i for i in range(len(k.ops)) if shift_by_max(k.ops, i)}
    for coord in grid_coords(grid):
        vals: list[np.ndarray | None] = [None] * len(k.ops)
        running: dict[int, np.ndarray] = {}  # running max of each rescaled accumulator
        for it in range(loop):
            for i, op in enumerate(k.ops):
                if phases[i] != "loop":
                    continue
                vals[i] = _eval(op, vals, tensors, grid, loop, coord, it, scalars, i in shifts)
            for i, op in enumerate(k.ops):
                if isinstance(op, Accum):
                    vals[i] = _accumulate(op, vals, vals[i] if it else None, running, i)
        for i, op in enumerate(k.ops):
            if phases[i] == "post" and not isinstance(op, Accum):
                vals[i] = _eval(op, vals, tensors, grid, loop, coord, 0, scalars, i in shifts)
            elif isinstance(op, Save):
                tile = vals[op.x]
                assert tile is not None
                tensors[op.tensor][save_slices(tile.shape, op, coord)] = tile


def _accumulate(op: Accum, vals: list[np.ndarray | None], prev: np.ndarray | None,
                running: dict[int, np.ndarray], i: int) -> np.ndarray:
    """One iteration of an accumulator (``prev`` None on the first)."""
    x = vals[op.x]
    assert x is not None
    part = x if op.reduce_dim is None else np.sum(x, axis=op.reduce_dim, keepdims=True)
    if op.rescale is not None:
        c = vals[op.rescale]
        assert c is not None
        return rescaled(part, c, prev, running, i)
    if prev is None:
        return part.copy()
    return np.maximum(prev, part) if op.fn is Reduce.MAX else prev + part


def rescaled(x: np.ndarray, c: np.ndarray, prev: np.ndarray | None, running: dict[int, np.ndarray],
              i: int) -> np.ndarray:
    """``acc · exp(m − m') + x · exp(c − m')`` with ``m' = max(m, c)`` (a factor is 1 where its max
    did not change, so an all −inf row stays finite as the generated code does)."""
    c = np.broadcast_to(c, x.shape)
    if prev is None:
        running[i] = c.copy()
        return x * 1.0
    m = running[i]
    mn = np.maximum(m, c)
    a = np.where(m == mn, 1.0, np.exp(m - mn))
    b = np.where(c == mn, 1.0, np.exp(c - mn))
    running[i] = mn
    return prev * a + x * b


def _eval(op: BlockOp, vals: list[np.ndarray | None], tensors: dict[str, np.ndarray], grid: tuple[int, ...],
          loop: int, coord: tuple[int, ...], it: int, scalars: dict[str, tuple[int, ...]],
          shift: bool = False) -> np.ndarray:
    """Op ``op`` of a block; ``shift``: it is ``x − max(x)`` (``ir.shift_by_max``)."""
    def v(i: int) -> np.ndarray:
        x = vals[i]
        assert x is not None
        return x

    assert not isinstance(op, Accum | Save), f"not evaluated here: {op!r}"
    match op:
        case Load():
            t = np.swapaxes(tensors[op.tensor], -1, -2) if op.transposed else tensors[op.tensor]
            return t[load_slices(t.shape, op, grid, loop, coord, it)]
        case UnaryOp(fn, x, scalar):
            c = scalar.resolve(scalars) if scalar is not None else 0.0
            return UNARY_NUMPY[fn](v(x), c)
        case BinaryOp(fn, a, b):
            return shifted(v(a), v(b)) if shift else BINARY_NUMPY[fn](v(a), v(b))
        case MatmulOp(a, b):
            return np.matmul(v(a), v(b))
        case ReduceOp(fn, x, dim):
            return REDUCE_NUMPY[fn](v(x), dim)
        case _:
            assert_never(op)


def run_predefined(k: PredefinedKernel, tensors: dict[str, np.ndarray], scalars: dict[str, tuple[int, ...]]) -> None:
    args = [tensors[t] for t in k.inputs]
    assert k.kind is not OpKind.INPUT, "an input is not a kernel"
    match k.kind:
        case OpKind.UNARY:
            assert isinstance(k.fn, Unary)
            c = k.scalar.resolve(scalars) if k.scalar is not None else 0.0
            out = UNARY_NUMPY[k.fn](args[0], c)
        case OpKind.BINARY:
            assert isinstance(k.fn, Binary)
            out = BINARY_NUMPY[k.fn](args[0], args[1])
        case OpKind.REDUCE:
            assert isinstance(k.fn, Reduce) and k.dim is not None
            out = REDUCE_NUMPY[k.fn](args[0], k.dim)
        case OpKind.MATMUL:
            out = np.matmul(args[0], args[1])
        case OpKind.TRANSPOSE:
            out = np.swapaxes(args[0], -1, -2)
        case _:
            assert_never(k.kind)
    tensors[k.output] = out


def input_tensors(kg: KernelGraph, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The program's inputs as float64 arrays by name (InputError for a missing or misshapen one)."""
    tensors: dict[str, np.ndarray] = {}
    for t in kg.true_inputs:  # (a padded tail's plan reads the program's tensors)
        if t.name not in inputs:
            raise InputError(f"{kg.program}: no value for input {t.name!r}")
        arr = np.asarray(inputs[t.name], dtype=np.float64)
        if arr.shape != t.shape:
            raise InputError(f"{kg.program}: input {t.name!r} has shape {arr.shape}, the plan expects {t.shape}")
        tensors[t.name] = arr
    return tensors


def run(kg: KernelGraph, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run a concrete μGraph on float64 inputs (by name); return its outputs by name. A plan with a
    padded tail runs in the emulator (``prism.codegen.emulate``), which masks it as the GPU does."""
    if kg.tail is not None:
        raise IRError(f"{kg.program}: the interpreter runs plans at the program's shapes, not padded "
                      f"to {kg.tail.padded}; prism.codegen.emulate runs padded ones")
    return run_kernels(kg, inputs, lambda k, ks, tensors, shapes, scalars:
                       _run_custom(k, tensors, shapes, scalars, ks.phases))


# Tensors after the first kernels of a plan, by those kernels and the shapes of what they wrote: for plans
# run on the same inputs, many of which begin alike (a split graph's first kernel beside each of its
# combines), so each prefix runs once (``run_kernels``' ``prefixes``)
Prefixes = dict[tuple[object, ...], dict[str, np.ndarray]]
PREFIXES_LIMIT = 4096

CustomRun = Callable[[CustomKernel, KernelShapes, dict[str, np.ndarray], dict[str, tuple[int, ...]],
                      dict[str, tuple[int, ...]]], None]


def run_kernels(kg: KernelGraph, inputs: Mapping[str, np.ndarray], custom: CustomRun, *,
                structure: bool = True, prefixes: Prefixes | None = None) -> dict[str, np.ndarray]:
    """The kernels of a concrete μGraph in order, its custom kernels by ``custom`` (kernel, its
    shapes, the tensors so far, every tensor's shape, the scalars' sizes); its outputs by name.
    ``structure=False``: the caller ran ``ir.check_structure`` on the plan (at any sizes).
    ``prefixes``: what earlier plans' first kernels computed from these same ``inputs`` (read and added
    to; right only where ``custom`` writes each saved tensor into a new array, never into one it has)."""
    shapes, per_kernel = infer(kg, structure=structure)
    tensors = input_tensors(kg, inputs)
    scalars = {t.name: t.shape for t in kg.inputs}
    keys = _prefix_keys(kg, shapes) if prefixes is not None else []
    start = 0
    for i in reversed(range(len(keys))):  # the longest prefix an earlier plan ran
        if prefixes and (got := prefixes.get(keys[i])) is not None:
            tensors, start = dict(got), i + 1
            break
    with np.errstate(all="ignore"):
        for i in range(start, len(kg.kernels)):
            k, ks = kg.kernels[i], per_kernel[i]
            if isinstance(k, PredefinedKernel):
                run_predefined(k, tensors, scalars)
            else:
                assert ks is not None
                custom(k, ks, tensors, shapes, scalars)
            if prefixes is not None and i < len(keys):
                remember(prefixes, PREFIXES_LIMIT, keys[i], dict(tensors))
    return {t.name: tensors[t.name] for t in kg.outputs}


def _prefix_keys(kg: KernelGraph, shapes: Mapping[str, tuple[int, ...]]) -> list[tuple[object, ...]]:
    """Per proper prefix of ``kg``'s kernels (the first i + 1, all but the last): its kernels and the
    shapes of the tensors they write."""
    keys: list[tuple[object, ...]] = []
    written: list[tuple[str, tuple[int, ...]]] = []
    for i, k in enumerate(kg.kernels[:-1]):
        names = [k.output] if isinstance(k, PredefinedKernel) else [s.tensor for s in k.saves]
        written += [(n, shapes[n]) for n in names]
        keys.append((kg.kernels[:i + 1], tuple(written)))
    return keys
