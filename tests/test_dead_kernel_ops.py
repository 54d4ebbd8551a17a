"""Ops of a kernel that no Save depends on are dropped from every plan (``KernelGraph.without_dead_ops``):
a program whose dead ops leave inputs no output reads got searched kernels that still loaded them, and
their tiles sized the block (16 warps for a 2 KB output, docs/hardening.md "Dead loads in searched
kernels")."""

from __future__ import annotations

import numpy as np

from prism import interpreter, pipeline
from prism.codegen import generate
from prism.graph import Graph
from prism.ir import Accum, BinaryOp, CustomKernel, KernelGraph, Load, Save, TensorSpec, UnaryOp, live_ops
from prism.ops import Binary, Unary


def _kernel() -> KernelGraph:
    ops = (Load("X", (0, 1)), Accum(0),  # dead: nothing saved reads X
           Load("B", (0, 1)), Accum(2), UnaryOp(Unary.EXP, 3), BinaryOp(Binary.MUL, 3, 4),
           Load("W", (0, 1)), UnaryOp(Unary.NEG, 6),  # dead
           Save(5, "O", (0, 1)))
    spec = [TensorSpec("X", (16, 1024), "float16"), TensorSpec("B", (1, 1024), "float16"),
            TensorSpec("W", (1024, 1024), "float16")]
    return KernelGraph("dead", tuple(spec), (TensorSpec("O", (1, 1024), "float16"),),
                       (CustomKernel("k0", (1, 64), 1, ops),))


def test_the_live_ops_are_those_a_save_depends_on() -> None:
    k = _kernel().kernels[0]
    assert isinstance(k, CustomKernel)
    assert live_ops(k.ops) == [False, False, True, True, True, True, False, False, True]


def test_dropping_dead_ops_renumbers_the_rest_and_saves_the_same_values() -> None:
    kg = _kernel()
    pruned = kg.without_dead_ops()
    k = pruned.kernels[0]
    assert isinstance(k, CustomKernel)
    assert [op.tensor for op in k.ops if isinstance(op, Load)] == ["B"]
    assert k.ops[-1] == Save(3, "O", (0, 1)) and k.ops[3] == BinaryOp(Binary.MUL, 1, 2)
    rng = np.random.default_rng(0)
    inputs = {t.name: rng.standard_normal(t.shape) for t in kg.inputs}
    assert np.array_equal(interpreter.run(kg, inputs)["O"], interpreter.run(pruned, inputs)["O"])
    assert pruned.without_dead_ops() is pruned  # nothing more to drop


def test_the_block_is_sized_by_the_live_tiles() -> None:
    kg = _kernel()
    before, after = (generate(k, arch="sm_80").kernels[0] for k in (kg, kg.without_dead_ops()))
    assert before.block[0] == 512 and after.block[0] == 128  # W's dead [1024, 16] tile asked for 16 warps
    assert "t_W" in before.source and "t_W" not in after.source


def test_a_searched_plan_loads_no_input_that_no_output_reads() -> None:
    g = Graph()
    x, w, b = g.input([16, 64], name="X"), g.input([64, 64], name="W"), g.input([1, 64], name="B")
    g.matmul(x, w)  # dead: no output reads it
    g.output(g.mul(b, g.sigmoid(b)), name="O")
    out = pipeline.search_and_verify(g, program="dead_inputs", progress=False, cache=False)
    searched = out.of(pipeline.PlanSource.SEARCHED)
    assert searched
    for kg in out.templates:
        loaded = {op.tensor for k in kg.kernels if isinstance(k, CustomKernel) for op in k.ops if isinstance(op, Load)}
        assert loaded <= {"B"}, kg
