"""Ragged k parts (``Options.ragged_kparts``, off by default until timed): a matmul with fewer units
than warps splits its k-steps over the spare warps even where they do not divide (9 k-steps over 2
parts: 5 and 4; the last part's loop breaks at the end).
Before, the split had to divide the k-steps, and a 9-step stage left two of four warps idle
(docs/codegen.md, "Ragged k parts"). Emulated against the interpreter; the source compiles."""

from __future__ import annotations

import numpy as np
import pytest

from prism import interpreter
from prism.codegen import Options, generate
from prism.codegen.emulate import emulate
from prism.codegen.lower import _k_parts
from prism.codegen.nvcc import compile_check, nvcc_path
from prism.reference import relative_error
from tests.matmul_cases import matmul_graph, scaled_matmul_graph
from tests.test_warp_tiles import _kernel

RAGGED = Options(ragged_kparts=True)


def test_the_k_parts_leave_a_warp_the_fewest_steps() -> None:
    assert _k_parts(2, 9, True) == 2 and _k_parts(2, 9, False) == 1  # 5 + 4, where only 1 divided
    assert _k_parts(4, 9, True) == 4  # 3 + 3 + 3 + 0
    for spare, ksteps in ((4, 8), (4, 2), (4, 1), (3, 6), (1, 9), (4, 12), (2, 6)):  # even: as the rule of before
        assert _k_parts(spare, ksteps, True) == _k_parts(spare, ksteps, False) or ksteps % 2, (spare, ksteps)
    assert _k_parts(4, 8, False) == 4 and _k_parts(4, 2, False) == 2 and _k_parts(4, 6, False) == 2


@pytest.mark.parametrize(("n", "k", "grid", "loop", "parts"), [
    (64, 288, (1, 2), 2, (2, 5)),  # [8, 144] @ [144, 32] a stage: 9 k-steps, 2 units, 4 warps
    (32, 288, (1, 2), 2, (4, 3)),  # [8, 144] @ [144, 16]: 1 unit, 4 parts of 3, 3, 3 and 0 steps
    (64, 48, (1, 2), 1, (2, 2)),  # 3 k-steps: 2 + 1
])
def test_ragged_k_parts_emulate_like_the_interpreter(n: int, k: int, grid: tuple[int, int], loop: int,
                                                      parts: tuple[int, int]) -> None:
    kg = matmul_graph(8, n, k, grid, loop)
    plan = _kernel(kg, RAGGED).mmas[2]
    assert (plan.ksplit, plan.ksteps) == parts and plan.ragged
    assert not _kernel(kg, Options()).mmas[2].ragged  # off by default
    ins = {t.name: np.random.default_rng(n + k).standard_normal(t.shape) for t in kg.inputs}
    assert relative_error(emulate(kg, ins, options=RAGGED)["O"], interpreter.run(kg, ins)["O"]) < 1e-12
    source = generate(kg, arch="sm_80", options=RAGGED).kernels[0].source
    assert f"if (t >= {k // loop // 16}) break;" in source


def test_a_materialised_operand_with_ragged_parts_emulates_like_the_interpreter() -> None:
    kg = scaled_matmul_graph(8, 64, 288, (1, 2), 2)
    assert _kernel(kg, RAGGED).mmas[4].ragged
    ins = {t.name: np.random.default_rng(4).standard_normal(t.shape) for t in kg.inputs}
    assert relative_error(emulate(kg, ins, options=RAGGED)["O"], interpreter.run(kg, ins)["O"]) < 1e-12


def test_even_splits_render_as_before() -> None:
    kg = matmul_graph(8, 64, 256, (1, 2), 2)  # 8 k-steps over 2 parts
    plan = _kernel(kg, RAGGED).mmas[2]
    assert (plan.ksplit, plan.ksteps, plan.ragged) == (2, 4, False)
    on, off = generate(kg, arch="sm_80", options=RAGGED).kernels[0], generate(kg, arch="sm_80").kernels[0]
    assert on.source.replace(on.entry, "k") == off.source.replace(off.entry, "k")  # the options hash names it


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc not on the PATH")
def test_ragged_sources_compile_without_spills() -> None:
    sources = [(k.entry, k.source) for kg in (matmul_graph(8, 64, 288, (1, 2), 2), matmul_graph(8, 32, 288, (1, 2), 2))
               for k in generate(kg, arch="sm_80", options=RAGGED).kernels]
    compiled = compile_check(sources, "sm_80", jobs=2)
    assert len(compiled) == 2 and all(c.spills == 0 for c in compiled), [(c.registers, c.spills) for c in compiled]
