"""Padded tails (``prism.codegen.tails``): a plan whose tiles divide no legal size of a dim (decode
attention over a KV cache of 40 or 1,000 positions: mma tiles take multiples of 16) runs at the dim
padded up, zero-filled copies and masked reductions keeping the padding out. The plans are the
search's decode-attention plans, built here by hand (one block per head looping over the cache, and
the same split over the cache by ``prism.loopsplit``), so no prover runs; the emulator runs the
lowered form as the GPU would and must match the program at its own shapes."""

from __future__ import annotations

import numpy as np
import pytest

from prism import pipeline
from prism.codegen import generate
from prism.codegen.emulate import emulate
from prism.codegen.resources import resources
from prism.codegen.sizes import drawn_sizes, has_sizes
from prism.codegen.tails import padded_plans, tails_of
from prism.errors import CodegenError, SerializationError
from prism.graph import Graph
from prism.ir import (
    Accum,
    BinaryOp,
    CustomKernel,
    KernelGraph,
    Load,
    MatmulOp,
    ReduceOp,
    Save,
    Tail,
    UnaryOp,
)
from prism.loopsplit import split_loop
from prism.ops import Binary, Const, Reduce, Unary
from prism.reference import relative_error
from prism.tune.backends import InterpreterBackend
from prism.tune.tuner import tune

SCALE = 0.125


def _attention(heads: int, kv: int, d: int) -> Graph:
    g = Graph()
    q = g.input((heads, 1, d), "float16", "Q")
    kt = g.input((heads, d, kv), "float16", "Kt")
    v = g.input((heads, kv, d), "float16", "V")
    g.output(g.matmul(g.softmax(g.scale(g.matmul(q, kt), SCALE), -1), v), "O")
    return g


def _loop_plan(g: Graph) -> KernelGraph:
    """One block per head, looping over the cache: the online softmax into mma fragments."""
    ops = (Load("Kt", (0,), 2), Load("Q", (0,)), Load("V", (0,), 1), MatmulOp(1, 0),
           UnaryOp(Unary.SCALE, 3, Const(SCALE)), ReduceOp(Reduce.MAX, 4, 2), BinaryOp(Binary.SUB, 4, 5),
           UnaryOp(Unary.EXP, 6), MatmulOp(7, 2), Accum(7, 2, Reduce.SUM, rescale=5), Accum(8, rescale=5),
           BinaryOp(Binary.DIV, 10, 9), Save(11, "O", (0,)))
    return KernelGraph.of(g, "decode_attention", [CustomKernel("k0", ("k0_x",), "k0_i", ops)])


