"""Canonical forms of kernel graphs: op order, symbol names, kernel names and grid order do not matter."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from prism import plans, workloads
from prism.graph import Graph
from prism.ir import CustomKernel, KernelGraph, Load, Save, op_args
from prism.partition import predefined_plan
from prism.search import canonical, canonical_key, structure_key


def _permute_ops(kg: KernelGraph, order: list[int]) -> KernelGraph:
    """The same block graph with its ops in another topological order."""
    k = kg.kernels[0]
    assert isinstance(k, CustomKernel)
    pos = {j: i for i, j in enumerate(order)}
    ops = []
    for j in order:
        op = k.ops[j]
        fields = {f: pos[getattr(op, f)] for f in ("x", "a", "b", "rescale") if isinstance(getattr(op, f, None), int)}
        ops.append(replace(op, **fields))  # type: ignore[type-var]
    for i, op in enumerate(ops):
        assert all(a < i for a in op_args(op))
    return replace(kg, kernels=(replace(k, ops=tuple(ops)),))


def test_op_order_does_not_matter() -> None:
    kg = plans.rmsnorm_linear_plan(workloads.rmsnorm_linear())
    # plan order: 0 X, 1 W, 2 mm, 3 acc, 4 sq, 5 acc, 6-8 rms, 9 mul, 10 save; another valid order:
    other = _permute_ops(kg, [1, 0, 4, 5, 6, 7, 8, 2, 3, 9, 10])
    assert canonical_key(other) == canonical_key(kg)
    assert structure_key(other) == structure_key(kg)


def test_names_do_not_matter() -> None:
    g = workloads.gqa()
    kg = plans.gqa_split_plan(g)
    k0, k1 = kg.kernels
    assert isinstance(k0, CustomKernel) and isinstance(k1, CustomKernel)

    def ren(op: object) -> object:
        if isinstance(op, Load) and op.tensor in ("N", "D"):
            return replace(op, tensor={"N": "part_num", "D": "part_den"}[op.tensor])
        if isinstance(op, Save) and op.tensor in ("N", "D"):
            return replace(op, tensor={"N": "part_num", "D": "part_den"}[op.tensor])
        return op

    renamed = replace(kg, kernels=(
        replace(k0, name="first", grid=("bx", "split"), loop="kv", ops=tuple(ren(o) for o in k0.ops)),  # type: ignore[misc]
        replace(k1, name="second", grid=("bx",), loop="split", ops=tuple(ren(o) for o in k1.ops)),  # type: ignore[misc]
    ))
    assert canonical_key(renamed) == canonical_key(kg)


def test_grid_order_and_maps() -> None:
    g = workloads.rmsnorm_linear()
    kg = plans.rmsnorm_linear_2d_plan(g)
    k = kg.kernels[0]
    assert isinstance(k, CustomKernel)
    def swap(op: object) -> object:
        if isinstance(op, Load):
            return replace(op, imap=op.imap[::-1])
        if isinstance(op, Save):
            return replace(op, omap=op.omap[::-1])
        return op

    swapped_ops = tuple(swap(op) for op in k.ops)
    swapped = replace(kg, kernels=(replace(k, grid=k.grid[::-1], ops=swapped_ops),))
    assert canonical_key(swapped) == canonical_key(kg)
    assert canonical_key(swapped, grid_perms=False) != canonical_key(kg, grid_perms=False)
    wrong = plans.rmsnorm_linear_2d_plan(g, omap=(1, 0))
    assert canonical_key(wrong) != canonical_key(kg)  # maps matter ...
    assert structure_key(wrong) == structure_key(kg)  # ... except in the structure key
    assert structure_key(plans.rmsnorm_linear_plan(g)) != structure_key(kg)  # 1 vs 2 grid dims


def test_the_canonical_text_of_a_two_kernel_plan_is_pinned() -> None:
    """The text the rendering produced before its kernel bodies were cached (``canonical._body``):
    search caches and plan deduplication key on it, so a change of format is a change of keys."""
    from test_verify import SMALL

    from prism.search import canonical_form

    kg = plans.safe_gqa_split_plan(workloads.program("gqa_safe", **SMALL["gqa_safe"]))
    assert canonical_form(kg) == (
        "K[s0,s1;s2]{L(Kt|[0, 2]|2);L(Q|[0, None]|None);L(V|[0, 1]|1);MatmulOp(1,0;);ReduceOp(3;max|2);"
        "BinaryOp(3,4;sub);Accum(4;None|max|False);UnaryOp(5;exp|None);S(6,~t0|[0, 2]);MatmulOp(7,2;);"
        "Accum(7,4;2|sum|True);Accum(9,4;None|sum|True);S(10,~t1|[0, 2]);S(11,~t2|[0, 2])} "
        "K[s0;s1]{L(~t0|[0]|2);L(~t1|[0]|2);L(~t2|[0]|2);Accum(1,0;None|sum|True);Accum(2,0;None|sum|True);"
        "BinaryOp(4,3;div);S(5,O|[0])}")


def _order_by_definition(ops: list[object], names: dict[str, str], maps: bool) -> list[int]:
    """The canonical op order as defined: at each step the least ``(op_key, index)`` of the ops
    whose operands are all placed, every key computed afresh."""
    from prism.search.canonical import INTERMEDIATE, op_key

    def tname(op: object) -> str:
        if isinstance(op, Load):
            return names.get(op.tensor, op.tensor)
        return names.get(op.tensor, INTERMEDIATE) if isinstance(op, Save) else ""

    pos: dict[int, int] = {}
    while len(pos) < len(ops):
        avail = [j for j in range(len(ops)) if j not in pos and all(a in pos for a in op_args(ops[j]))]  # type: ignore[arg-type]
        best = min(avail, key=lambda j: (op_key(ops[j], pos, tname(ops[j]), maps), j))  # type: ignore[arg-type]
        pos[best] = len(pos)
    return sorted(pos, key=pos.__getitem__)


def test_the_canonical_op_order_is_the_least_available_op_at_each_step() -> None:
    """``canonical_order`` keeps the available ops in a heap, each key computed once: the same order
    as taking the least available op afresh at every step, for the kernels of several plans in
    several topological orders of their ops, with and without maps."""
    import random

    from test_verify import SMALL

    from prism.search.canonical import canonical_order

    rng = random.Random(0)
    graphs = [plans.rmsnorm_linear_plan(workloads.rmsnorm_linear()), plans.swiglu_plan(workloads.swiglu()),
              plans.rmsnorm_mlp_plan(workloads.rmsnorm_mlp()),
              plans.safe_gqa_split_plan(workloads.program("gqa_safe", **SMALL["gqa_safe"]))]
    checked = 0
    for kg in graphs:
        names = {t.name: t.name for t in kg.inputs}
        for k in kg.kernels:
            assert isinstance(k, CustomKernel)
            for _ in range(5):
                order: list[int] = []
                while len(order) < len(k.ops):  # a random topological order of the ops
                    order.append(rng.choice([j for j in range(len(k.ops)) if j not in order
                                             and all(a in order for a in op_args(k.ops[j]))]))
                ops = _permute_ops(replace(kg, kernels=(k,)), order).kernels[0].ops  # type: ignore[union-attr]
                for maps in (True, False):
                    assert canonical_order(ops, names, maps) == _order_by_definition(list(ops), names, maps)
                    checked += 1
    assert checked == 2 * 5 * sum(len(kg.kernels) for kg in graphs)


def _chain(n: int) -> Graph:
    """``n`` matmuls, each but the last followed by one silu: a plan of predefined kernels in one chain."""
    g = Graph()
    h = g.input((8, 64), "float16", "X")
    for i in range(n):
        h = g.matmul(h, g.input((64, 64), "float16", f"W{i}"))
        if i + 1 < n:
            h = g.silu(h)
    g.output(h, "O")
    return g


@pytest.mark.timeout(30)
def test_a_long_chain_of_kernels_is_keyed_without_walking_every_order_of_them() -> None:
    # 15 kernels: the old filter of all 15! kernel orders did not end in 20 s; a chain has one order
    kg = predefined_plan(_chain(8))
    assert len(kg.kernels) == 15
    renamed = replace(kg, kernels=tuple(replace(k, name=f"other{i}") for i, k in enumerate(kg.kernels)))
    assert canonical_key(renamed) == canonical_key(kg)


def test_independent_kernels_are_keyed_alike_in_either_order() -> None:
    g = Graph()
    x = g.input((8, 64), "float16", "X")
    g.output(g.silu(x), "A")
    g.output(g.exp(x), "B")
    kg = predefined_plan(g)
    assert len(kg.kernels) == 2
    swapped = replace(kg, kernels=kg.kernels[::-1])
    assert canonical_key(swapped) == canonical_key(kg)


def _every_combination(kg: KernelGraph) -> str:
    """The canonical form by brute force: the least text over every kernel order and every
    combination of the kernels' grid-dim orders."""
    io = {t.name for t in kg.inputs} | {t.name for t in kg.outputs}
    best = None
    for kernels in canonical._kernel_orders(kg):
        choices = [list(itertools.permutations(range(len(k.grid)))) if isinstance(k, CustomKernel) else [()]
                   for k in kernels]
        for perms in itertools.product(*choices):
            names: tuple[tuple[str, str], ...] = tuple(sorted((n, n) for n in io))
            syms: dict[str, str] = {}
            parts = []
            for k, perm in zip(kernels, perms, strict=True):
                part, names = canonical._part(k, perm, names, syms, True)
                parts.append(part)
            text = " ".join(parts)
            best = text if best is None or text < best else best
    assert best is not None
    return best


