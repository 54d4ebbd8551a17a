"""PyTorch capture without torch: the fx-node table on stand-in nodes, partitioning into convex
regions, and regions bound as Prism Graphs checked against NumPy forms of the PyTorch ops they stand
for (tests/test_capture_torch.py runs Dynamo's real graphs where torch is installed)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from prism.capture import aten
from prism.capture.build import RegionSpec, bind, evaluate, spec_from_json, spec_to_json
from prism.capture.ir import Captured, Ref, Step, Support
from prism.capture.partition import PNode, partition
from prism.errors import GraphError, SerializationError
from prism.ops import Binary, Reduce, Unary

F, N, A = Support.FUSE, Support.NONE, Support.ALONE


def _nodes(spec: list[tuple[tuple[int, ...], Support]]) -> list[PNode]:
    return [PNode(i, args, s) for i, (args, s) in enumerate(spec)]


def test_a_chain_of_supported_nodes_is_one_region() -> None:
    got = partition(_nodes([((), N), ((0,), F), ((1,), F), ((2,), F)]), min_ops=1)
    assert [r.nodes for r in got] == [(1, 2, 3)]


def test_an_unsupported_node_cuts_the_chain() -> None:
    got = partition(_nodes([((), N), ((0,), F), ((1,), F), ((2,), N), ((3,), F), ((4,), F)]), min_ops=1)
    assert [r.nodes for r in got] == [(1, 2), (4, 5)]


def test_a_region_never_leaves_and_reenters() -> None:
    # 1 -> 2 (unsupported) -> 3, and 1 -> 3: joining 3 to 1's region would put 2 inside a cycle
    got = partition(_nodes([((), N), ((0,), F), ((1,), N), ((1, 2), F), ((3,), F)]), min_ops=1)
    assert [r.nodes for r in got] == [(1,), (3, 4)]


def test_two_producer_regions_merge_when_convex() -> None:
    # 1 and 2 are separate regions (2 reads only the input); 3 reads both: one region
    got = partition(_nodes([((), N), ((0,), F), ((0,), F), ((1, 2), F)]), min_ops=1)
    assert [r.nodes for r in got] == [(1, 2, 3)]


def test_merging_producers_that_an_outside_path_joins_is_refused() -> None:
    # 1 -> 2 (unsupported) -> 3; 4 reads 1 and 3: merging {1} and {3} with 4 would enclose 2
    got = partition(_nodes([((), N), ((0,), F), ((1,), N), ((2,), F), ((1, 3), F)]), min_ops=1)
    assert sorted(r.nodes for r in got) == [(1,), (3, 4)]


def test_alone_nodes_are_regions_of_their_own_and_small_regions_are_dropped() -> None:
    nodes = _nodes([((), N), ((0,), F), ((1,), A), ((2,), F), ((3,), F)])
    got = partition(nodes, min_ops=2)
    assert [(r.nodes, r.alone) for r in got] == [((2,), True), ((3, 4), False)]
    casts = [PNode(0, (), N), PNode(1, (0,), F, computes=False), PNode(2, (1,), F)]
    assert partition(casts, min_ops=2) == []  # a cast and one op: one op is not worth a kernel


def _two_blocks(read_outside: bool, second_matmul: bool = True) -> list[PNode]:
    """x (0), an MLP-like block (1 linear, 2 silu, 3 linear), the residual add (4 = 3 + x), a norm-like
    chain (5 square, 6 mean, 7 mul by 4), the next block's projections (8, 9 linear or elementwise), and
    an unsupported node (10) that reads the residual add when ``read_outside``."""
    mm = second_matmul
    spec = [((), N, False), ((0,), F, True), ((1,), F, False), ((2,), F, True), ((3, 0), F, False),
            ((4,), F, False), ((5,), F, False), ((4, 6), F, False), ((7,), F, mm), ((7,), F, mm),
            ((4, 8) if read_outside else (8,), N, False)]
    return [PNode(i, args, s, matmul=m) for i, (args, s, m) in enumerate(spec)]


def test_a_region_of_two_blocks_is_cut_at_the_residual_stream() -> None:
    assert [r.nodes for r in partition(_two_blocks(True), min_ops=2)] == [(1, 2, 3, 4), (5, 6, 7, 8, 9)]
    assert [r.nodes for r in partition(_two_blocks(True), min_ops=2, split=False)] == [tuple(range(1, 10))]


def test_no_cut_without_a_value_read_outside_nor_before_a_block_without_a_matmul() -> None:
    # the residual add read only inside: cutting there would write a value the region keeps in registers
    assert [r.nodes for r in partition(_two_blocks(False), min_ops=2)] == [tuple(range(1, 10))]
    # the second part holds no matmul (a closing norm): it stays with the block before it
    assert [r.nodes for r in partition(_two_blocks(True, second_matmul=False), min_ops=2)] == [tuple(range(1, 10))]


def test_a_block_that_starts_with_the_residual_add_is_not_cut() -> None:
    # x + attn (1) read by the norm (2, 3) and the closing add (6) and outside (7): a cut after 1 leaves
    # a side without a matmul
    spec = [((), N, False), ((0,), F, False), ((1,), F, False), ((2,), F, True), ((3,), F, False),
            ((4,), F, True), ((5, 1), F, False), ((1, 6), N, False)]
    nodes = [PNode(i, args, s, matmul=m) for i, (args, s, m) in enumerate(spec)]
    assert [r.nodes for r in partition(nodes, min_ops=2)] == [(1, 2, 3, 4, 5, 6)]


def _rng_inputs(shapes: list[tuple[int, ...]], seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in shapes]


def test_rmsnorm_with_weight_into_linear_as_pytorch_writes_it() -> None:
    # x.float(); v = x.pow(2).mean(-1, keepdim=True); y = w * (x * rsqrt(v + eps)).to(dt); z = F.linear(y, W) + 1 - y?
    x, w, wl = 0, 1, 2  # region inputs: fx nodes 0, 1, 2
    steps = (
        Captured(3, Step.IDENTITY, (Ref(x),)),
        Captured(4, Step.UNARY, (Ref(3),), fn=Unary.SQUARE),
        Captured(5, Step.REDUCE, (Ref(4),), fn=Reduce.SUM, dim=-1, mean=True),
        Captured(6, Step.BINARY, (Ref(5), 1e-6), fn=Binary.ADD),
        Captured(7, Step.UNARY, (Ref(6),), fn=Unary.RSQRT),
        Captured(8, Step.BINARY, (Ref(3), Ref(7)), fn=Binary.MUL),
        Captured(9, Step.BINARY, (Ref(w), Ref(8)), fn=Binary.MUL),  # a 1-D weight broadcast from the left
        Captured(10, Step.LINEAR, (Ref(9), Ref(wl))),
        Captured(11, Step.BINARY, (1.0, Ref(10)), fn=Binary.SUB),  # 1 - z
    )
    spec = RegionSpec(steps, (x, w, wl), (9, 11))
    shapes = [(2, 3, 16), (16,), (8, 16)]
    program = bind(spec, shapes, "float16")
    assert program.dtype == "float16" and {t.dtype for t in program.graph.inputs} == {"float16"}
    assert [b.shape for b in program.inputs] == [(6, 16), (1, 16), (8, 16)]  # [2, 3] rows merged
    assert program.shapes == ((2, 3, 16), (2, 3, 8))
    xs, ws, wls = _rng_inputs(shapes)
    y = ws * (xs / np.sqrt((xs**2).mean(-1, keepdims=True) + 1e-6))
    got = evaluate(program, [xs, ws, wls])
    np.testing.assert_allclose(got[0], y, rtol=1e-12)
    np.testing.assert_allclose(got[1], 1.0 - y @ wls.T, rtol=1e-12)


def _attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float) -> np.ndarray:
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)  # PyTorch's enable_gqa pairing
    s = q @ np.swapaxes(k, -1, -2) * scale
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v


@pytest.mark.parametrize(("h", "hk", "length"), [(4, 4, 1), (8, 2, 1), (8, 2, 3)])
def test_attention_of_grouped_query_heads_reads_kv_rows_once(h: int, hk: int, length: int) -> None:
    spec = RegionSpec((Captured(3, Step.SDPA, (Ref(0), Ref(1), Ref(2))),), (0, 1, 2), (3,))
    shapes = [(2, h, length, 8), (2, hk, 5, 8), (2, hk, 5, 8)]
    program = bind(spec, shapes, "bfloat16")
    assert [b.shape for b in program.inputs] == [(2 * hk, h // hk * length, 8), (2 * hk, 5, 8), (2 * hk, 5, 8)]
    q, k, v = _rng_inputs(shapes, seed=1)
    (got,) = evaluate(program, [q, k, v])
    np.testing.assert_allclose(got, _attention(q, k, v, 8**-0.5), rtol=1e-10, atol=1e-12)


def test_a_cast_of_an_input_read_outside_is_passed_through() -> None:
    steps = (Captured(1, Step.IDENTITY, (Ref(0),)), Captured(2, Step.UNARY, (Ref(1),), fn=Unary.EXP))
    program = bind(RegionSpec(steps, (0,), (1, 2)), [(4, 4)], "float32")
    assert program.outputs == (0, "y0")
    (xs,) = _rng_inputs([(4, 4)])
    got = evaluate(program, [xs])
    np.testing.assert_array_equal(got[0], xs)
    np.testing.assert_allclose(got[1], np.exp(xs))


def test_shapes_the_ops_do_not_fit_raise_a_graph_error() -> None:
    steps = (Captured(2, Step.BINARY, (Ref(0), Ref(1)), fn=Binary.ADD), Captured(3, Step.UNARY, (Ref(2),), fn=Unary.EXP))
    spec = RegionSpec(steps, (0, 1), (3,))
    with pytest.raises(GraphError, match="broadcast"):
        bind(spec, [(4, 8), (4, 3)], "float16")
    with pytest.raises(GraphError, match="number / tensor"):
        bind(RegionSpec((Captured(1, Step.BINARY, (2.0, Ref(0)), fn=Binary.DIV),), (0,), (1,)), [(4,)], "float32")
    with pytest.raises(GraphError, match="computes nothing"):
        bind(RegionSpec((Captured(1, Step.IDENTITY, (Ref(0),)),), (0,), (1,)), [(4,)], "float32")


# ---------------------------------------------------------------- the fx table, on stand-in nodes
class _Meta:
    """What a node's ``meta["example_value"]`` offers the table: shape, dtype, device, itemsize."""

    def __init__(self, shape: tuple[int, ...], dtype: str = "float16") -> None:
        self.shape, self.dtype, self.device = shape, f"torch.{dtype}", "cuda:0"
        self.itemsize = {"float16": 2, "bfloat16": 2, "float32": 4, "int64": 8}[dtype]


