"""Hand-built μGraphs run by the interpreter against the float64 reference, JSON, validation."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from prism import interpreter, plans, workloads
from prism.errors import IRError, SerializationError
from prism.ir import CustomKernel, KernelGraph, Load, validate
from prism.reference import relative_error

SMALL = {
    "rmsnorm_linear": {"n": 4, "d": 16},
    "rmsnorm_mlp": {"n": 4, "d": 16},
    "swiglu": {"n": 4, "d": 16},
    "gqa": {"batch": 2, "group": 4, "kv_len": 16, "head_dim": 8},
    "qknorm_gqa": {"batch": 2, "group": 4, "kv_len": 16, "head_dim": 8},
}
SIZES = [{"x": 2, "y": 2, "i": 4, "s": 2}, {"x": 1, "y": 4, "i": 2, "s": 4}, {"x": 2, "y": 1, "i": 1, "s": 8}]


def _inputs(g: object, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {t.name: rng.standard_normal(t.shape) * 0.5 for t in g.inputs}  # type: ignore[attr-defined]


@pytest.mark.parametrize("program", sorted(SMALL))
def test_hand_plans_match_reference(program: str) -> None:
    g = workloads.program(program, **SMALL[program])
    kgs = plans.hand_plans(program, g)
    assert kgs
    for seed, d in enumerate(SIZES):
        inputs = _inputs(g, seed)
        ref = g.evaluate(inputs)["O"]
        for kg in kgs:
            sizes = {k: v for k, v in d.items() if k in kg.symbols}
            out = interpreter.run(kg.instantiate(sizes), inputs)["O"]
            assert relative_error(out, ref) < 1e-12, (kg.kernels, sizes)


def test_rmsnorm_linear_plan_shape() -> None:
    """One kernel, W's columns over the grid, contraction over the loop, RMS applied after it."""
    g = workloads.rmsnorm_linear(8, 32)
    (kg, *_) = plans.hand_plans("rmsnorm_linear", g)
    (k,) = kg.kernels
    assert isinstance(k, CustomKernel)
    loads = {op.tensor: op for op in k.ops if isinstance(op, Load)}
    assert loads["W"].imap == (1,) and loads["W"].fmap == 0 and loads["X"].fmap == 1


def test_gqa_split_kv_is_two_kernels_sharing_a_size() -> None:
    g = workloads.gqa(2, 4, 16, 8)
    split = plans.gqa_split_plan(g)
    assert [k.name for k in split.kernels] == ["split", "combine"]
    k1, k2 = split.kernels
    assert isinstance(k1, CustomKernel) and isinstance(k2, CustomKernel)
    assert k2.loop == k1.grid[1] == "s"


def test_wrong_saver_differs_from_reference() -> None:
    g = workloads.rmsnorm_linear(8, 8)
    inputs = _inputs(g, 7)
    ref = g.evaluate(inputs)["O"]
    good = plans.rmsnorm_linear_2d_plan(g).instantiate({"x": 2, "y": 2, "i": 2})
    bad = plans.rmsnorm_linear_2d_plan(g, omap=(1, 0)).instantiate({"x": 2, "y": 2, "i": 2})
    assert relative_error(interpreter.run(good, inputs)["O"], ref) < 1e-12
    assert relative_error(interpreter.run(bad, inputs)["O"], ref) > 0.1


@pytest.mark.parametrize("program", sorted(SMALL))
def test_json_round_trip(program: str) -> None:
    g = workloads.program(program, **SMALL[program])
    for kg in plans.hand_plans(program, g):
        for concrete in (kg, kg.instantiate({k: 2 for k in kg.symbols})):
            text = concrete.dumps()
            back = KernelGraph.loads(text)
            assert back == concrete
            assert back.dumps() == text
            assert hash(back) == hash(concrete)


def test_json_rejects_other_format_and_version() -> None:
    g = workloads.swiglu(4, 16)
    doc = plans.swiglu_plan(g).to_json()
    with pytest.raises(SerializationError, match="version"):
        KernelGraph.from_json({**doc, "version": 99})
    with pytest.raises(SerializationError, match="format"):
        KernelGraph.from_json({**doc, "format": "something"})
    with pytest.raises(SerializationError):
        KernelGraph.loads("{not json")
    with pytest.raises(SerializationError, match="malformed"):
        KernelGraph.from_json({**doc, "kernels": [{"type": "custom"}]})


def test_validator_rejects_non_dividing_split() -> None:
    g = workloads.rmsnorm_linear(8, 24)
    kg = plans.rmsnorm_linear_plan(g)
    validate(kg.instantiate({"x": 4, "i": 3}))  # 24 divisible by 4 and 3
    with pytest.raises(IRError, match=r"do not divide W\[24, 24\]"):
        validate(kg.instantiate({"x": 5, "i": 3}))
    with pytest.raises(IRError, match="symbolic"):
        validate(kg)


def test_validator_structural_errors() -> None:
    g = workloads.swiglu(4, 16)
    kg = plans.swiglu_plan(g).instantiate({"x": 2, "i": 2})
    (k,) = kg.kernels
    assert isinstance(k, CustomKernel)
    ops = list(k.ops)

    def with_ops(new_ops: list[object]) -> KernelGraph:
        return replace(kg, kernels=(replace(k, ops=tuple(new_ops)),))  # type: ignore[arg-type]

    with pytest.raises(IRError, match="loads tensor 'Nope'"):
        validate(with_ops([Load("Nope", (None,), 1), *ops[1:]]))
    with pytest.raises(IRError, match="splits one data dim along two grid dims"):
        validate(replace(kg, kernels=(replace(k, grid=(2, 2), ops=(Load("X", (1, 1), None), *ops[1:])),)))
    with pytest.raises(IRError, match="never written"):
        validate(with_ops(ops[:-1]))
    with pytest.raises(IRError, match="1 to 3"):
        validate(replace(kg, kernels=(replace(k, grid=()),)))
    with pytest.raises(IRError, match="no value for the sizes"):
        plans.swiglu_plan(g).instantiate({"x": 2})


def test_interpreter_checks_inputs() -> None:
    g = workloads.swiglu(4, 16)
    kg = plans.swiglu_plan(g).instantiate({"x": 2, "i": 2})
    with pytest.raises(Exception, match="'Wu'"):
        interpreter.run(kg, {"X": np.zeros((4, 16)), "Wg": np.zeros((16, 16))})
