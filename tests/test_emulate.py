"""The lowered-form emulator (prism/codegen/emulate.py) against the μGraph interpreter, on the CPU.

For hand plans, searched templates and zoo plans at several legal sizes, the emulator executes what
the CUDA renderer prints (block by block: cp.async copies and ring stages, warp and k-split
matmuls with each lane's ldmatrix address, guarded sweeps, shared-memory layout) and must give the
interpreter's outputs. The mutation tests re-introduce real lowering bugs (the width-8 mma tile
that faulted on the H200, a load guard off by one, ...) and assert that the emulator rejects each.
Programs run at small sizes (the templates are size-free; CI samples cheap legal sizes; ``-m slow``
runs more of them and every searched template of the five benchmark programs).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import numpy as np
import pytest

from bench.zoo import zoo_graph
from prism import interpreter, pipeline, plans, workloads
from prism.codegen import lower, lowered
from prism.codegen.emulate import EmulationError, emulate
from prism.codegen.sizes import generated_sizes
from prism.errors import CodegenError
from prism.graph import Graph
from prism.ir import CustomKernel, KernelGraph
from prism.reference import relative_error

# the five benchmark programs at small sizes (the templates do not depend on the sizes)
SMALL: dict[str, dict[str, int]] = {
    "rmsnorm_linear": {"n": 8, "d": 128},
    "rmsnorm_mlp": {"n": 8, "d": 128},
    "swiglu": {"n": 16, "d": 128},
    "gqa": {"batch": 1, "group": 8, "kv_len": 64, "head_dim": 32},
    "qknorm_gqa": {"batch": 1, "group": 8, "kv_len": 64, "head_dim": 32},
}
MAX_WORK = 64  # CI: sizes with at most this many block iterations (blocks x loop), per kernel graph


def _work(kg: KernelGraph) -> int:
    return sum(math.prod(int(g) for g in k.grid) * int(k.loop) for k in kg.kernels if isinstance(k, CustomKernel))


def cheap_sizes(template: KernelGraph, count: int, max_work: int | None = MAX_WORK) -> list[dict[str, int]]:
    """Up to ``count`` legal sizes spread over the cheap ones (first, middle, last by work)."""
    legal = [s for s, _ in generated_sizes(template, "sm_80")]
    costed = sorted(legal, key=lambda s: (_work(template.instantiate(s)), sorted(s.items())))
    if max_work is not None:
        costed = [s for s in costed if _work(template.instantiate(s)) <= max_work] or costed[:1]
    if len(costed) <= count:
        return costed
    return [costed[round(k * (len(costed) - 1) / (count - 1))] for k in range(count)] if count > 1 else costed[:1]


def inputs_of(kg: KernelGraph, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {t.name: rng.standard_normal(t.shape) * 0.5 for t in kg.inputs}


def emulate_error(kg: KernelGraph) -> float:
    """Largest relative error of the emulated outputs against the interpreter's."""
    ins = inputs_of(kg)
    got, want = emulate(kg, ins), interpreter.run(kg, ins)
    return max(relative_error(got[n], want[n]) for n in want)


def _hand(program: str) -> Iterator[tuple[str, KernelGraph]]:
    g = workloads.program(program, **SMALL[program])
    for pi, t in enumerate(plans.codegen_plans(program, g)):
        yield f"{program}:p{pi}", t


def _check_all(items: list[tuple[str, KernelGraph]], count: int, max_work: int | None) -> int:
    ran = 0
    for label, t in items:
        for sizes in cheap_sizes(t, count, max_work):
            err = emulate_error(t.instantiate(sizes))
            assert err < 1e-9, (label, sizes, err)
            ran += 1
    return ran


@pytest.mark.parametrize("program", list(SMALL))
def test_hand_plans_emulate_like_the_interpreter(program: str) -> None:
    assert _check_all(list(_hand(program)), 3, MAX_WORK) >= 3


def _searched(g: Graph, program: str) -> list[tuple[str, KernelGraph]]:
    out = pipeline.search_and_verify(g, program=program, progress=False)
    return [(f"{program}:{src.value}{n}", t) for n, (t, src) in enumerate(zip(out.templates, out.sources, strict=True))
            if any(isinstance(k, CustomKernel) for k in t.kernels)]


@pytest.mark.slow  # sizing the stitched templates (thousands of legal sizes) takes minutes
@pytest.mark.timeout(3000)
def test_searched_swiglu_templates_emulate_like_the_interpreter() -> None:
    items = _searched(workloads.program("swiglu", **SMALL["swiglu"]), "swiglu")
    assert len(items) >= 5
    assert _check_all(items, 2, MAX_WORK) >= len(items)


@pytest.mark.slow
@pytest.mark.timeout(3000)
@pytest.mark.parametrize("name", ["silu_mul", "rms_norm", "matmul_residual"])
def test_zoo_plans_emulate_like_the_interpreter(name: str) -> None:
    items = _searched(zoo_graph(name), name)
    assert items
    _check_all(items, 2, MAX_WORK)


@pytest.mark.slow
@pytest.mark.timeout(3000)
@pytest.mark.parametrize("program", list(SMALL))
def test_every_searched_template_emulates_like_the_interpreter(program: str) -> None:
    items = _searched(workloads.program(program, **SMALL[program]), program) + list(_hand(program))
    _check_all(items, 4, 512)


def _guard_off_by_one(items: int, threads: int) -> lowered.Sweep:
    """``e < items`` printed as ``e <= items``."""
    return lowered.Sweep(items, threads, items + 1 if items % threads else None)


# (what is patched, the buggy stand-in)
MUTATIONS: dict[str, tuple[object, str, Callable[..., object]]] = {
    "guard off by one": (lower, "sweep", _guard_off_by_one),
}


@pytest.mark.parametrize("name", list(MUTATIONS))
def test_emulator_rejects_lowering_bugs(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each bug, patched into the lowering, makes some hand plan fail in the emulator."""
    where, attr, bad = MUTATIONS[name]
    cases = [(label, t.instantiate(s)) for p in ("rmsnorm_linear", "gqa") for label, t in _hand(p)
             for s in cheap_sizes(t, 3)]
    for _, kg in cases:  # sound before the mutation
        assert emulate_error(kg) < 1e-9
    monkeypatch.setattr(where, attr, bad)
    caught = 0
    for _, kg in cases:
        try:
            caught += emulate_error(kg) > 1e-6
        except (EmulationError, CodegenError):
            caught += 1
    assert caught > 0, name


def test_emulation_error_names_the_tile(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lower, "sweep", _guard_off_by_one)
    _, t = next(_hand("rmsnorm_linear"))
    errors = []
    for s in cheap_sizes(t, 5, None):
        try:
            emulate_error(t.instantiate(s))
        except EmulationError as e:
            errors.append(str(e))
    assert errors and any("is outside" in e for e in errors), errors