class _FxNode:
    def __init__(self, op: str, target: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None,
                 out: _Meta | None = None) -> None:
        self.op, self.target, self.args, self.kwargs = op, target, args, kwargs or {}
        self.meta = {"example_value": out} if out is not None else {}
        self.all_input_nodes = [a for a in (*args, *self.kwargs.values()) if isinstance(a, _FxNode)]


def _fn(name: str, module: str = "torch") -> Any:
    def f() -> None: ...
    f.__name__, f.__module__ = name, module
    return f


class _Trace:
    """A tiny fx-like graph: ``add`` appends a node; ``map`` runs the table on the last one."""

    def __init__(self) -> None:
        self.nodes: list[_FxNode] = []

    def add(self, op: str, target: Any, *args: Any, out: _Meta | None = None, **kwargs: Any) -> _FxNode:
        self.nodes.append(_FxNode(op, target, args, kwargs, out))
        return self.nodes[-1]

    def map(self, node: _FxNode | None = None) -> aten.Mapped:
        return aten.capture(node or self.nodes[-1], {n: i for i, n in enumerate(self.nodes)})


def test_the_table_maps_an_rmsnorm_into_a_linear_as_dynamo_records_it() -> None:
    t = _Trace()
    x = t.add("placeholder", "x", out=_Meta((2, 1, 64)))
    w = t.add("placeholder", "w", out=_Meta((64,)))
    wl = t.add("placeholder", "wl", out=_Meta((32, 64)))
    h = t.add("call_method", "to", x, "torch.float32", out=_Meta((2, 1, 64), "float32"))
    assert t.map().step == Captured(3, Step.IDENTITY, (Ref(0),))
    sq = t.add("call_method", "pow", h, 2, out=_Meta((2, 1, 64), "float32"))
    assert t.map().step == Captured(4, Step.UNARY, (Ref(3),), fn=Unary.SQUARE)
    ms = t.add("call_method", "mean", sq, -1, keepdim=True, out=_Meta((2, 1, 1), "float32"))
    assert t.map().step == Captured(5, Step.REDUCE, (Ref(4),), fn=Reduce.SUM, dim=-1, mean=True)
    eps = t.add("call_function", _fn("add", "_operator"), ms, 1e-6, out=_Meta((2, 1, 1), "float32"))
    assert t.map().step == Captured(6, Step.BINARY, (Ref(5), 1e-6), fn=Binary.ADD)
    y = t.add("call_function", _fn("mul", "_operator"), w, eps, out=_Meta((2, 1, 64)))
    assert t.map().step is not None  # a lower-rank placeholder broadcasts from the left
    t.add("call_function", _fn("linear", "torch._C._nn"), y, wl, None, out=_Meta((2, 1, 32)))
    got = t.map()
    assert got.step == Captured(8, Step.LINEAR, (Ref(7), Ref(2))) and got.support is Support.FUSE
    assert aten.cost(t.nodes[-1]).flops == 2 * 2 * 32 * 64
    assert aten.cost(t.add("call_method", "view", y, 2, 64, out=_Meta((2, 64)))) == aten.Cost(0, 0)


