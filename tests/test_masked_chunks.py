"""A chunk of positions masked with −inf in an online softmax: its max is −inf, and ``x − max(x)`` is
−inf − −inf, NaN in IEEE arithmetic. Split-KV plans of a padded decode attention (positions past the
cache's end masked) returned NaN there while the program's reference is finite. ``ir.shift_by_max`` makes
that subtraction take 0 from a −inf max in the interpreter, the emulator and the generated code alike.

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
from prism.verify import check_equivalent

PLAN = Path(__file__).parent / "data" / "masked_attention_split_plan.json"
SIZES = ({"k0_x": 1, "s": 4, "k0_i": 1}, {"k0_x": 1, "s": 2, "k0_i": 2}, {"k0_x": 1, "s": 1, "k0_i": 4})


def _program() -> Graph:
    return ZOO["masked_attention"].build(batch=1, group=8, kv_len=64, head_dim=32, dtype="float16")


def _plan() -> KernelGraph:
    return KernelGraph.loads(PLAN.read_text())


def _masked_inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    ins = {t.name: rng.standard_normal(t.shape) * 0.5 for t in _program().inputs}
    ins["M"][..., 16:] = -np.inf  # a padded cache: every position past 16 masked
    return ins


def test_the_split_plan_is_proven_and_its_shift_is_recognised() -> None:
    plan = _plan()
    assert check_equivalent(_program(), plan).proven
    split = plan.kernels[0]
    assert [i for i in range(len(split.ops)) if shift_by_max(split.ops, i)] == [8]


@pytest.mark.parametrize("sizes", SIZES, ids=lambda s: "s{s}_i{k0_i}".format(**s))
def test_masked_chunks_add_nothing_in_the_interpreter_and_the_emulator(sizes: dict[str, int]) -> None:
    kg, ins = _plan().instantiate(sizes), _masked_inputs()
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