def _inputs(g: Graph, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {t.name: rng.standard_normal(t.shape) * 2 for t in g.inputs}


def _emulated_error(g: Graph, kg: KernelGraph) -> float:
    x = _inputs(g)
    return relative_error(emulate(kg, x)["O"], g.evaluate(x)["O"])


@pytest.mark.parametrize("kv", [40, 37, 200])
def test_a_loop_over_the_cache_runs_padded_and_emulates_like_the_program(kv: int) -> None:
    g = _attention(3, kv, 32)
    plan = _loop_plan(g)
    assert not has_sizes(plan)  # no tile of 16k divides the cache: nothing to run unpadded
    variants = padded_plans(plan)
    assert {v.tail for v in variants} == {t for t in tails_of(g.inputs)} and variants
    ran = 0
    for v in variants:
        for sizes in drawn_sizes(v, "sm_80", resources, 4):
            assert _emulated_error(g, v.instantiate(sizes)) < 1e-12, (v.tail, sizes)
            ran += 1
    assert ran >= 4


def test_a_split_over_the_cache_runs_padded_and_emulates_like_the_program() -> None:
    g = _attention(2, 1000, 32)
    split = split_loop(g, _loop_plan(g), "decode_attention")
    assert split is not None and len(split.kernels) == 2
    ran = 0
    for v in padded_plans(split):
        for sizes in drawn_sizes(v, "sm_80", resources, 4):
            concrete = v.instantiate(sizes)
            assert _emulated_error(g, concrete) < 1e-12, (v.tail, sizes)
            ran += 1
    assert ran >= 2


def test_the_copies_zero_fill_and_the_reductions_skip_the_tail() -> None:
    g = _attention(2, 1000, 64)
    kg = _loop_plan(g).padded(Tail(1024, 1000)).instantiate({"k0_x": 2, "k0_i": 8})
    plan = generate(kg)
    src = plan.kernels[0].source
    assert "cp_async16z(" in src and ", const int lim)" in src
    assert "(1000 - (it * 128))" in src  # the valid positions of this iteration's tile
    assert "-__int_as_float(0x7f800000))" in src  # the row max takes -inf past them
    assert [t.shape for t in plan.inputs] == [t.shape for t in g.inputs]  # called on the program's tensors


def test_without_a_tail_the_generated_source_is_unchanged() -> None:
    g = _attention(2, 1024, 64)
    src = generate(_loop_plan(g).instantiate({"k0_x": 2, "k0_i": 8})).kernels[0].source
    assert "cp_async16z" not in src and "lim" not in src


def _scores(g: Graph, then_exp: bool) -> KernelGraph:
    """Q @ Kt saved (one kernel), or saved as an intermediate that a second kernel exponentiates."""
    out = "t0" if then_exp else "S"
    k0 = CustomKernel("k0", ("k0_x", "k0_y"), 1, (
        Load("Kt", (0, 2)), Load("Q", (0, None)), MatmulOp(1, 0), Accum(2), Save(3, out, (0, 2))))
    if not then_exp:
        return KernelGraph.of(g, "scores", [k0])
    k1 = CustomKernel("k1", ("k1_x",), 1, (Load("t0", (0,)), UnaryOp(Unary.EXP, 0), Accum(1), Save(2, "S", (0,))))
    return KernelGraph.of(g, "scores", [k0, k1])


def _scores_graph(kv: int, then_exp: bool) -> Graph:
    g = Graph()
    s = g.matmul(g.input((2, 1, 32), "float16", "Q"), g.input((2, 32, kv), "float16", "Kt"))
    g.output(g.exp(s) if then_exp else s, "S")
    return g


def test_an_output_along_the_tail_stops_at_its_valid_elements() -> None:
    g = _scores_graph(40, False)
    variants = padded_plans(_scores(g, False))
    assert variants
    x = _inputs(g)
    for v in variants:
        for sizes in drawn_sizes(v, "sm_80", resources, 3):
            got = emulate(v.instantiate(sizes), x)["S"]  # (the emulator faults on a store past the tensor)
            assert got.shape == (2, 1, 40) and relative_error(got, g.evaluate(x)["S"]) < 1e-12, (v.tail, sizes)
    src = generate(variants[0].instantiate(drawn_sizes(variants[0], "sm_80", resources, 1)[0])).kernels[0].source
    assert "(not past a padded tail's valid elements)" in src


def test_an_intermediate_along_the_tail_is_stored_to_its_valid_elements_and_read_masked() -> None:
    """Two kernels passing on scores along the padded dim (as two stitched parts of an attention do: a
    decoder layer over 24 keys had no stitched plan for it): the first stops its stores at the valid
    elements, the second's copies zero the rest, so the tail left unwritten (NaN in the emulator) is never
    read. A whole plan that writes such an intermediate is still not padded by ``with_tails``."""
    g = _scores_graph(40, True)
    plan = _scores(g, True)
    assert padded_plans(plan) == []
    x = _inputs(g)
    for sizes in ({"k0_x": 2, "k0_y": 1, "k1_x": 2}, {"k0_x": 1, "k0_y": 3, "k1_x": 1}):
        concrete = plan.padded(Tail(48, 40)).instantiate(sizes)
        got = emulate(concrete, x)["S"]
        assert relative_error(got, g.evaluate(x)["S"]) < 1e-12, sizes
        src = "".join(k.source for k in generate(concrete).kernels)  # (two launches, or one fused)
        assert "t0[2, 1, 48] -> tile" in src and src.count("zeros past the padded tail's valid elements") == 2


def test_a_padded_batched_matmul_by_a_2d_weight_lowers_and_emulates_like_the_program() -> None:
    """Found by random attentions (``bench.fuzz --family attention``, seed 12) once stitched plans could
    cross a padded dim: heads [2, 4, 32] over 24 keys padded to 64, then a projection by a 2-D weight. The
    tail walk took the weight's tile as having the output's rank (IndexError, a crash of superoptimize)."""
    from pathlib import Path

    from bench.fuzz import FAMILIES
    from prism.ir import KernelGraph

    g = FAMILIES["attention"](12)
    kg = KernelGraph.loads((Path(__file__).parent / "data" / "padded_stitched_attention_projection.json").read_text())
    assert kg.tail == Tail(64, 24) and [t.shape for t in kg.true_inputs] == [t.shape for t in g.inputs]
    assert any(isinstance(op, MatmulOp) and len(kg.kernels) > 3 for k in kg.kernels if isinstance(k, CustomKernel)
               for op in k.ops)
    x = _inputs(g)
    got = emulate(kg, x)["O"]  # (lowered first: the tail walk of every kernel)
    assert relative_error(got, g.evaluate(x)["O"]) < 1e-12


def test_parts_after_a_padded_one_are_tuned_to_its_padding_where_they_can_be() -> None:
    """Parts tuned alone picked 24 keys padded to 64 in one and to 128 in the next: no stitched plan. A
    later part's templates are those unpadded or padded as the earlier part chose (all, where none are)."""
    g = _attention(2, 40, 32)
    plain = _loop_plan(g)
    a, b = plain.padded(Tail(48, 40)), plain.padded(Tail(64, 40))
    src = [pipeline.PlanSource.SEARCHED] * 3
    assert pipeline._padded_to([plain, a, b], src, None) == ([plain, a, b], src)
    assert pipeline._padded_to([plain, a, b], src, Tail(64, 40))[0] == [plain, b]
    assert pipeline._padded_to([a], src[:1], Tail(64, 40))[0] == [a]  # (nothing else to tune)


def test_what_a_tail_cannot_mask_is_refused() -> None:
    g2 = _attention(2, 40, 32)
    with pytest.raises(CodegenError, match="would hold no valid element"):  # a last tile all padding
        generate(_loop_plan(g2).padded(Tail(64, 40)).instantiate({"k0_x": 2, "k0_i": 4}))


def test_a_tail_survives_the_plan_document_and_a_bad_one_is_refused() -> None:
    kg = _loop_plan(_attention(2, 40, 32)).padded(Tail(48, 40))
    assert KernelGraph.loads(kg.dumps()) == kg
    assert '"tail"' not in _loop_plan(_attention(2, 48, 32)).dumps()  # (no tail: the old form)
    with pytest.raises(SerializationError, match="tail"):
        KernelGraph.loads(kg.dumps().replace('"tail": [48, 40]', '"tail": [40, 48]'))


def test_the_tuner_picks_a_padded_plan_and_checks_it_against_the_program() -> None:
    g = _attention(2, 40, 32)
    templates, sources = pipeline.with_tails([_loop_plan(g)], [pipeline.PlanSource.CONSTRUCTED])
    assert len(templates) > 1 and all(t.tail is not None for t in templates[1:])
    assert sources == [pipeline.PlanSource.CONSTRUCTED] * len(templates)  # (timed whatever the draw)
    res = tune(g, templates, samples=4, seed=0, backend=InterpreterBackend(lambda kg: 1.0, arch="sm_80",
                                                                           resources=resources))
    assert res.template.tail is not None and res.rel_err < 1e-3


def test_a_stitched_plan_keeps_its_parts_tail() -> None:
    from bench.zoo import ZOO
    from prism.errors import IRError
    from prism.partition import partition, predefined_plan, stitch, stitchable

    g = ZOO["qnorm_attention"].build(**{**ZOO["qnorm_attention"].small, "kv_len": 40, "head_dim": 32})
    parts = partition(g)
    plans = [predefined_plan(p.graph) for p in parts]
    assert len(parts) > 1 and stitch(g, parts, plans, "s").tail is None
    tailed = stitch(g, parts, [plans[0].padded(Tail(48, 40)), *plans[1:]], "s")
    assert tailed.tail == Tail(48, 40) and [t.shape for t in tailed.true_inputs] == [t.shape for t in g.inputs]
    assert any(48 in t.shape for t in tailed.inputs)
    with pytest.raises(CodegenError, match="predefined kernel .* the padded tail"):  # it would compute the tail
        generate(tailed)
    apart = [plans[0].padded(Tail(48, 40)), plans[1].padded(Tail(64, 40)), *plans[2:]]
    assert not stitchable(apart) and stitchable([plans[0].padded(Tail(48, 40)), *plans[1:]])
    with pytest.raises(IRError, match="different tails"):
        stitch(g, parts, apart, "s")


def _router(n: int, d: int, f: int) -> Graph:
    g = Graph()
    x, w = g.input((n, d), "float16", "X"), g.input((d, f), "float16", "W")
    g.output(g.softmax(g.matmul(x, w), -1), "O")
    return g


def _gemv_softmax_plan(g: Graph) -> KernelGraph:
    """Blocks over rows, looping over the contraction: the products summed, then the row's softmax."""
    ops = (Load("W", (None,), 0), Load("X", (0,), 1), MatmulOp(1, 0), Accum(2), ReduceOp(Reduce.MAX, 3, 1),
           BinaryOp(Binary.SUB, 3, 4), UnaryOp(Unary.EXP, 5), ReduceOp(Reduce.SUM, 6, 1),
           BinaryOp(Binary.DIV, 6, 7), Save(8, "O", (0,)))
    return KernelGraph.of(g, "router", [CustomKernel("k0", ("k0_x",), "k0_i", ops)])


def test_a_split_gemv_whose_output_width_is_padded_masks_each_split_partial(monkeypatch: pytest.MonkeyPatch) -> None:
    """A router's 60 experts: split over the contraction, each split block saves a padded copy of the
    output row side by side in the partials ([rows, s · 64]); its stores stop at each copy's valid
    elements and the combine's copies zero the rest (``tails.padded_chunks``). Such a plan built by rule
    is padded (``with_tails``), a searched one is not; the emulator matches the program, and without the
    copies' masks it reads the unwritten tail (NaN) or stores past the output."""
    from prism.codegen import tails
    from prism.codegen.emulate_mem import EmulationError

    g = _router(8, 256, 60)
    split = split_loop(g, _gemv_softmax_plan(g), "router")
    assert split is not None and len(split.kernels) == 2
    assert not padded_plans(split)  # (a searched plan that writes an intermediate along the tail: not padded)
    templates, _ = pipeline.with_tails([split], [pipeline.PlanSource.CONSTRUCTED])
    assert {t.tail for t in templates[1:]} == {Tail(64, 60), Tail(128, 60)}
    ran = []
    for v in templates[1:]:
        for sizes in drawn_sizes(v, "sm_80", resources, 6):
            concrete = v.instantiate(sizes)
            chunks = tails.padded_chunks(concrete)
            if chunks:  # more than one split: the partials hold copies of the padded row
                assert list(chunks.values()) == [1]
                ran.append(concrete)
            assert _emulated_error(g, concrete) < 1e-12, (v.tail, sizes)
    assert ran
    from prism.codegen import lower

    monkeypatch.setattr(lower, "saved_chunks", lambda *_: {})  # (the lowering collects them kernel by kernel)
    for concrete in ran[:2]:
        try:
            err = _emulated_error(g, concrete)
        except EmulationError:
            continue
        assert not err < 1e-3
