"""Transposes of program inputs folded into the loads of generated matmuls (prism/codegen/fold.py):
a linear layer ``x @ w.T`` reads ``w`` in place. CPU: the folded graph in the interpreter, the
lowered form in the emulator (the transposed tile's copy and its ldmatrix B reads), the launch plan."""

from __future__ import annotations

import numpy as np
import pytest

from prism import interpreter, pipeline, workloads
from prism.codegen import generate
from prism.codegen.fold import fold_transposes, foldable
from prism.codegen.plan import PredefinedOp
from prism.graph import Graph, OpKind
from prism.ir import CustomKernel, KernelGraph, Load, PredefinedKernel
from prism.partition import partition
from tests.test_emulate import cheap_sizes, emulate_error
from tests.test_fold_gpu import cached_keys_graph, cached_keys_templates, linear_graph, linear_templates


def _linear(n: int = 16, k: int = 128, m: int = 64, norm: bool = True) -> Graph:
    g = Graph()
    x = g.input((n, k), name="x")
    w = g.input((m, k), name="w")
    h = g.mul(x, g.rsqrt(g.add(g.mean(g.square(x), -1), 1e-5))) if norm else x
    g.output(g.matmul(h, g.transpose(w)), "y")
    return g


def _generated_of(g: Graph) -> list[KernelGraph]:
    """The plans whose matmul is a generated kernel reading a transpose."""
    out = pipeline.search_and_verify(g, program="linear", cache=False, progress=False)
    return [kg for kg in out.templates if foldable(kg)]



def test_a_linear_layer_is_searched_and_its_transpose_folded() -> None:
    g = _linear()
    parts = partition(g)
    assert all(p.searchable for p in parts if p.graph.nodes[-1].kind is OpKind.MATMUL)
    plans = _generated_of(g)
    assert plans
    for template in plans[:4]:
        kg = template.instantiate(cheap_sizes(template, 1)[0])
        folded = fold_transposes(kg)
        assert not any(isinstance(k, PredefinedKernel) and k.kind is OpKind.TRANSPOSE for k in folded.kernels)
        loads = [op for k in folded.kernels if isinstance(k, CustomKernel) for op in k.ops if isinstance(op, Load)]
        assert any(op.tensor == "w" and op.transposed for op in loads)
        ins = {t.name: np.random.default_rng(0).standard_normal(t.shape) for t in g.inputs}
        want = g.evaluate(ins)["y"]
        assert np.allclose(interpreter.run(folded, ins)["y"], want, rtol=1e-10, atol=1e-10)
        assert KernelGraph.loads(folded.dumps()) == folded  # the flag survives JSON


def test_the_whole_program_is_searched_without_its_weight_transposes() -> None:
    """A program reading a weight's transpose is searched whole as if the weight came transposed
    (``partition.weight_transposes``): its searched plans are the transpose, then one generated kernel
    that reads it as a matmul's B operand, which code generation folds. A transpose read otherwise
    (as the A operand) stays in the program, and no whole-program plan is searched past it."""
    from prism.partition import weight_transposes

    g = _linear(norm=True)
    outer = weight_transposes(g)
    assert outer is not None and outer.inner is not None
    assert [g.nodes[i].kind for i in outer.transposes] == [OpKind.TRANSPOSE]
    assert not any(n.kind is OpKind.TRANSPOSE for n in outer.inner.nodes)
    out = pipeline.search_and_verify(g, program="linear", cache=False, progress=False)
    searched = out.of(pipeline.PlanSource.SEARCHED)
    assert searched
    ins = {t.name: np.random.default_rng(1).standard_normal(t.shape) for t in g.inputs}
    for template in searched[:3]:
        first, *rest = template.kernels
        assert isinstance(first, PredefinedKernel) and first.kind is OpKind.TRANSPOSE and first.inputs == ("w",)
        assert rest and all(isinstance(k, CustomKernel) for k in rest)
        kg = template.instantiate(cheap_sizes(template, 1)[0])
        assert foldable(kg)  # code generation reads w in place
        assert np.allclose(interpreter.run(kg, ins)["y"], g.evaluate(ins)["y"], rtol=1e-10, atol=1e-10)
    a_side = Graph()
    x, w = a_side.input((128, 16), name="x"), a_side.input((128, 64), name="w")
    a_side.output(a_side.matmul(a_side.transpose(x), w), "y")
    assert weight_transposes(a_side) is None


@pytest.mark.parametrize(("norm", "k"), [(True, 128), (False, 96)])
def test_folded_matmuls_emulate_like_the_interpreter(norm: bool, k: int) -> None:
    """Every stitched plan with a generated matmul, at up to 3 cheap legal sizes (swizzled tiles, and
    padded ones where a row of 48 or 96 halves does not swizzle; rings and k-splits among them): the
    emulated lowering (tile copied in w's layout, ldmatrix without .trans) gives the interpreter's
    outputs of the unfolded graph."""
    runs = 0
    for template in _generated_of(_linear(k=k, norm=norm)):
        for sizes in cheap_sizes(template, 3):
            kg = template.instantiate(sizes)
            assert emulate_error(kg) < 1e-9, sizes
            runs += 1
    assert runs >= 3