def test_the_table_names_why_a_node_stays_with_pytorch() -> None:
    t = _Trace()
    x = t.add("placeholder", "x", out=_Meta((4, 8)))
    e = t.add("call_function", _fn("exp"), x, out=_Meta((4, 8)))
    cases = [
        (("call_method", "pow", x, 3), "exponent 3"),
        (("call_method", "sum", x, -1), "keepdim=False"),
        (("call_function", _fn("erfinv"), x), "erfinv: no Prism op"),
        (("call_function", _fn("cat"), [x, x], -1), "cat: no Prism op"),
        (("call_function", _fn("my_helper", "mymodule"), x), "call_function"),
        (("call_function", _fn("truediv", "_operator"), 2.0, x), "number / tensor"),
        (("call_function", _fn("add"), x, x), "extra arguments"),
    ]
    for (op, target, *args), why in cases:
        kwargs = {"alpha": 2} if why == "extra arguments" else {}
        node = t.add(op, target, *args, out=_Meta((4, 8)), **kwargs)
        got = t.map(node)
        assert got.step is None and why in got.why, (why, got.why)
    rows = t.add("call_function", _fn("amax"), e, [-1], True, out=_Meta((4, 1)))
    assert t.map().step is not None
    flat = t.add("call_method", "view", rows, 4, out=_Meta((4,)))
    t.add("call_function", _fn("mul", "_operator"), e, flat, out=_Meta((4, 8)))
    assert "lower-rank operand that is computed" in t.map().why
    t.add("call_function", _fn("exp"), x, out=_Meta((4, 8), "int64"))
    assert "dtype int64" in t.map().why


