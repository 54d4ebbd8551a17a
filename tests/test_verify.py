"""The equivalence verifier: hand plans are proven, wrong candidates rejected, verdicts sound."""

from __future__ import annotations

import itertools
import subprocess
import sys
import time

import numpy as np
import pytest
import verify_cases as vc

from prism import interpreter, plans, workloads
from prism.errors import PrismError
from prism.graph import Graph
from prism.ir import Accum, BinaryOp, CustomKernel, KernelGraph, Load, MatmulOp, Save, UnaryOp
from prism.ops import Binary, Unary
from prism.verify import Budget, check_equivalent, verify_all
from prism.verify.terms import encode_candidate, encode_graph, evaluate

SIZES = [{"x": 2, "y": 3, "i": 2, "s": 2}, {"x": 3, "y": 2, "i": 3, "s": 3}]
SMALL = {
    "rmsnorm_linear": {"n": 6, "d": 36},
    "rmsnorm_mlp": {"n": 6, "d": 36},
    "swiglu": {"n": 6, "d": 36},
    "gqa": {"batch": 6, "group": 6, "kv_len": 36, "head_dim": 6},
    "qknorm_gqa": {"batch": 6, "group": 6, "kv_len": 36, "head_dim": 6},
    "gqa_safe": {"batch": 6, "group": 6, "kv_len": 36, "head_dim": 6},
    "qknorm_gqa_safe": {"batch": 6, "group": 6, "kv_len": 36, "head_dim": 6},
}