def test_the_launch_plan_reads_the_weight_in_place() -> None:
    template = _generated_of(_linear())[0]
    plan = generate(template.instantiate(cheap_sizes(template, 1)[0]))
    assert not any(isinstance(s, PredefinedOp) and s.kind == "transpose" for s in plan.steps)
    assert any("w" in k.args and "ldsm_x4(b," in k.source for k in plan.kernels)
    assert not any(b.name.startswith("v") for b in plan.buffers if b.shape == (128, 64))


def test_what_is_not_folded() -> None:
    g = Graph()
    x = g.input((64, 16), name="x")
    w = g.input((64, 32), name="w")
    wt = g.transpose(w)
    g.output(g.matmul(wt, x), "y")  # an A operand: copied
    g.output(g.add(wt, 1.0), "z")  # read by an element-wise op too
    kg = pipeline.predefined_plan(g)
    assert foldable(kg) == {}
    assert fold_transposes(kg) is kg
    parts = partition(g)
    assert [p.searchable for p in parts if p.graph.nodes[-1].kind is OpKind.MATMUL] == [False]


def test_folded_hand_plans_emulate_like_the_interpreter() -> None:
    """The rmsnorm_linear hand plans (1-D and 2-D grids, split-K with a combine) reading a linear
    weight [out, in] through a transpose: the same plans test_fold_gpu runs on the GPU."""
    runs = 0
    for template in linear_templates(8, 128):
        assert foldable(template) == {"W": "Wl"}
        for sizes in cheap_sizes(template, 3):
            assert emulate_error(template.instantiate(sizes)) < 1e-9, sizes
            runs += 1
    assert runs >= 9
    g = linear_graph(8, 128)  # the program these plans implement (the helper is right)
    ins = {t.name: np.random.default_rng(1).standard_normal(t.shape) for t in g.inputs}
    kg = template.instantiate(cheap_sizes(template, 1)[0])
    assert np.allclose(interpreter.run(kg, ins)["O"], g.evaluate(ins)["O"], rtol=1e-10, atol=1e-10)


def test_the_emulator_catches_a_wrong_transposed_operand_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """Mutation: the B^T lanes' rows assembled as a row-major B tile: the emulation must disagree."""
    from prism.codegen import emulate_mma

    template = linear_templates(8, 128)[0]
    kg = template.instantiate(cheap_sizes(template, 1)[0])
    assert emulate_error(kg) < 1e-9
    monkeypatch.setattr(emulate_mma, "_b_matrix", lambda b, transposed: np.concatenate(
        [b[:, :, :16, :], b[:, :, 16:, :]], axis=3))
    assert emulate_error(kg) > 1e-2


def test_a_norm_feeding_three_projections_becomes_three_kernels_reading_their_weights() -> None:
    """The attention input block of a decoder layer: y = w * rms_norm(x); q, k, v = y @ wq^T, y @ wk^T,
    y @ wv^T. The norm is recomputed in each projection's part, each weight's transpose joins its
    part and folds: a stitched plan of three custom kernels and nothing else, emulated like the
    interpreter, right."""
    g = Graph()
    x = g.input((2, 128), name="x")
    nw = g.input((1, 128), name="nw")
    y = g.mul(nw, g.mul(x, g.rsqrt(g.add(g.mean(g.square(x), -1), 1e-5))))
    for name, rows in (("q", 128), ("k", 32), ("v", 32)):
        g.output(g.matmul(y, g.transpose(g.input((rows, 128), name=f"w{name}"))), name)
    out = pipeline.search_and_verify(g, program="qkv", cache=False, progress=False)
    merged = [p for p in out.parts if not p.part.heavy]
    assert len(merged) == 3 and all(len(p.part.nodes) == 9 and len(p.part.transposes) == 1 for p in merged)
    stitched = out.of(pipeline.PlanSource.STITCHED)
    assert stitched
    ins = {t.name: np.random.default_rng(2).standard_normal(t.shape) for t in g.inputs}
    want = g.evaluate(ins)
    fused = 0
    for template in stitched:
        kg = template.instantiate(cheap_sizes(template, 1)[0])
        got = interpreter.run(kg, ins)
        assert all(np.allclose(got[n], want[n], rtol=1e-9, atol=1e-9) for n in want)
        assert emulate_error(kg) < 1e-9
        folded = fold_transposes(kg)
        fused += all(isinstance(k, CustomKernel) for k in folded.kernels) and len(folded.kernels) == 3
    assert fused >= 1