def test_attention_maps_at_decode_and_stays_with_pytorch_when_causal_over_rows() -> None:
    t = _Trace()
    q1 = t.add("placeholder", "q1", out=_Meta((2, 8, 1, 16)))
    q4 = t.add("placeholder", "q4", out=_Meta((2, 8, 4, 16)))
    k = t.add("placeholder", "k", out=_Meta((2, 2, 9, 16)))
    v = t.add("placeholder", "v", out=_Meta((2, 2, 9, 16)))
    sdpa = _fn("scaled_dot_product_attention", "torch._C._nn")
    t.add("call_function", sdpa, q1, k, v, is_causal=True, enable_gqa=True, out=_Meta((2, 8, 1, 16)))
    got = t.map()
    assert got.step == Captured(4, Step.SDPA, (Ref(0), Ref(2), Ref(3))) and got.support is Support.ALONE
    t.add("call_function", sdpa, q4, k, v, is_causal=True, enable_gqa=True, out=_Meta((2, 8, 4, 16)))
    assert "causal attention over more than one query row" in t.map().why
    t.add("call_function", sdpa, q4, k, v, k, out=_Meta((2, 8, 4, 16)))
    assert "an attention mask" in t.map().why


def test_a_region_round_trips_through_json() -> None:
    steps = (Captured(2, Step.LINEAR, (Ref(0), Ref(1))), Captured(3, Step.BINARY, (1.0, Ref(2)), fn=Binary.SUB),
             Captured(4, Step.REDUCE, (Ref(3),), fn=Reduce.MAX, dim=-1), Captured(5, Step.SDPA, (Ref(0),) * 3, scale=0.5))
    spec = RegionSpec(steps, (0, 1), (4, 5))
    assert spec_from_json(json.loads(json.dumps(spec_to_json(spec)))) == spec
    with pytest.raises(SerializationError):
        spec_from_json({"steps": [{"step": "nope"}], "inputs": [], "outputs": []})


