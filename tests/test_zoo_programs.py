"""CPU tests of the program zoo (bench/zoo.py): every program builds at every size set, is small where it
should be, evaluates to finite values, and the zoo as a whole covers the operator set of the Graph API."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from bench.zoo import (
    CHANNELS_FIRST,
    FAMILIES,
    HELD_OUT,
    HELD_OUT_2,
    HELD_OUT_3,
    NEW_OPS,
    ZOO,
    expand_names,
    zoo_graph,
)
from prism.graph import Graph, OpKind
from prism.ops import ITEMSIZE, Binary, Reduce, Unary
from prism.rows import searched_graph

NAMES = list(ZOO)
INTERNAL = re.compile(r"^t\d+$")
HELD = HELD_OUT | HELD_OUT_2 | HELD_OUT_3
MODEL_SIZED = HELD | NEW_OPS | CHANNELS_FIRST  # at the widths of the models they come from


def _is_pow2(v: int) -> bool:
    return v >= 1 and v & (v - 1) == 0


def _builds(name: str) -> dict[str, Graph]:
    p = ZOO[name]
    out = {"small": zoo_graph(name, "small"), "decode": zoo_graph(name, "decode")}
    if p.prefill is not None:
        out["prefill"] = zoo_graph(name, "prefill")
    return out


@pytest.mark.parametrize("name", NAMES)
def test_odd_sizes_build_the_same_structure_off_the_powers_of_two(name: str) -> None:
    p = ZOO[name]
    base = searched_graph(zoo_graph(name, "decode")).structure_key()
    for which, pow2 in (("decode_odd", "decode"), ("prefill_odd", "prefill")):
        if getattr(p, pow2) is None:
            assert getattr(p, which) is None
            continue
        sizes = p.sizes(which)
        assert sizes.keys() == p.sizes(pow2).keys()
        assert not all(_is_pow2(v) for v in sizes.values()), (which, sizes)
        g = zoo_graph(name, which)
        assert searched_graph(g).structure_key() == base, which
        nbytes = sum(math.prod(t.shape) * ITEMSIZE[t.dtype] for t in g.inputs)
        assert nbytes < 256 * 2**20, f"{name} {which}: inputs take {nbytes / 2**20:.0f} MiB"


def test_zoo_shape() -> None:
    assert len(ZOO) >= 24
    names = list(ZOO)
    assert set(names[-len(CHANNELS_FIRST):]) == CHANNELS_FIRST  # sections 8 to 12 close the zoo, in order
    names = names[: -len(CHANNELS_FIRST)]
    assert set(names[-len(NEW_OPS):]) == NEW_OPS
    names = names[: -len(NEW_OPS)]
    assert set(names[-len(HELD_OUT_3):]) == HELD_OUT_3
    assert set(names[-len(HELD_OUT_3) - len(HELD_OUT_2) : -len(HELD_OUT_3)]) == HELD_OUT_2
    assert set(names[-len(HELD) : -len(HELD_OUT_3) - len(HELD_OUT_2)]) == HELD_OUT
    assert set(FAMILIES) == {p.family for p in ZOO.values()}
    for fam in FAMILIES:
        assert sum(p.family == fam for p in ZOO.values()) >= 4, fam
    for name, p in ZOO.items():
        assert p.name == name
        assert p.description.strip() and "\n" not in p.description, name


LONG_ROWS = {"vocab_softmax"}  # rows longer than a block's shared memory holds


@pytest.mark.parametrize("name", NAMES)
def test_program_builds_at_every_size(name: str) -> None:
    p = ZOO[name]
    graphs = _builds(name)
    assert (p.prefill is None) == (p.family == "attention")
    keys = {searched_graph(g).structure_key() for g in graphs.values()}  # [b, s, d] programs: rows merged
    assert len(keys) == 1, f"{name}: the size sets should share one structure"
    for which, g in graphs.items():
        sizes = p.sizes(which)
        assert name in MODEL_SIZED or all(_is_pow2(v) for v in sizes.values()), (which, sizes)
        assert g.outputs[0].name == "O"  # "O" first; a program may return more (add_norm_two_out)
        for t in [*g.inputs, *g.outputs]:
            assert t.name.isidentifier() and not INTERNAL.match(t.name), t.name
            assert t.dtype == "float16"
        rank = 3 if p.family == "attention" or "b" in sizes else 2  # "b": [batch, tokens, d] activations
        assert all(len(t.shape) == rank for t in g.outputs)
        if which == "small":
            assert all(1 <= v <= 8 for v in sizes.values()), sizes
            assert all(1 <= s <= 8 for t in g.inputs for s in t.shape)
        else:
            nbytes = sum(math.prod(t.shape) * ITEMSIZE[t.dtype] for t in g.inputs)
            assert nbytes < 256 * 2**20, f"{name} {which}: inputs take {nbytes / 2**20:.0f} MiB"
            if name in MODEL_SIZED:  # the sizes of the models they come from, in a wider envelope
                _held_out_sizes(p.family, which, sizes)
            elif p.family == "attention":
                assert 2 <= sizes["batch"] <= 8 and 4 <= sizes["group"] <= 8
                assert 1024 <= sizes["kv_len"] <= 8192 and sizes["head_dim"] == 128
            else:
                rows = sizes["n"] if "n" in sizes else sizes["b"] * sizes["s"]  # [batch, tokens, d]: b·s rows
                if name in LONG_ROWS:  # a vocabulary's logits: at prefill, the last position of each sequence
                    assert (1 <= rows <= 16) if which == "decode" else (16 <= rows <= 128)
                    assert 32768 <= sizes["d"] <= 262144
                    continue
                assert (1 <= rows <= 16) if which == "decode" else (128 <= rows <= 2048)
                assert 1024 <= sizes["d"] <= 4096


def _held_out_sizes(family: str, which: str, sizes: dict[str, int]) -> None:
    if family == "attention":
        assert 2 <= sizes["batch"] <= 32 and 1 <= sizes["group"] <= 8, sizes
        assert 1024 <= sizes["kv_len"] <= 8192 and sizes["head_dim"] in (64, 128, 256), sizes
        return
    assert (1 <= sizes["n"] <= 64) if which == "decode" else (128 <= sizes["n"] <= 4096), sizes
    assert 512 <= sizes["d"] <= 32768, sizes  # up to a vocabulary


@pytest.mark.parametrize("name", NAMES)
def test_small_program_evaluates(name: str) -> None:
    g = zoo_graph(name, "small")
    rng = np.random.default_rng(sum(map(ord, name)))
    values = {t.name: rng.standard_normal(t.shape) for t in g.inputs}
    out = g.evaluate(values)
    assert set(out) == {t.name for t in g.outputs}
    for t in g.outputs:
        assert out[t.name].shape == t.shape
        assert np.all(np.isfinite(out[t.name])), f"{name}: non-finite output"


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_dtype_is_respected(dtype: str) -> None:
    for name in NAMES:
        g = zoo_graph(name, "small", dtype=dtype)
        assert all(t.dtype == dtype for t in [*g.inputs, *g.outputs]), name


def test_zoo_covers_the_operator_set() -> None:
    unary: set[Unary] = set()
    binary: set[Binary] = set()
    reduce: set[Reduce] = set()
    kinds: set[OpKind] = set()
    batched_matmul = False
    for name in NAMES:
        g = zoo_graph(name, "small")
        for node in g.nodes:
            kinds.add(node.kind)
            if isinstance(node.fn, Unary):
                unary.add(node.fn)
            elif isinstance(node.fn, Binary):
                binary.add(node.fn)
            elif isinstance(node.fn, Reduce):
                reduce.add(node.fn)
            if node.kind is OpKind.MATMUL and len(node.shape) == 3:
                batched_matmul = True
    # gelu(x, "none") and maximum / minimum with a number reach the other three
    reachable = {u for u in Unary if callable(getattr(Graph, u.value, None))} | {Unary.GELU_ERF, Unary.MAX_SCALAR,
                                                                                  Unary.MIN_SCALAR}
    assert reachable == set(Unary) - {Unary.CHAIN}  # every Unary but the search's stand-in has a Graph method
    assert reachable <= unary, f"no zoo program uses {sorted(u.value for u in reachable - unary)}"
    assert binary == set(Binary)
    assert reduce == set(Reduce)
    assert {OpKind.MATMUL, OpKind.TRANSPOSE} <= kinds
    assert batched_matmul


def test_named_sets_expand_in_zoo_order() -> None:
    names = expand_names(["@new_ops", "mish", "softmax"])
    assert names[: len(NEW_OPS)] == [n for n in ZOO if n in NEW_OPS] and names[-1] == "softmax"
    assert len(names) == len(NEW_OPS) + 1  # mish once
    with pytest.raises(ValueError, match="@nope"):
        expand_names(["@nope"])
    with pytest.raises(ValueError, match="no_such"):
        expand_names(["no_such"])


def test_zoo_graph_errors() -> None:
    with pytest.raises(KeyError, match="unknown zoo program"):
        zoo_graph("no_such_program")
    with pytest.raises(ValueError, match="no prefill sizes"):
        zoo_graph("scaled_attention", "prefill")
    with pytest.raises(ValueError, match="unknown size set"):
        zoo_graph("rms_norm", "huge")