def _inputs(g: Graph, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {t.name: rng.uniform(0.5, 1.5, t.shape) * (0.3 if t.name != "X" else 1.0) for t in g.inputs}


def interpreter_agrees(g: Graph, kg: KernelGraph) -> bool:
    """The μGraph interpreter matches the float64 reference at every size set of SIZES."""
    ref = g.evaluate(_inputs(g))
    for sizes in SIZES:
        try:
            got = interpreter.run(kg.instantiate({s: sizes[s] for s in kg.symbols}), _inputs(g))
        except PrismError:
            return False
        if not all(np.allclose(got[k], ref[k], rtol=1e-9, atol=1e-12) for k in ref):
            return False
    return True


def _plans() -> list[tuple[str, int, KernelGraph, Graph]]:
    out = []
    for prog in workloads.PROGRAMS:
        g = workloads.program(prog, **SMALL[prog])
        for i, kg in enumerate(plans.hand_plans(prog, g)):
            out.append((prog, i, kg, g))
    return out


PLANS = _plans()


@pytest.mark.parametrize(("prog", "i", "kg", "g"), PLANS, ids=[f"{p}-{i}" for p, i, _, _ in PLANS])
def test_hand_plan_is_proven(prog: str, i: int, kg: KernelGraph, g: Graph) -> None:
    v = check_equivalent(g, kg)
    assert v.proven, v.reason
    assert 0 < v.iterations <= Budget().max_iterations and v.nodes > 0


@pytest.mark.parametrize(("prog", "i", "kg", "g"), PLANS, ids=[f"{p}-{i}" for p, i, _, _ in PLANS])
def test_encoding_matches_interpreter(prog: str, i: int, kg: KernelGraph, g: Graph) -> None:
    """The terms mean what the interpreter computes (Load/Accum/Save, multi-kernel intermediates)."""
    enc_g, dims = encode_graph(g)
    enc = encode_candidate(kg, g, dims)
    inputs = _inputs(g)
    ref = g.evaluate(inputs)
    for sizes in SIZES:
        run = interpreter.run(kg.instantiate({s: sizes[s] for s in kg.symbols}), inputs)
        got = evaluate(enc, dims, inputs, sizes)
        for k in ref:
            np.testing.assert_allclose(got[k], run[k], rtol=1e-9)
    np.testing.assert_allclose(evaluate(enc_g, dims, inputs, {})["O"], ref["O"], rtol=1e-9)


WRONG = [
    ("rmsnorm_linear", vc.wrong_saver_dim, "ill-formed"),
    ("rmsnorm_linear", vc.wrong_saver_dim_same_size, "saturated"),
    ("rmsnorm_linear", vc.accum_before_square, "saturated"),
    ("rmsnorm_linear", vc.contraction_on_grid, "ill-formed"),
    ("rmsnorm_linear", vc.missing_rms_factor, "saturated"),
    ("swiglu", vc.mismatched_operands, "saturated"),
    ("gqa", vc.divide_before_combine, "saturated"),
    ("qknorm_gqa", lambda g: vc.divide_before_combine(g, qknorm=True), "saturated"),
    ("gqa", vc.wrong_reduce_dim, "ill-formed"),
    ("gqa_safe", lambda g: vc.unrescaled(g, split=False), "saturated"),
    ("gqa_safe", lambda g: vc.unrescaled(g, split=True), "saturated"),
    ("qknorm_gqa_safe", lambda g: vc.unrescaled(g, split=True, qknorm=True), "saturated"),
]


@pytest.mark.parametrize(("prog", "make", "why"), WRONG, ids=[f"{p}-{i}" for i, (p, _, _) in enumerate(WRONG)])
def test_wrong_candidate_is_rejected(prog: str, make: object, why: str) -> None:
    g = workloads.program(prog, **SMALL[prog])
    kg = make(g)  # type: ignore[operator]
    v = check_equivalent(g, kg)
    assert not v.proven
    assert v.reason.startswith(why), v.reason
    if why == "saturated":  # well-formed, so the interpreter can confirm that it is wrong
        assert not interpreter_agrees(g, kg)


def test_matched_operands_control_is_proven() -> None:
    g = workloads.program("swiglu", **SMALL["swiglu"])
    kg = vc.matched_operands(g)
    assert interpreter_agrees(g, kg)
    assert check_equivalent(g, kg).proven


def test_program_that_differs_is_rejected() -> None:
    """A plan of one program checked against another program (no RMS factor in SwiGLU)."""
    g = workloads.program("rmsnorm_mlp", **SMALL["rmsnorm_mlp"])
    other = plans.swiglu_plan(workloads.program("swiglu", **SMALL["swiglu"]))
    kg = KernelGraph("rmsnorm_mlp", other.inputs, other.outputs, other.kernels)
    v = check_equivalent(g, kg)
    assert not v.proven


def test_a_transposed_column_broadcasts_like_a_row() -> None:
    """``sum(B^2, -1)^T - 2 A @ B^T`` (squared distances): the plan's kernel reads the transposed column
    (1, m) broadcast over the rows; the proof needs the transpose to carry the column's extent of 1
    to dim 0 (``axioms._transposed_dims``). A kernel that broadcasts it over the wrong dim is rejected."""
    from prism.rowwise import row_vendor_plan
    from tests.test_partition import run_plan

    g = Graph()
    a, b = g.input((4, 8), name="A"), g.input((6, 8), name="B")
    g.output(g.sub(g.transpose(g.sum(g.square(b), -1)), g.scale(g.matmul(a, g.transpose(b)), 2.0)), "O")
    kg = row_vendor_plan(g, "dist")
    assert kg is not None and run_plan(g, kg) < 1e-12
    assert check_equivalent(g, kg).proven
    g3 = Graph()  # rank 3: the batch dim keeps its facts, the last two swap
    q, k = g3.input((2, 4, 8), name="Q"), g3.input((2, 6, 8), name="K")
    g3.output(g3.sub(g3.transpose(g3.sum(g3.square(k), -1)), g3.matmul(q, g3.transpose(k))), "O")
    kg3 = row_vendor_plan(g3, "dist3")
    assert kg3 is not None and run_plan(g3, kg3) < 1e-12
    assert check_equivalent(g3, kg3).proven
    wrong = Graph()  # the column itself, not its transpose: same ops, a different function
    a2, b2 = wrong.input((4, 8), name="A"), wrong.input((4, 8), name="B")
    wrong.output(wrong.sub(wrong.sum(wrong.square(b2), -1), wrong.scale(wrong.matmul(a2, wrong.transpose(b2)), 2.0)), "O")
    square = Graph()
    a3, b3 = square.input((4, 8), name="A"), square.input((4, 8), name="B")
    square.output(square.sub(square.transpose(square.sum(square.square(b3), -1)),
                             square.scale(square.matmul(a3, square.transpose(b3)), 2.0)), "O")
    swapped = row_vendor_plan(wrong, "dist")
    assert swapped is not None and not check_equivalent(square, swapped).proven


def test_bounds_reject() -> None:
    g = workloads.program("qknorm_gqa", **SMALL["qknorm_gqa"])
    kg = plans.gqa_split_plan(g, qknorm=True)
    v = check_equivalent(g, kg, budget=Budget(max_iterations=2))
    assert not v.proven and "iteration bound" in v.reason


def test_verify_all_matches_single_checks() -> None:
    g = workloads.program("rmsnorm_linear", **SMALL["rmsnorm_linear"])
    cands = [plans.rmsnorm_linear_plan(g), vc.missing_rms_factor(g), plans.rmsnorm_linear_2d_plan(g),
             vc.wrong_saver_dim(g), vc.accum_before_square(g), plans.rmsnorm_linear_plan(g)]
    batch = verify_all(g, cands)
    single = [check_equivalent(g, c) for c in cands]
    assert [v.proven for v in batch] == [v.proven for v in single] == [True, False, True, False, False, True]


def test_import_is_cheap() -> None:
    code = "import sys, prism.verify; assert 'egglog' not in sys.modules, 'egglog imported eagerly'"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=str(__import__("pathlib").Path(__file__).parents[1]))


# ---------------------------------------------------------------------------------- cross-check


