"""prism.rows: [batch, tokens, d] programs run with their leading dims merged into one row dim."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from prism import interpreter, pipeline, plans, workloads
from prism.errors import InputError
from prism.graph import Graph
from prism.ir import CustomKernel, KernelGraph
from prism.rows import Rows, RowsKernel, merge_rows
from prism.tune.backends import InterpreterBackend
from prism.verify import verify_all


def _norm_linear(b: int, s: int, d: int, f: int) -> Graph:
    """rms_norm(X) * g @ W + bias, with the row-broadcast parameters as [1, 1, d] / [f]-shaped inputs."""
    g = Graph()
    x = g.input((b, s, d), "float16", "X")
    gain = g.input((1, 1, d), "float16", "G")
    w = g.input((f, d), "float16", "W")
    bias = g.input((1, 1, f), "float16", "B")
    y = g.matmul(g.mul(g.rms_norm(x), gain), g.transpose(w))
    g.output(g.add(y, bias), "O")
    g.output(g.softmax(y, -1), "P")
    return g


def _inputs(graph: Graph, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {t.name: rng.standard_normal(t.shape) for t in graph.inputs}


def _check_same(graph: Graph, rows: Rows) -> None:
    xs = _inputs(graph)
    want = graph.evaluate(xs)
    got = rows.graph.evaluate(dict(rows.view_inputs(xs)))
    for name, (orig, merged) in rows.outputs.items():
        assert got[name].shape == merged and want[name].shape == orig
        np.testing.assert_allclose(got[name].reshape(orig), want[name], rtol=1e-12, atol=1e-12)


def test_leading_dims_merge_and_the_program_stays_the_same() -> None:
    graph = _norm_linear(2, 3, 16, 8)
    rows = merge_rows(graph)
    assert rows is not None
    assert {t.name: t.shape for t in rows.graph.inputs} == {"X": (6, 16), "G": (1, 16), "W": (8, 16), "B": (1, 8)}
    assert rows.outputs == {"O": ((2, 3, 8), (6, 8)), "P": ((2, 3, 8), (6, 8))}
    _check_same(graph, rows)
    assert merge_rows(rows.graph) is None  # already rows


def _reduce_tokens() -> Graph:
    g = Graph()
    x = g.input((2, 3, 16), "float16", "X")
    g.output(g.mul(x, g.mean(x, 1)), "O")  # a mean over the tokens: they are not just rows
    return g


def _reduce_size_one_dim() -> Graph:
    g = Graph()
    x = g.input((1, 3, 16), "float16", "X")
    g.output(g.add(x, g.sum(x, 0)), "O")  # shapes fit rows, but merged, dim 0 would become the last
    return g


def _batched_matmul() -> Graph:
    g = Graph()
    q, k = g.input((2, 3, 16), "float16", "Q"), g.input((2, 16, 5), "float16", "K")
    g.output(g.matmul(q, k), "O")  # each batch its own right operand
    return g


def _per_token_param() -> Graph:
    g = Graph()
    x, p = g.input((2, 3, 16), "float16", "X"), g.input((1, 3, 16), "float16", "P")
    g.output(g.add(x, p), "O")  # differs per token, shared over the batch
    return g


def _weight_read_twice() -> Graph:
    g = Graph()
    x, w = g.input((2, 3, 16), "float16", "X"), g.input((16, 16), "float16", "W")
    g.output(g.matmul(x, w), "O")
    g.output(g.transpose(w), "T")  # a 2-D output: not a row tensor
    return g


@pytest.mark.parametrize("build", [_reduce_tokens, _reduce_size_one_dim, _batched_matmul, _per_token_param,
                                   _weight_read_twice])
def test_programs_whose_leading_dims_are_not_rows_are_left_alone(build: Any) -> None:
    assert merge_rows(build()) is None


def test_rank_2_programs_are_left_alone() -> None:
    assert merge_rows(workloads.rmsnorm_linear(4, 32)) is None


def _fake(rows: Rows) -> Any:
    """A compiled merged program stand-in: evaluates the merged graph (shapes checked) into out=."""
    def kernel(*args: Any, out: Any = None, **named: Any) -> Any:
        names = [t.name for t in rows.graph.inputs]
        xs = {**dict(zip(names, args, strict=False)), **named}
        for t in rows.graph.inputs:
            assert xs[t.name].shape == t.shape
        res = rows.graph.evaluate(xs)
        outs = tuple(res[n] for n in rows.outputs)
        if out is not None:
            for o, r in zip(out, outs, strict=True):
                o[...] = r
            return out
        return outs
    return kernel


def test_the_returned_callable_takes_and_gives_the_original_shapes() -> None:
    graph = _norm_linear(2, 3, 16, 8)
    rows = merge_rows(graph)
    assert rows is not None
    fast = RowsKernel(_fake(rows), rows)
    xs = _inputs(graph, seed=1)
    want = graph.evaluate(xs)
    positional = fast(*xs.values())
    named = fast(**xs)
    out = (np.zeros((2, 3, 8)), np.zeros((2, 3, 8)))
    fast(*xs.values(), out=out)
    for got in (positional, named, out):
        for g, name in zip(got, ("O", "P"), strict=True):
            assert g.shape == (2, 3, 8)
            np.testing.assert_allclose(g, want[name], rtol=1e-12)
    with pytest.raises(InputError, match="contiguous"):
        fast(*xs.values(), out=(np.zeros((8, 3, 2)).T, np.zeros((2, 3, 8))))
    # shapes are checked against the original program (merged, [3, 2, 16] would pass as 6 rows)
    bad = {**xs, "X": xs["X"].reshape(3, 2, 16)}
    with pytest.raises(InputError, match=r"input 'X' has shape \[3, 2, 16\]; the program takes \[2, 3, 16\]"):
        fast(*bad.values())
    with pytest.raises(InputError, match="input 'X'"):
        fast(**bad)
    with pytest.raises(InputError, match="out= buffer for 'P'"):
        fast(*xs.values(), out=(np.zeros((2, 3, 8)), np.zeros((3, 2, 8))))
    with pytest.raises(InputError, match="1 buffers"):
        fast(*xs.values(), out=np.zeros((2, 3, 8)))


def _timer(kg: KernelGraph) -> float:
    return float(sum(len(k.ops) for k in kg.kernels if isinstance(k, CustomKernel)))


def test_superoptimize_searches_and_tunes_the_merged_program() -> None:
    g = Graph()
    x, w = g.input((2, 3, 32), "float16", "X"), g.input((32, 32), "float16", "W")
    g.output(g.matmul(g.rms_norm(x), w), "O")
    flat = workloads.rmsnorm_linear(6, 32)  # the merged program: its verified hand plans seed the search cache
    templates = plans.hand_plans("rmsnorm_linear", flat)
    assert all(v.proven for v in verify_all(flat, templates))
    pipeline.save_verified(flat, templates, {"candidates": 0})
    fast = pipeline.superoptimize(g, samples=3, seed=1, backend=InterpreterBackend(_timer), progress=False)
    assert fast.summary["rows_merged"] and fast.summary["search_cache_hit"]
    assert [t.shape for t in fast.kernel_graph.inputs] == [(6, 32), (32, 32)]
    assert [t.shape for t in fast.inputs] == [(2, 3, 32), (32, 32)]  # the callable's: the program's shapes
    assert [t.shape for t in fast.outputs] == [(2, 3, 32)]
    xs = _inputs(g, seed=2)
    got = interpreter.run(fast.kernel_graph, {"X": xs["X"].reshape(6, 32), "W": xs["W"]})["O"]
    np.testing.assert_allclose(got.reshape(2, 3, 32), g.evaluate(xs)["O"], rtol=1e-9, atol=1e-9)


class _Searched(Exception):
    pass


def test_what_fills_the_cache_ahead_searches_the_program_superoptimize_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """A CPU machine fills the search cache for a GPU machine without the search (``library.search_entry``,
    ``bench.fuzz --prepare``): they must search the program superoptimize looks up, its [h, n, d] rows
    merged and its dead ops dropped (``rows.searched_graph``), or the GPU finds no search for it."""
    from bench import fuzz
    from prism import library

    g = fuzz.random_program(23)  # [3, 12, 16] rows
    assert merge_rows(g) is not None
    keys: list[str] = []

    def search(graph: Graph, **_: Any) -> None:
        keys.append(graph.without_dead_ops().structure_key())  # search_and_verify drops dead ops first
        raise _Searched

    monkeypatch.setattr(pipeline, "search_and_verify", search)
    monkeypatch.setattr(library, "search_and_verify", search)
    monkeypatch.setattr(library.Entry, "build_graph", lambda self, base=None: g)
    with pytest.raises(_Searched):
        pipeline.superoptimize(g, samples=2, backend=InterpreterBackend(_timer), progress=False)
    with pytest.raises(_Searched):
        library.search_entry(library.Entry("fuzz23", (), "float16"), Path("."))
    fuzz.prepare(23)  # reports the exception as its outcome
    assert len(keys) == 3 and len(set(keys)) == 1, keys
    assert keys[0] != g.without_dead_ops().structure_key()  # the unmerged program's key is another
