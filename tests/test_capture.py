"""PyTorch capture without torch: partitioning into convex regions, and regions bound as Prism
Graphs checked against NumPy forms of the PyTorch ops they stand for (tests/test_capture_torch.py
covers the fx side where torch is installed)."""

from __future__ import annotations

import numpy as np
import pytest

from prism.capture.build import RegionSpec, bind, evaluate
from prism.capture.ir import Captured, Ref, Step, Support
from prism.capture.partition import PNode, partition
from prism.errors import GraphError
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
    assert [b.shape for b in program.inputs] == [(2, 3, 16), (1, 1, 16), (8, 16)]
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
