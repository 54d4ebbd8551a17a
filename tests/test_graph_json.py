"""A program as JSON and back (``Graph.to_json``, ``prism.graph_json``): what a library record stores of its program."""

from __future__ import annotations

import copy
import json
from typing import Any

import numpy as np
import pytest

from bench.zoo import ZOO, zoo_graph
from prism import workloads
from prism.errors import GraphError
from prism.graph import Graph
from prism.graph_json import graph_from_json


def _round_trip(g: Graph) -> Graph:
    return graph_from_json(json.loads(json.dumps(g.to_json())))


@pytest.mark.parametrize("name", sorted(ZOO))
def test_every_zoo_program_comes_back_the_same(name: str) -> None:
    g = zoo_graph(name, "decode")
    back = _round_trip(g)
    assert back.structure_hash() == g.structure_hash() and back.nodes == g.nodes
    assert back.inputs == g.inputs and back.outputs == g.outputs


def test_a_program_comes_back_computing_the_same_values() -> None:
    g = workloads.qknorm_gqa(batch=1, group=2, kv_len=16, head_dim=8)
    rng = np.random.default_rng(0)
    inputs = {t.name: rng.standard_normal(t.shape) for t in g.inputs}
    want, got = g.evaluate(inputs), _round_trip(g).evaluate(inputs)
    assert want.keys() == got.keys() and all(np.array_equal(want[k], got[k]) for k in want)


def _doc() -> dict[str, Any]:
    g = Graph()
    x = g.input((4, 8), "float16", "X")
    g.output(g.scale(g.sum(x), 0.5), "O")
    return g.to_json()


def _edited(change: Any) -> dict[str, Any]:
    doc = copy.deepcopy(_doc())
    change(doc)
    return doc


@pytest.mark.parametrize("change,match", [
    (lambda d: d["nodes"][1].update(shape=[4, 8]), r"node 1: recorded as reduce sum \[4, 8\].*give reduce sum \[4, 1\]"),
    (lambda d: d["nodes"][1].update(args=[2]), "node 1: operands"),
    (lambda d: d["nodes"][2].update(dtype="float32"), "node 2: recorded as unary scale"),
    (lambda d: d["nodes"][2].update(fn="chain"), "node 2"),
    (lambda d: d["nodes"][2].pop("scalar"), "node 2: scalar None"),
    (lambda d: d["nodes"][2].update(scalar={"const": float("inf")}), "not a finite constant"),
    (lambda d: d["nodes"][2].update(scalar={"recip_dim": ["Y", 0]}), "not a finite constant or a dim of an input"),
    (lambda d: d["nodes"][1].pop("dim"), "node 1: dim None"),
    (lambda d: d["nodes"][1].update(name="T"), "node 1: name 'T'"),
    (lambda d: d["nodes"][0].update(name='X"); system("x'), "input"),
    (lambda d: d["nodes"][0].update(shape=[4, 0]), "shape"),
    (lambda d: d["nodes"][0].update(kind="conv"), "node 0: 'conv' is not a valid OpKind"),
    (lambda d: d["nodes"].append(7), "node 3 must be an object"),
    (lambda d: d["outputs"].append(["P", 9]), r"output \[\"P\", 9\]"),
    (lambda d: d["outputs"].clear(), "no output was marked"),
    (lambda d: d.pop("nodes"), "lists 'nodes' and 'outputs'"),
])
def test_a_malformed_record_is_refused_naming_the_node(change: Any, match: str) -> None:
    assert graph_from_json(_doc()).structure_hash()  # the unedited record builds
    with pytest.raises(GraphError, match=match):
        graph_from_json(_edited(change))
