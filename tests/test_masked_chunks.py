"""A chunk of positions masked with −inf in an online softmax: its max is −inf, and ``x − max(x)`` is
−inf − −inf, NaN in IEEE arithmetic. Split-KV plans of a padded decode attention (positions past the
cache's end masked) returned NaN there while the program's reference is finite. ``ir.shift_by_max`` makes
that subtraction take 0 from a −inf max in the interpreter, the emulator and the generated code alike,
and the tuner checks its winner on logits masked with −inf (``prism.tune.stress.masked_inputs``).

The plan under test is the split-KV plan ``superoptimize`` builds for the zoo's masked_attention at the
emulator's sizes (``prism.loopsplit``, saved in tests/data: searching for it takes minutes)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench.zoo import ZOO
from prism import interpreter
from prism.codegen import generate
from prism.codegen.emulate import emulate
from prism.codegen.nvcc import compile_check, nvcc_path
from prism.graph import Graph
from prism.ir import KernelGraph, shift_by_max
from prism.partition import predefined_plan
from prism.tune.backends import InterpreterBackend
from prism.tune.stress import mask_operands, masked_inputs
from prism.tune.tuner import tune
from prism.verify import check_equivalent

PLAN = Path(__file__).parent / "data" / "masked_attention_split_plan.json"
SIZES = ({"k0_x": 1, "s": 4, "k0_i": 1}, {"k0_x": 1, "s": 2, "k0_i": 2}, {"k0_x": 1, "s": 1, "k0_i": 4})


def _program() -> Graph:
    return ZOO["masked_attention"].build(batch=1, group=8, kv_len=64, head_dim=32, dtype="float16")


def _plan() -> KernelGraph:
    return KernelGraph.loads(PLAN.read_text())


def _masked_inputs(left: bool = False) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    ins = {t.name: rng.standard_normal(t.shape) * 0.5 for t in _program().inputs}
    ins["M"][..., slice(0, 48) if left else slice(16, None)] = -np.inf  # padded on the left or past position 16
    return ins


def test_the_split_plan_is_proven_and_its_shift_is_recognised() -> None:
    plan = _plan()
    assert check_equivalent(_program(), plan).proven
    split = plan.kernels[0]
    assert [i for i in range(len(split.ops)) if shift_by_max(split.ops, i)] == [8]


@pytest.mark.parametrize("left", [False, True], ids=["right", "left"])
@pytest.mark.parametrize("sizes", SIZES, ids=lambda s: "s{s}_i{k0_i}".format(**s))
def test_masked_chunks_add_nothing_in_the_interpreter_and_the_emulator(sizes: dict[str, int], left: bool) -> None:
    kg, ins = _plan().instantiate(sizes), _masked_inputs(left)
    ref = _program().evaluate(ins)["O"]
    assert np.isfinite(ref).all()
    for got in (interpreter.run(kg, ins)["O"], emulate(kg, ins)["O"]):
        np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-12)


def test_without_the_guard_a_masked_chunk_is_nan(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(interpreter, "shift_by_max", lambda ops, i: False)
    out = interpreter.run(_plan().instantiate(SIZES[0]), _masked_inputs())["O"]
    assert np.isnan(out).any()  # what the plan returned before


def test_the_generated_split_kernel_guards_its_shift() -> None:
    src = generate(_plan().instantiate(SIZES[0]), arch="sm_80").kernels[0].source
    assert "float prism_shift(float m)" in src and "- prism_shift(" in src


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc not on the PATH")
def test_the_guarded_sources_compile() -> None:
    sources = list({k.entry: k.source for s in SIZES for k in generate(_plan().instantiate(s), arch="sm_80").kernels}
                   .items())
    assert len(compile_check(sources, "sm_80", jobs=2)) == len(sources)


def test_mask_operands_are_the_inputs_added_to_logits() -> None:
    assert mask_operands(_program()) == {"M": 2}
    g = Graph()
    x = g.input((2, 16), name="X")
    g.output(g.log_softmax(x, -1), "O")
    assert mask_operands(g) == {"X": 1}
    masked = masked_inputs(g, {"X": np.zeros((2, 16))})
    assert masked is not None and np.isfinite(masked["X"][:, 8]).all()
    assert np.isneginf(masked["X"][:, :8]).all() and np.isneginf(masked["X"][:, 9:]).all()
    g2 = Graph()
    y = g2.input((2, 16), name="Y")
    g2.output(g2.mul(g2.softmax(y, -1), y), "O")  # 0 · -inf: NaN in the reference, so no masked check
    assert mask_operands(g2) == {"Y": 1} and masked_inputs(g2, {"Y": np.zeros((2, 16))}) is None
    g3 = Graph()
    g3.output(g3.rms_norm(g3.input((2, 16), name="Z")), "O")
    assert mask_operands(g3) == {}
    g4 = Graph()
    g4.output(g4.softmax(g4.input((6, 4), name="C"), 0), "O")  # over columns: masked along dim 0
    col = masked_inputs(g4, {"C": np.zeros((6, 4))})
    assert col is not None and np.isfinite(col["C"][3]).all() and np.isneginf(np.delete(col["C"], 3, axis=0)).all()


def test_the_tuner_rejects_a_plan_that_turns_masked_chunks_into_nan(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the guard the split plan is NaN on masked logits: the tuner's masked check rejects it though
    it is the fastest, and the predefined plan, right on them, is returned."""
    monkeypatch.setattr(interpreter, "shift_by_max", lambda ops, i: False)
    g = _program()
    split, fallback = _plan().instantiate(SIZES[0]), predefined_plan(g)  # 4 splits: 3 wholly masked
    timer = InterpreterBackend(lambda kg: 1.0 if len(kg.kernels) == 2 and kg.kernels[0].name == "k0_split" else 5.0)
    res = tune(g, [split, fallback], samples=4, seed=0, backend=timer, refine=0)
    assert res.template_index == 1
    assert res.check_failures and all("masked with -inf" in (r.error or "") for r in res.check_failures)


def test_with_the_guard_the_split_plan_passes_the_masked_check() -> None:
    g = _program()
    timer = InterpreterBackend(lambda kg: 1.0 if kg.kernels[0].name == "k0_split" else 5.0)
    res = tune(g, [_plan().instantiate(SIZES[0]), predefined_plan(g)], samples=4, seed=0, backend=timer, refine=0)
    assert res.template_index == 0 and not res.check_failures