def test_an_elementwise_region_of_rank_4_is_bound_without_its_size_1_dims() -> None:
    """The rotary products of a decoder layer at decode: q [1, 32, 1, 64] * cos [1, 1, 1, 64] + ...
    becomes [32, 64] * [1, 64]: rank <= 3 for the generator; the outputs keep PyTorch's shapes."""
    q, cos, r, sin = 0, 1, 2, 3
    steps = (Captured(4, Step.BINARY, (Ref(q), Ref(cos)), fn=Binary.MUL),
             Captured(5, Step.BINARY, (Ref(r), Ref(sin)), fn=Binary.MUL),
             Captured(6, Step.BINARY, (Ref(4), Ref(5)), fn=Binary.ADD))
    shapes = [(1, 32, 1, 64), (1, 1, 1, 64), (1, 32, 1, 64), (64,)]
    program = bind(RegionSpec(steps, (q, cos, r, sin), (4, 6)), shapes, "float16")
    assert [b.shape for b in program.inputs] == [(32, 64), (1, 64), (32, 64), (1, 64)]
    assert max(len(t.shape) for t in program.graph.inputs) == 2
    assert program.shapes == ((1, 32, 1, 64), (1, 32, 1, 64))
    xs = _rng_inputs(shapes)
    got = evaluate(program, xs)
    np.testing.assert_allclose(got[0], xs[0] * xs[1], rtol=1e-12)
    np.testing.assert_allclose(got[1], xs[0] * xs[1] + xs[2] * xs[3], rtol=1e-12)
    # with a reduction over the last dim its rows merge; over another dim it keeps its rank
    for dim, first in ((-1, (32, 64)), (1, (1, 32, 1, 64))):
        red = (*steps, Captured(7, Step.REDUCE, (Ref(6),), fn=Reduce.SUM, dim=dim))
        reduced = bind(RegionSpec(red, (q, cos, r, sin), (7,)), shapes, "float16")
        assert reduced.inputs[0].shape == first
        assert reduced.shapes == ((1, 1 if dim == 1 else 32, 1, 1 if dim == -1 else 64),)
        want = (xs[0] * xs[1] + xs[2] * xs[3]).sum(dim, keepdims=True)
        np.testing.assert_allclose(evaluate(reduced, xs)[0], want, rtol=1e-12)


