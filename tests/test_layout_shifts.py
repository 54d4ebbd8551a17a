"""Layout typing of values shifted by their chunk's own max (``prism.search.layout``): a plain sum
across chunks of such values is rejected, unless some op combined two shifted values (a shift that may
cancel: the log-sum-exp merge), and a chunk's own softmax (a ratio of two of its partial sums) is
summed across chunks only by a correction.

Each plan here is split-KV safe attention built from the hand plan (``plans.safe_gqa_split_plan``),
with its combine changed; the numeric screen says which are right."""

from __future__ import annotations

from dataclasses import replace

import pytest

from prism import plans, workloads
from prism.graph import Graph
from prism.ir import Accum, BinaryOp, BlockOp, CustomKernel, KernelGraph, Load, Save, UnaryOp
from prism.ops import Binary, Reduce, Unary
from prism.search.layout import IllTyped, check_layout, layout_ok
from prism.verify.screen import screen

SIZES = {"batch": 6, "group": 6, "kv_len": 36, "head_dim": 6}


def _hand_split() -> tuple[Graph, CustomKernel]:
    """The program and the split kernel of its hand split-KV plan."""
    g = workloads.program("gqa_safe", **SIZES)
    split = plans.safe_gqa_split_plan(g).kernels[0]
    assert isinstance(split, CustomKernel)
    return g, split


def _split(combine: list[BlockOp], extra: list[BlockOp] | None = None,
           saves: list[BlockOp] | None = None) -> tuple[Graph, KernelGraph]:
    """The hand split plan with ``combine`` as its combine kernel; ``extra`` ops and ``saves`` replace
    the split kernel's three saves (N, D, M) where given."""
    g, split = _hand_split()
    ops = list(split.ops)
    if saves is not None:
        ops = [op for op in ops if not isinstance(op, Save)] + (extra or []) + saves
    kernels = [replace(split, ops=tuple(ops)), CustomKernel("combine", ("x",), "s", tuple(combine))]
    return g, KernelGraph.of(g, "gqa_safe", kernels)


def test_the_rescaled_combine_is_well_typed_and_right() -> None:
    g = workloads.program("gqa_safe", **SIZES)
    kg = plans.safe_gqa_split_plan(g)
    check_layout(kg)
    assert screen(g, [kg]) == [True]


def test_a_plain_sum_of_the_partials_is_ill_typed_and_wrong() -> None:
    """The combine of the hand plan without its rescaling: each split's N and D are shifted by its own max."""
    g, kg = _split([Load("N", (0,), 2), Load("D", (0,), 2), Accum(0), Accum(1), BinaryOp(Binary.DIV, 2, 3),
                    Save(4, "O", (0,))])
    with pytest.raises(IllTyped, match="plain sum of chunks shifted by their own maxes"):
        check_layout(kg)
    assert screen(g, [kg]) == [False]


def _split_ops() -> tuple[int, int, int]:
    """Indices of the split kernel's N, D and running max M (the ops its saves read)."""
    n, d, m = (op.x for op in _hand_split()[1].ops if isinstance(op, Save))
    return n, d, m


def test_a_plain_sum_of_each_chunks_own_softmax_is_ill_typed_and_wrong() -> None:
    """Each split saves its own normalised output N / D (the shifts cancel in the ratio); summing those
    across splits is not attention."""
    n, d, _ = _split_ops()
    end = _split_end()
    g, kg = _split([Load("O_c", (0,), 2), Accum(0), Save(1, "O", (0,))],
                   extra=[BinaryOp(Binary.DIV, n, d)], saves=[Save(end, "O_c", (0, 2))])
    with pytest.raises(IllTyped, match="plain sum of chunks shifted by their own maxes"):
        check_layout(kg)
    assert screen(g, [kg]) == [False]


def _split_end() -> int:
    """Index of the first op after the split kernel's ops without its saves."""
    return sum(not isinstance(op, Save) for op in _hand_split()[1].ops)


def test_the_log_sum_exp_merge_of_each_chunks_own_softmax_is_kept() -> None:
    """FlashDecoding's merge: each split saves its own output O_c = N / D and L_c = M + log D; the combine
    sums O_c · exp(L_c − max L) over Σ exp(L_c − max L). Right, so the typing must not reject it."""
    n, d, m = _split_ops()
    end = _split_end()
    extra: list[BlockOp] = [BinaryOp(Binary.DIV, n, d), UnaryOp(Unary.LOG, d), BinaryOp(Binary.ADD, m, end + 1)]
    combine: list[BlockOp] = [Load("O_c", (0,), 2), Load("L", (0,), 2),
               Accum(0, rescale=1),  # Σ O_c · exp(L_c − max L)
               BinaryOp(Binary.DIV, 1, 1),  # ones of L's shape
               Accum(3, rescale=1),  # Σ exp(L_c − max L)
               BinaryOp(Binary.DIV, 2, 4), Save(5, "O", (0,))]
    g, kg = _split(combine, extra=extra, saves=[Save(end, "O_c", (0, 2)), Save(end + 2, "L", (0, 2))])
    assert screen(g, [kg]) == [True]
    assert layout_ok(kg)


def test_an_accumulator_over_one_iteration_is_its_value() -> None:
    """A rescaled or max accumulator over a loop of size 1 is typed as its value (it was left untyped), so
    the one-iteration split of a plan that sums the chunks' own softmaxes is caught too."""
    n, d, _ = _split_ops()
    end = _split_end()
    g, kg = _split([Load("O_c", (0,), 2), Accum(0), Save(1, "O", (0,))],
                   extra=[BinaryOp(Binary.DIV, n, d)], saves=[Save(end, "O_c", (0, 2))])
    split = kg.kernels[0]
    assert isinstance(split, CustomKernel) and any(isinstance(op, Accum) and op.fn is Reduce.SUM and
                                                  op.rescale is not None for op in split.ops)
    one = KernelGraph.of(g, "gqa_safe", [replace(split, loop=1), *kg.kernels[1:]])
    with pytest.raises(IllTyped, match="plain sum of chunks shifted by their own maxes"):
        check_layout(one)
