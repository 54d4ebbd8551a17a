"""The two cheap filters before the proof: layout typing of mappings and the numeric screen.

Neither may reject a right plan (every hand plan, split-K and split-KV included, passes both), and
the wrong candidates of the verifier's tests are caught: by the layout with the reason named, by the
screen as a numeric mismatch (or left to the proof when they cannot run at the screen's size)."""

from __future__ import annotations

import numpy as np
import pytest
import verify_cases as vc
from test_verify import SMALL, WRONG

from prism import plans, workloads
from prism.graph import Graph
from prism.interpreter import Prefixes
from prism.ir import KernelGraph
from prism.search.layout import IllTyped, check_layout, layout_ok
from prism.verify.screen import screen, small_instance


@pytest.mark.parametrize("prog", list(workloads.PROGRAMS))
def test_every_hand_plan_is_well_typed_and_passes_the_screen(prog: str) -> None:
    g = workloads.program(prog)
    kgs = plans.codegen_plans(prog, g)
    assert kgs
    for kg in kgs:
        check_layout(kg)
    assert screen(g, kgs) == [True] * len(kgs)


LAYOUT_REASONS = {
    vc.wrong_saver_dim: "saves a value laid out as",
    vc.wrong_saver_dim_same_size: "saves a value laid out as",
    vc.accum_before_square: "square of a partial sum",
    vc.contraction_on_grid: "of a partial sum",
    vc.mismatched_operands: "matmul of operands laid out as",
    vc.divide_before_combine: "div of operands laid out as ('P', -1) and ('P', -1)",
    vc.wrong_reduce_dim: "folded sum",
}


@pytest.mark.parametrize(("prog", "make", "why"), WRONG, ids=[f"{p}-{i}" for i, (p, _, _) in enumerate(WRONG)])
def test_wrong_candidates_are_caught(prog: str, make: object, why: str) -> None:
    g = workloads.program(prog, **SMALL[prog])
    kg = make(g)  # type: ignore[operator]
    reason = LAYOUT_REASONS.get(make)  # type: ignore[call-overload]
    if reason is not None:
        with pytest.raises(IllTyped, match=reason.replace("(", r"\(").replace(")", r"\)")):
            check_layout(kg)
    assert screen(g, [kg]) != [True]


def test_missing_rms_factor_is_well_typed_but_fails_the_screen() -> None:
    g = workloads.program("rmsnorm_linear", **SMALL["rmsnorm_linear"])
    kg = vc.missing_rms_factor(g)
    assert layout_ok(kg)  # its layout is fine: only its values are wrong
    assert screen(g, [kg]) == [False]


def test_small_instance_keeps_structure_and_equal_extents() -> None:
    g = workloads.rmsnorm_linear(16, 4096)
    small = small_instance(g)
    assert small.structure_key() == g.structure_key()
    x, w = (t.shape for t in small.inputs)
    assert x[1] == w[0] == w[1] and x[0] != x[1]
    assert all(s % 4 == 0 for t in small.inputs for s in t.shape)


def test_small_instance_keeps_extent_one() -> None:
    g = Graph()
    x = g.input((1, 64), "float16", "X")
    g.output(g.exp(x), "O")
    assert small_instance(g).inputs[0].shape[0] == 1


def _gqa_without_split_loop() -> tuple[Graph, object]:
    from dataclasses import replace

    from prism.ir import Load

    g = workloads.program("gqa", **SMALL["gqa"])
    kg = plans.gqa_plan(g)
    k = kg.kernels[0]
    ops = tuple(Load(op.tensor, op.imap, None) if isinstance(op, Load) else op for op in k.ops)  # type: ignore[union-attr]
    return g, replace(kg, kernels=(replace(k, ops=ops),))


def test_an_idle_loop_becomes_loop_size_one_and_is_proven() -> None:
    from prism.search.mapping import without_idle_loops
    from prism.verify import check_equivalent

    g, idle = _gqa_without_split_loop()
    # the loop repeats one iteration: right only because the repeats cancel in the ratio
    assert layout_ok(idle) and not layout_ok(idle, repeats=False)  # type: ignore[arg-type]
    assert not check_equivalent(g, idle).proven  # type: ignore[arg-type]
    one = without_idle_loops(idle)  # type: ignore[arg-type]
    assert one.kernels[0].loop == 1  # type: ignore[union-attr]
    assert layout_ok(one, repeats=False)
    assert check_equivalent(g, one).proven
    assert screen(g, [one]) == [True]


def test_a_loop_shared_with_another_kernel_is_left_alone() -> None:
    from prism.search.mapping import without_idle_loops

    g = workloads.program("gqa", **SMALL["gqa"])
    kg = plans.gqa_split_plan(g)
    assert without_idle_loops(kg) == kg


def test_the_screen_stops_at_the_first_size_set_a_plan_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """A plan wrong at one size set is wrong: the later size sets are not run (most plans the
    search maps for a safe softmax are wrong, so this halves its screen); a right plan runs at all."""
    import prism.verify.screen as scr

    g = workloads.program("rmsnorm_linear", **SMALL["rmsnorm_linear"])
    wrong = vc.missing_rms_factor(g)
    right = plans.rmsnorm_linear_2d_plan(g)
    calls: list[KernelGraph] = []
    real = scr._at

    def counted(kg: KernelGraph, sizes: dict[str, int], inputs: dict[str, np.ndarray],
                ref: dict[str, np.ndarray], prefixes: Prefixes | None = None) -> bool | None:
        calls.append(kg)
        return real(kg, sizes, inputs, ref, prefixes)

    monkeypatch.setattr(scr, "_at", counted)
    assert screen(g, [right, wrong]) == [True, False]
    runs_right = len(scr._size_sets(right.symbols))
    assert runs_right == 2 and len(scr._size_sets(wrong.symbols)) == 2
    assert len(calls) == runs_right + 1