def _linear_norm(dim: int, w_shape: tuple[int, ...], batched: bool = False) -> RegionSpec:
    """x [b, s, d] -> sum over ``dim`` of x * w, and x @ Wᵀ (W [f, d]; a 3-D W [b, d, f] as a batched matmul)."""
    x, w, wl = 0, 1, 2
    steps = (Captured(3, Step.BINARY, (Ref(x), Ref(w)), fn=Binary.MUL),
             Captured(4, Step.REDUCE, (Ref(3),), fn=Reduce.SUM, dim=dim),
             Captured(5, Step.MATMUL if batched else Step.LINEAR, (Ref(x), Ref(wl))))
    return RegionSpec(steps, (x, w, wl), (4, 5))


@pytest.mark.parametrize(("dim", "w_shape", "wl_shape", "merged"), [
    (-1, (16,), (8, 16), True),  # decoder rows: [4, 3, 16] @ Wᵀ is one matmul of 12 rows
    (2, (1, 1, 16), (8, 16), True),
    (1, (16,), (8, 16), False),  # a reduction over the tokens
    (-1, (3, 16), (8, 16), False),  # a [s, d] tensor broadcast over the batch: rows differ per token
    (-1, (16,), (4, 16, 8), False),  # a batched matmul: each batch has its own weight
])
def test_leading_dims_merge_into_rows_only_where_the_program_is_the_same(
        dim: int, w_shape: tuple[int, ...], wl_shape: tuple[int, ...], merged: bool) -> None:
    shapes = [(4, 3, 16), w_shape, wl_shape]
    program = bind(_linear_norm(dim, w_shape, batched=len(wl_shape) == 3), shapes, "float16")
    assert (program.inputs[0].shape == (12, 16)) is merged
    assert max(len(t.shape) for t in program.graph.inputs) == (2 if merged else 3)
    xs = _rng_inputs(shapes)
    prod = xs[0] * xs[1]
    want = [prod.sum(dim, keepdims=True), xs[0] @ (xs[2] if len(wl_shape) == 3 else xs[2].T)]
    for got, ref in zip(evaluate(program, xs), want, strict=True):
        assert got.shape == ref.shape
        np.testing.assert_allclose(got, ref, rtol=1e-12)


class _Storage:
    def __init__(self, base: np.ndarray) -> None:
        self.base = base

    def data_ptr(self) -> int:
        return int(self.base.__array_interface__["data"][0])


class _Tensor:
    """What ``runner._owned`` asks of a torch tensor, over a NumPy array (no torch on the CPU machine)."""

    def __init__(self, a: np.ndarray) -> None:
        self.a = a

    def untyped_storage(self) -> _Storage:
        return _Storage(self.a.base if self.a.base is not None else self.a)

    def is_contiguous(self) -> bool:
        return bool(self.a.flags.c_contiguous)

    def clone(self) -> _Tensor:
        return _Tensor(self.a.copy())

    def contiguous(self) -> _Tensor:
        return self if self.is_contiguous() else _Tensor(np.ascontiguousarray(self.a))


def test_a_region_output_that_aliases_its_input_becomes_a_tensor_of_its_own() -> None:
    """A Prism callable returns an output that is a transposed input as a view (runtime.view_outputs); a
    region's custom op declares no aliasing and the graph around it plans contiguous outputs."""
    from prism.capture.runner import _owned, _storages

    x = _Tensor(np.arange(12.0).reshape(3, 4))
    fresh = _Tensor(np.zeros((4, 3)))
    for out in (_Tensor(x.a.T), _Tensor(x.a[...])):  # a transposed view, a contiguous alias
        owned = _owned(out, _storages([x]))
        assert owned.is_contiguous() and np.array_equal(owned.a, out.a)
        assert owned.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
    assert _owned(fresh, _storages([x])) is fresh  # a kernel's own output is kept as it is