@pytest.mark.parametrize("every", [4, pytest.param(1, marks=pytest.mark.slow)])
def test_batched_keys_are_read_in_place(every: int) -> None:
    """Attention scores q @ k^T with k [b, s, d] as stored (a KV cache): the transpose folds into a
    batched B tile [b, n, k]; emulated like the interpreter at up to 3 cheap sizes per plan, of every
    ``every``-th of the 288 plans (all of them under the slow marker: 72 s on one core)."""
    g = Graph()
    q = g.input((4, 16, 64), name="q")
    k = g.input((4, 32, 64), name="k")
    g.output(g.scale(g.matmul(q, g.transpose(k)), 0.125), "s")
    runs = 0
    for template in _generated_of(g)[::every]:
        for sizes in cheap_sizes(template, 3):
            kg = template.instantiate(sizes)
            assert emulate_error(kg) < 1e-9, sizes
            runs += 1
            folded = fold_transposes(kg)
            assert any(op.transposed for kk in folded.kernels if isinstance(kk, CustomKernel)
                       for op in kk.ops if isinstance(op, Load))
    assert runs >= 3


def test_folded_attention_hand_plans_emulate_like_the_interpreter() -> None:
    """The gqa hand plans (split KV with a combine among them) reading the keys as stored, K [b, s, d]:
    the plans test_fold_gpu runs on the GPU; the unfolded plan computes the program."""
    g = cached_keys_graph(1, 8, 64, 32)
    runs = 0
    for template in cached_keys_templates(workloads.gqa(1, 8, 64, 32)):
        assert foldable(template) == {"Kt": "K"}
        for sizes in cheap_sizes(template, 2):
            kg = template.instantiate(sizes)
            assert emulate_error(kg) < 1e-9, sizes
            ins = {t.name: np.random.default_rng(runs).standard_normal(t.shape) * 0.5 for t in g.inputs}
            assert np.allclose(interpreter.run(kg, ins)["O"], g.evaluate(ins)["O"], rtol=1e-9, atol=1e-9)
            runs += 1
    assert runs >= 4


def _rendered_b_rows(source: str, mma: int) -> str:
    """The C expression of a lane's B^T ldmatrix address (elements past B) in ``mma_<mma>``."""
    body = source[source.index(f"void mma_{mma}("):]
    line = next(ln for ln in body.splitlines() if "b_addr = smem_u32(B + " in ln)
    return line.split("smem_u32(B + ", 1)[1].rsplit(");", 1)[0]


def test_the_rendered_b_addresses_are_the_emulated_ones() -> None:
    """The renderer's B^T address text, evaluated for every lane and unit (C and Python agree on
    + * << >> & over non-negative ints), equals the emulator's (an unparenthesised row once made
    them differ on the GPU only): padded 3-D tiles of the attention plans, padded 2-D linear tiles."""
    from prism.codegen.arch import arch
    from prism.codegen.emulate_mma import LANES, bt_addresses
    from prism.codegen.lower import lower_graph
    from prism.codegen.render_mma import render_mma

    checked = 0
    templates = [*cached_keys_templates(workloads.gqa(2, 8, 256, 64)), *_generated_of(_linear(k=96, norm=False))]
    for template in templates:
        for sizes in cheap_sizes(template, 2):
            gl = lower_graph(template.instantiate(sizes), arch("sm_80"))
            for low in (x for x in gl.kernels if x is not None):
                for i, plan in low.mmas.items():
                    b = low.operands[plan.b]
                    if not b.transposed or b.swizzle:
                        continue
                    expr = _rendered_b_rows(render_mma(low, i), i)
                    for bt in range(plan.batch if plan.b_bstride else 1):
                        for np_ in range(plan.npairs):
                            want = bt_addresses(plan, b, np.array([bt]), np.array([np_]), 0)[0, 0]
                            got = [eval(expr, {"bt": bt, "np": np_, "lane": int(lane)}) for lane in LANES]
                            assert got == list(want), (sizes, expr)
                    checked += 1
    assert checked >= 4


def test_parts_of_one_structure_share_one_search() -> None:
    """The k and v projections (each with the norm recomputed) are one structure under different
    tensor names: searched under names by position, the second is a cache hit, renamed back to its
    own tensors; every stitched plan is still the program."""
    g = Graph()
    x = g.input((2, 128), name="x")
    y = g.mul(x, g.rsqrt(g.add(g.mean(g.square(x), -1), 1e-5)))
    for name in ("k", "v"):
        g.output(g.matmul(y, g.transpose(g.input((32, 128), name=f"w{name}"))), name)
    out = pipeline.search_and_verify(g, program="kv", progress=False)
    merged = [p for p in out.parts if not p.part.heavy]
    assert len(merged) == 2 and [p.outcome.cached for p in merged] == [False, True]
    for p in merged:
        names = {t.name for t in p.part.graph.inputs} | {t.name for t in p.part.graph.outputs}
        for kg in p.outcome.templates:
            assert {t.name for t in (*kg.inputs, *kg.outputs)} == names
    ins = {t.name: np.random.default_rng(3).standard_normal(t.shape) for t in g.inputs}
    want = g.evaluate(ins)
    for template in out.of(pipeline.PlanSource.STITCHED):
        got = interpreter.run(template.instantiate(cheap_sizes(template, 1)[0]), ins)
        assert all(np.allclose(got[n], want[n], rtol=1e-9, atol=1e-9) for n in want)