def test_the_least_text_is_found_kernel_by_kernel() -> None:
    # two kernels sharing size symbols, with their grid dims in every order: the kernel-by-kernel
    # search of the least text agrees with trying every combination
    for kg in (plans.gqa_split_plan(workloads.gqa()), plans.rmsnorm_linear_2d_plan(workloads.rmsnorm_linear())):
        for flips in itertools.product((False, True), repeat=len(kg.kernels)):
            kernels = []
            for k, flip in zip(kg.kernels, flips, strict=True):
                assert isinstance(k, CustomKernel)
                kernels.append(_flipped(k) if flip else k)
            other = replace(kg, kernels=tuple(kernels))
            assert canonical.canonical_form(other) == _every_combination(other)
            assert canonical_key(other) == canonical_key(kg)


def _flipped(k: CustomKernel) -> CustomKernel:
    """``k`` with its first two grid dims swapped (the same kernel up to grid order)."""
    if len(k.grid) < 2:
        return k
    perm = [1, 0, *range(2, len(k.grid))]

    def flip(op: object) -> object:
        if isinstance(op, Load):
            return replace(op, imap=tuple(op.imap[p] for p in perm))
        if isinstance(op, Save):
            return replace(op, omap=tuple(op.omap[p] for p in perm))
        return op

    return replace(k, grid=tuple(k.grid[p] for p in perm), ops=tuple(flip(op) for op in k.ops))  # type: ignore[misc]
