"""Programs at sizes that are not powers of two (5 or 7 rows, 11,008 = 16 x 688 features, widths of
1536 or 640): the tuner draws sizes from the divisors of the shapes (``drawn_sizes``), so tiles of 5
rows, 43 columns or 688 features are generated. Every drawn size of every verified plan, lowered,
computes the program under the emulator (the generated code's semantics) as the interpreter does."""

from __future__ import annotations

import numpy as np
import pytest

from prism import pipeline
from prism.codegen.emulate import emulate
from prism.codegen.resources import resources
from prism.codegen.sizes import default_sizes, drawn_sizes, generated_sizes, has_sizes, smem_budget
from prism.graph import Graph
from prism.interpreter import run
from prism.ir import Accum, CustomKernel, KernelGraph, Load, MatmulOp, Save, TensorSpec
from prism.reference import relative_error


def _program(kind: str, n: int, d: int) -> Graph:
    g = Graph()
    x = g.input((n, d), "float16", "X")
    match kind:
        case "rms_norm":
            o = g.rms_norm(x)
        case "col_sum":
            o = g.sum(x, 0)
        case "silu_mul":
            o = g.mul(g.silu(x), g.input((n, d), "float16", "Y"))
        case _:
            raise AssertionError(kind)
    g.output(o, "O")
    return g


def _gemv(n: int, d: int, f: int) -> KernelGraph:
    """O = X @ W, X (n, d) whole in every block, W's columns over the grid, its rows over the loop."""
    k = CustomKernel("k0", ("k0_x",), "k0_i", (Load("X", (None,), 1), Load("W", (1,), 0), MatmulOp(0, 1), Accum(2),
                                                Save(3, "O", (1,))))
    return KernelGraph("gemv", (TensorSpec("X", (n, d), "float16"), TensorSpec("W", (d, f), "float16")),
                       (TensorSpec("O", (n, f), "float16"),), (k,))


def _inputs(shapes: dict[str, tuple[int, ...]]) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    return {name: rng.standard_normal(shape) for name, shape in shapes.items()}


@pytest.mark.parametrize(("kind", "n", "d"), [("rms_norm", 5, 1536), ("col_sum", 7, 96), ("silu_mul", 7, 640)])
def test_plans_at_drawn_sizes_compute_the_program(kind: str, n: int, d: int, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PRISM_CACHE_DIR", str(tmp_path))
    g = _program(kind, n, d)
    found = pipeline.search_and_verify(g, program=kind, progress=False, cache=False)
    ins = _inputs({t.name: t.shape for t in g.inputs})
    want = g.evaluate(ins)["O"]
    drawn = [(t, sz) for t in found.templates for sz in drawn_sizes(t, "sm_80", resources, 3)]
    assert drawn, "no verified plan has a legal size"
    assert any(v % 2 for _, sz in drawn for v in sz.values() if v > 1), "no drawn size off the powers of two"
    for t, sz in drawn:
        assert relative_error(emulate(t.instantiate(sz), ins)["O"], want) < 1e-9, sz


def test_a_gemv_over_688_features_tiles_them_by_divisors() -> None:
    kg = _gemv(5, 320, 688)
    assert has_sizes(kg)
    ins = _inputs({"X": (5, 320), "W": (320, 688)})
    want = ins["X"] @ ins["W"]
    sizes = drawn_sizes(kg, "sm_80", resources, 6)
    assert any(s["k0_x"] == 43 for s in sizes), sizes  # 43 blocks of 16 columns
    for sz in sizes:
        concrete = kg.instantiate(sz)
        assert relative_error(run(concrete, ins)["O"], want) < 1e-12
        assert relative_error(emulate(concrete, ins)["O"], want) < 1e-9, sz


def test_a_gemv_over_11008_features_has_sizes_only_off_the_powers_of_two() -> None:
    """11,008 = 2^8 x 43 output features: a column tile that is a multiple of 16 needs a grid dividing
    688, and its 2,560-long contraction a loop no power of two serves within shared memory, so every
    power-of-two assignment fails to lower; the divisors the tuner draws from do not (``has_sizes``, what
    the pipeline asks before searching two-kernel plans; ``default_sizes``, what ``prism emit`` takes)."""
    kg = _gemv(5, 2560, 11008)
    assert next(generated_sizes(kg), None) is None
    assert has_sizes(kg)
    for sizes in [*drawn_sizes(kg, "sm_80", resources, 4), default_sizes(kg)]:
        assert 11008 % sizes["k0_x"] == 0 and 2560 % sizes["k0_i"] == 0
        assert resources(kg.instantiate(sizes), "sm_80").smem_bytes <= smem_budget("sm_80")