def rmsnorm_linear_variants(g: Graph, grid_dims: int) -> list[KernelGraph]:
    """Every imap/fmap/omap choice of the one-kernel RMSNorm+matmul plan with 1 or 2 grid dims."""
    base = plans.rmsnorm_linear_plan(g)
    k0 = base.kernels[0]
    assert isinstance(k0, CustomKernel)
    grid = ("x", "y")[:grid_dims]
    imaps = [m for m in itertools.product((None, 0, 1), repeat=grid_dims)
             if len([a for a in m if a is not None]) == len({a for a in m if a is not None})]
    omaps = list(itertools.permutations((0, 1), grid_dims))
    out = []
    for xi, wi, xf, wf, om in itertools.product(imaps, imaps, (None, 0, 1), (None, 0, 1), omaps):
        ops = (Load("X", xi, xf), Load("W", wi, wf), MatmulOp(0, 1), Accum(2), UnaryOp(Unary.SQUARE, 0),
               Accum(4, reduce_dim=1), *plans._rms_factor(5, "X", 1, 6), BinaryOp(Binary.MUL, 3, 8), Save(9, "O", om))
        out.append(KernelGraph(base.program, base.inputs, base.outputs, (CustomKernel("k0", grid, "i", ops),)))
    return out


def _rect_rmsnorm_linear() -> Graph:
    g = Graph()
    x = g.input((6, 12), "float16", "X")
    w = g.input((12, 18), "float16", "W")
    g.output(g.matmul(g.rms_norm(x), w), "O")
    return g


def _cross_check(grid_dims: int) -> tuple[int, int, int, float]:
    g = _rect_rmsnorm_linear()
    cands = rmsnorm_linear_variants(g, grid_dims)
    t0 = time.perf_counter()
    verdicts = verify_all(g, cands)
    secs = time.perf_counter() - t0
    correct = [interpreter_agrees(g, c) for c in cands]
    unsound = [i for i, (v, ok) in enumerate(zip(verdicts, correct, strict=True)) if v.proven and not ok]
    assert not unsound, f"proven but wrong: {[cands[i].kernels for i in unsound[:3]]}"
    proven = sum(v.proven for v in verdicts)
    return len(cands), sum(correct), proven, secs


def test_cross_check_one_grid_dim() -> None:
    n, correct, proven, _ = _cross_check(1)
    assert n == 162
    assert correct > 0 and proven == correct, (correct, proven)


@pytest.mark.slow
def test_cross_check_two_grid_dims() -> None:
    n, correct, proven, secs = _cross_check(2)
    print(f"2 grid dims: {n} candidates, {correct} interpreter-correct, {proven} proven, verify {secs:.2f} s")
    assert proven == correct


def test_past_its_deadline_the_proof_checks_nothing_more_and_accepts_nothing() -> None:
    """``verify_all(deadline=...)``: candidates not reached are not proven (a random program's 697
    screened plans took 83 s of proof under a 3 s search budget; docs/search-speed.md)."""
    from prism.verify.check import Outcome

    g = workloads.rmsnorm_linear()
    kg = plans.rmsnorm_linear_plan(g)
    assert [v.proven for v in verify_all(g, [kg, kg], deadline=time.perf_counter() + 60)] == [True, True]
    late = verify_all(g, [kg, kg], deadline=time.perf_counter() - 1)
    assert [(v.proven, v.outcome) for v in late] == [(False, Outcome.LATE)] * 2


def test_the_interner_makes_one_object_of_each_structure() -> None:
    """Terms of two encodings of one plan become the same objects; a plan that differs keeps its own
    nodes where it differs, and two scalar ops the prover tells apart (0.0, -0.0) stay apart."""
    from prism.verify.nodes import In, Interner, Un, UnOp, walk

    g = workloads.program("rmsnorm_linear", **SMALL["rmsnorm_linear"])
    _, dims = encode_graph(g)
    kg, other = plans.rmsnorm_linear_plan(g), plans.rmsnorm_linear_2d_plan(g)
    intern = Interner()
    a = intern(list(encode_candidate(kg, g, dims).outputs.values()))
    b = intern(list(encode_candidate(kg, g, dims).outputs.values()))
    assert all(x is y for x, y in zip(a, b, strict=True))
    c = intern(list(encode_candidate(other, g, dims).outputs.values()))
    assert c != a and all(x is not y for x, y in zip(a, c, strict=True))
    in_a = list(walk(a))
    assert any(s is t for t in walk(c) for s in in_a)  # the inputs and what the plans share below them
    assert all(s is t for t in walk(c) for s in in_a if s == t)  # equal nodes of the two plans are one object
    x = In("X")
    plus, minus = intern([Un(UnOp(Unary.SCALE, 0.0), x), Un(UnOp(Unary.SCALE, -0.0), x)])
    assert plus is not minus and intern([Un(UnOp(Unary.SCALE, 0.0), In("X"))])[0] is plus


def test_a_batch_of_right_wrong_and_ill_formed_plans_that_share_terms() -> None:
    """The candidates of one check share interned terms and their inferred shapes: each verdict is
    still its own (gqa's hand plans beside its wrong ones, each a few ops away from a right one)."""
    g = workloads.program("gqa", **SMALL["gqa"])
    wrong = [(make(g), why) for p, make, why in WRONG if p == "gqa"]
    cands = [plans.gqa_split_plan(g), *(kg for kg, _ in wrong), plans.gqa_split_plan(g)]
    batch = verify_all(g, cands)
    assert [v.proven for v in batch] == [True, *[False] * len(wrong), True]
    assert all(v.reason.startswith(why) for v, (_, why) in zip(batch[1:-1], wrong, strict=True))
