"""Predefined plans, partitioning and stitching (CPU): every plan checked in the interpreter."""

from __future__ import annotations

import random

import numpy as np
import pytest

from bench.zoo import ZOO, zoo_graph
from prism import interpreter, pipeline
from prism.codegen.fold import fold_transposes
from prism.codegen.sizes import legal_sizes
from prism.graph import Graph, OpKind
from prism.ir import CustomKernel, KernelGraph, Load, PredefinedKernel
from prism.partition import MAX_PART_OPS, Part, partition, predefined_plan, stitch
from prism.rows import searched_graph
from prism.verify import verify_all


def _inputs(g: Graph, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {t.name: rng.standard_normal(t.shape) for t in g.inputs}


def run_plan(g: Graph, kg: KernelGraph, seed: int = 0) -> float:
    """Worst relative error of ``kg`` (at its first legal sizes) against the float64 reference."""
    sizes = legal_sizes(kg, arch="sm_90", resources=None, limit=1)
    assert sizes, f"no legal sizes for {kg.program}"
    ins = _inputs(g, seed)
    ref = g.evaluate(ins)
    out = interpreter.run(kg.instantiate(sizes[0]), ins)
    return max(float(np.linalg.norm(out[k] - ref[k]) / max(np.linalg.norm(ref[k]), 1e-300)) for k in ref)


@pytest.mark.parametrize("name", list(ZOO))
def test_predefined_plan_of_every_zoo_program_is_right_and_proven(name: str) -> None:
    g = zoo_graph(name)
    kg = predefined_plan(g, name)
    assert all(isinstance(k, PredefinedKernel) for k in kg.kernels)
    assert run_plan(g, kg) < 1e-12
    assert verify_all(g, [kg])[0].proven


def _assert_ordered_cover(g: Graph, parts: list[Part], label: object) -> list[int]:
    """Every op of ``g`` is in a part and no part reads a later one; the ops."""
    ops = [i for i, n in enumerate(g.nodes) if n.kind is not OpKind.INPUT]
    assert sorted({i for p in parts for i in p.nodes}) == ops, label  # every op in a part
    done = set(g.input_indices)
    for p in parts:
        assert all(a in done or a in p.nodes for i in p.nodes for a in g.nodes[i].args), ("reads a later part", label)
        done.update(p.nodes)
    return ops


@pytest.mark.parametrize("name", list(ZOO))
def test_partition_is_an_ordered_cover_of_the_program(name: str) -> None:
    g = zoo_graph(name)
    parts = partition(g, max_ops=3)
    ops = _assert_ordered_cover(g, parts, name)
    for i in ops:  # in several: a prologue recomputed by each matmul it feeds
        holders = [p for p in parts if i in p.nodes]
        assert len(holders) == 1 or (g.nodes[i].kind is not OpKind.MATMUL and all(
            sum(g.nodes[j].kind is OpKind.MATMUL for j in p.nodes) == 1 for p in holders))
    for p in parts:
        matmuls = sum(g.nodes[i].kind is OpKind.MATMUL for i in p.nodes)
        # a chunk feeding a weight matmul may hold one op more, and the matmul may take it
        assert p.heavy or (len(p.nodes) <= 4 + matmuls and matmuls <= 1)
    # stitching the parts' predefined plans gives the program back
    st = stitch(g, parts, [predefined_plan(p.graph) for p in parts], name)
    assert run_plan(g, st) < 1e-12


def _long_program(n: int = 4, d: int = 8) -> Graph:
    """Twice the whole-program search bound: a gated chain of 13 identical blocks (26 ops)."""
    g = Graph()
    x = g.input((n, d), name="X")
    y = g.input((n, d), name="v3")  # a user name that looks like an internal one
    h = x
    for _ in range(13):
        h = g.mul(g.silu(h), y)
    g.output(h, name="O")
    return g


def test_program_twice_the_bound_is_split_searched_in_parts_and_stitched() -> None:
    g = _long_program()
    assert pipeline.primitive_ops(g) >= 2 * pipeline.WHOLE_PROGRAM_OPS
    out = pipeline.search_and_verify(g, program="long", progress=False, part_ops=4)
    assert out.stats["whole_program_searched"] is False
    assert len(out.parts) >= 3
    for po in out.parts:  # each part was searched on its own and has generated-kernel plans
        assert any(isinstance(k, CustomKernel) for t in po.outcome.templates for k in t.kernels), po.part.index
    stitched = out.of(pipeline.PlanSource.STITCHED)
    assert stitched and any(isinstance(k, CustomKernel) for k in stitched[0].kernels)
    for kg in out.templates:
        assert run_plan(g, kg) < 1e-9, kg.program
    # a repeated block is searched once: the second search of this program hits every part's cache
    again = pipeline.search_and_verify(g, program="long", progress=False, part_ops=4)
    assert all(po.outcome.cached for po in again.parts if po.part.searchable)


def test_stitch_keeps_parts_apart() -> None:
    g = zoo_graph("norm_matmul_silu")
    parts = partition(g)
    plans = [predefined_plan(p.graph) for p in parts]
    st = stitch(g, parts, plans, "x")
    names = [k.name for k in st.kernels]
    assert len(names) == len(set(names))
    with pytest.raises(Exception, match="plans for"):
        stitch(g, parts, plans[:-1], "x")


def test_tensors_only_predefined_ops_read_are_in_the_programs_dtype() -> None:
    """A generated kernel hands on float32 to generated kernels (tests/test_codegen.py: split partials),
    but what only predefined ops read (the vendor GEMM's operand) it writes in the program's dtype, as
    PyTorch would: no cast before the GEMM."""
    from prism import codegen

    g = zoo_graph("norm_matmul_silu", "small")
    plan = codegen.generate(predefined_plan(g), arch="sm_80")
    assert plan.buffers and {b.dtype for b in plan.buffers} == {"float16"}
    parts = partition(g, prologues=False)  # rms_norm | matmul | silu
    norm = pipeline.search_and_verify(parts[0].graph, progress=False, partitioned=False).of(pipeline.PlanSource.SEARCHED)
    mixed = stitch(g, parts, [norm[0], *(predefined_plan(p.graph) for p in parts[1:])], "nms")
    assert run_plan(g, mixed) < 1e-9
    sizes = legal_sizes(mixed, arch="sm_80", resources=None, limit=1)[0]
    lp = codegen.generate(mixed.instantiate(sizes), arch="sm_80")
    written_by_custom = {s.tensor for k in mixed.kernels if isinstance(k, CustomKernel) for s in k.saves}
    assert lp.buffers and written_by_custom & {b.name for b in lp.buffers}
    assert {b.dtype for b in lp.buffers} == {"float16"}


@pytest.mark.parametrize("name", [n for n in ZOO if ZOO[n].family in ("elementwise", "reduction")])
def test_rowwise_plan_of_matmul_free_programs_is_right_and_proven(name: str) -> None:
    from prism.rowwise import row_plan

    g = searched_graph(zoo_graph(name))  # what superoptimize searches (an output transpose peeled)
    kg = row_plan(g, name)
    assert kg is not None and len(kg.kernels) == 1
    assert run_plan(g, kg) < 1e-12
    assert verify_all(g, [kg])[0].proven


def test_rowwise_plan_is_a_searched_candidate_even_when_the_search_finds_nothing() -> None:
    from prism.search.config import SearchConfig

    g = zoo_graph("layer_norm")  # the search needs more ops than this bound allows
    out = pipeline.search_and_verify(g, progress=False, partitioned=False,
                                     config=SearchConfig(loop_one=True, max_block_ops=4, time_budget_s=5))
    assert out.stats["rowwise_plan_added"] is True
    assert len(out.of(pipeline.PlanSource.SEARCHED)) == 1 and run_plan(g, out.templates[0]) < 1e-12


def test_rowwise_norm_reduces_with_the_whole_block_and_compiles() -> None:
    from prism import codegen
    from prism.codegen import nvcc
    from prism.library import library_source
    from prism.rowwise import row_plan

    g = zoo_graph("layer_norm", "decode")
    kg = row_plan(g, "layer_norm")
    assert kg is not None
    plan = codegen.generate(kg.instantiate({s: 1 for s in kg.symbols} | {"k0_x": g.inputs[0].shape[0]}), arch="sm_80")
    src = library_source(plan)
    assert "the whole block on" in src and "__syncthreads" in src
    if nvcc.nvcc_path() is None:
        pytest.skip("nvcc is not on the PATH")
    assert len(nvcc.compile_check([(plan.kernels[0].entry, src)], arch="sm_80")) == 1


def test_a_linear_layer_takes_its_norm_into_its_part() -> None:
    """rms_norm(x) @ w^T: the norm's chunk joins the matmul (one searched part, one kernel possible);
    the transpose of the weight is a part of its own that code generation folds away."""
    g = Graph()
    x = g.input((2, 64), name="x")
    w = g.input((32, 64), name="w")
    h = g.mul(x, g.rsqrt(g.add(g.mean(g.square(x), -1), 1e-5)))
    g.output(g.matmul(h, g.transpose(w)), "y")
    parts = partition(g)
    # the transpose; the norm's 6 ops and the matmul
    assert [(p.heavy, p.searchable, len(p.nodes)) for p in parts] == [(True, False, 1), (False, True, 7)]
    assert partition(g, prologues=False)[-1].heavy  # without: the matmul alone
    out = pipeline.search_and_verify(g, program="linear", cache=False, progress=False)
    merged = out.parts[1].outcome.templates
    assert any(sum(isinstance(k, CustomKernel) for k in kg.kernels) == 1 for kg in merged)  # norm + matmul fused
    for kg in out.templates:
        assert run_plan(g, kg) < 1e-12


def test_a_matmul_reading_a_transpose_it_cannot_fold_gets_the_vendor_gemm() -> None:
    """A transpose of a computed value (or an A operand) would be copied for a generated kernel on
    every call; the vendor GEMM reads it as a view, so that matmul is not searched. The program with the
    transpose moved onto its input (``prism.transposes``: ``(k * 0.5)^T = k^T * 0.5``) adds plans that read
    ``k`` in place: folded, they have no transpose left, and no plan's generated kernel reads a copy."""
    g = Graph()
    x = g.input((16, 64), name="x")
    k = g.input((32, 64), name="k")
    kk = g.mul(k, 0.5)
    g.output(g.matmul(x, g.transpose(kk)), "y")
    parts = partition(g)
    mm = [p for p in parts if any(p.graph.nodes[i].kind is OpKind.MATMUL for i in range(len(p.graph.nodes)))]
    assert len(mm) == 1 and mm[0].reads_transpose and not mm[0].searchable
    out = pipeline.search_and_verify(g, program="kt", cache=False, progress=False)
    in_place = 0
    for kg in out.templates:
        assert run_plan(g, kg) < 1e-12
        kg = fold_transposes(kg)
        transposed = {k.output for k in kg.kernels if isinstance(k, PredefinedKernel) and k.kind is OpKind.TRANSPOSE}
        read = {op.tensor for k in kg.kernels if isinstance(k, CustomKernel) for op in k.ops if isinstance(op, Load)}
        assert not transposed & read  # a transpose left is read by the vendor GEMM alone
        in_place += not transposed and "k" in read
    assert in_place  # the moved program's plans read k where it lies


def test_weight_transposes_join_the_parts_that_read_them() -> None:
    """rms_norm(x) feeding x @ wq^T and x @ wk^T: each weight's transpose joins its projection's part
    (with the norm as prologue), the search sees the part without it (the structure other parts share),
    and every plan of the part reads the weight through a transpose that code generation folds into
    the matmul's loads, so the part is tuned in the layout the stitched plan runs."""
    from prism.codegen.fold import fold_transposes

    g = Graph()
    x = g.input((2, 64), name="x")
    wq, wk = g.input((32, 64), name="wq"), g.input((16, 64), name="wk")
    h = g.mul(x, g.rsqrt(g.add(g.mean(g.square(x), -1), 1e-5)))
    g.output(g.matmul(h, g.transpose(wq)), "q")
    g.output(g.matmul(h, g.transpose(wk)), "k")
    parts = partition(g)
    assert len(parts) == 2 and all(len(p.transposes) == 1 and p.searchable for p in parts)
    for p in parts:
        assert p.inner is not None and not any(n.kind is OpKind.TRANSPOSE for n in p.inner.nodes)
        assert {t.name for t in p.graph.inputs} & {"wq", "wk"} and len(p.graph.nodes) == len(p.inner.nodes) + 1
    assert not any(p.transposes for p in partition(g, prologues=False))
    out = pipeline.search_and_verify(g, program="qk", cache=False, progress=False)
    folded = 0
    for po in out.parts:
        for kg in po.outcome.templates:
            assert run_plan(po.part.graph, kg) < 1e-12
            customs = [k for k in kg.kernels if isinstance(k, CustomKernel)]
            if customs and all(isinstance(k, CustomKernel) for k in kg.kernels[1:]):
                f = fold_transposes(kg)
                folded += not any(isinstance(k, PredefinedKernel) and k.kind is OpKind.TRANSPOSE for k in f.kernels)
    assert folded > 0  # generated plans read the weight in place
    for kg in out.templates:
        assert run_plan(g, kg) < 1e-12


@pytest.mark.parametrize("name", [n for n in ZOO if ZOO[n].family not in ("elementwise", "reduction")])
def test_row_vendor_plan_is_right_and_proven(name: str) -> None:
    """Heavy ops as vendor kernels, each run of two or more other ops as one row-wise kernel (what
    torch.compile's default makes of a norm feeding a linear layer): right on every zoo program with
    a matmul where such a run exists, and proven: whole, or, for a program too large to search whole
    (whose whole proof the prover does not reach), run by run, as the pipeline proves it."""
    from prism.rowwise import row_vendor_plan

    g = zoo_graph(name)
    by_runs = pipeline.primitive_ops(g) > pipeline.WHOLE_PROGRAM_OPS
    kg = row_vendor_plan(g, name, prove=(lambda part, k: verify_all(part, [k])[0].proven) if by_runs else None)
    if kg is None:
        return  # no run of two or more ops with a row-wise kernel: the predefined plan is this plan
    assert any(isinstance(k, CustomKernel) for k in kg.kernels)
    matmuls = sum(n.kind is OpKind.MATMUL for n in g.nodes)
    assert sum(isinstance(k, PredefinedKernel) and k.kind is OpKind.MATMUL for k in kg.kernels) == matmuls
    assert run_plan(g, kg) < 1e-12
    assert by_runs or verify_all(g, [kg])[0].proven


def test_a_norm_feeding_a_linear_layer_gets_one_norm_kernel_and_the_vendor_gemm() -> None:
    """rms_norm(x) @ w^T searched as one part: among its verified plans, the fused norm kernel then
    the vendor GEMM reading the weight's transpose as a view (the search's own all-vendor plan runs
    the norm as six kernels)."""
    g = Graph()
    x = g.input((4, 64), name="x")
    w = g.input((32, 64), name="w")
    h = g.mul(x, g.rsqrt(g.add(g.mean(g.square(x), -1), 1e-5)))
    g.output(g.matmul(h, g.transpose(w)), "y")
    out = pipeline.search_and_verify(g, program="linear", cache=False, progress=False, partitioned=False)
    shapes = {tuple(type(k).__name__ for k in kg.kernels) for kg in out.templates}
    assert any(s.count("CustomKernel") == 1 and s.count("PredefinedKernel") == 2 for s in shapes), shapes
    for kg in out.templates:
        assert run_plan(g, kg) < 1e-12
    import random

    from prism.tune.draw import _round_robin, structure_class

    mixed = next(t for t, kg in enumerate(out.templates) if structure_class(kg)[0] == 1 and structure_class(kg)[2])
    first_round = len({structure_class(kg) for kg in out.templates})
    assert mixed in _round_robin(out.templates, random.Random(0))[:first_round]  # the tuner draws it first
    from prism import codegen
    from prism.codegen import nvcc
    from prism.library import library_source
    from prism.rowwise import row_vendor_plan

    kg = row_vendor_plan(g, "linear")
    assert kg is not None
    plan = codegen.generate(kg.instantiate({s: 1 for s in kg.symbols} | {"p0_k0_x": 4}), arch="sm_80")
    assert [type(st).__name__ for st in plan.steps].count("PredefinedOp") == 2  # the transpose (a view) and the GEMM
    if nvcc.nvcc_path() is None:
        pytest.skip("nvcc is not on the PATH")
    assert len(nvcc.compile_check([(plan.kernels[0].entry, library_source(plan))], arch="sm_80")) == 1


def _mlp_block() -> Graph:
    """A residual add, an RMS norm, a gated MLP and the second residual add: 16 primitive ops, more
    than a whole-program search takes by default."""
    g = Graph()
    x, r = g.input((4, 64), name="x"), g.input((4, 64), name="r")
    wg, wu, wd = g.input((96, 64), name="wg"), g.input((96, 64), name="wu"), g.input((64, 96), name="wd")
    h = g.add(x, r)
    n = g.mul(h, g.rsqrt(g.add(g.mean(g.square(h), -1), 1e-5)))
    y = g.mul(g.silu(g.matmul(n, g.transpose(wg))), g.matmul(n, g.transpose(wu)))
    g.output(g.add(h, g.matmul(y, g.transpose(wd))), "o")
    return g


def test_a_program_too_large_to_search_whole_gets_the_row_vendor_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    """Vendor GEMMs and one row-wise kernel per run between them, the residual add and the norm run
    once (the stitched plans repeat the norm in the gate and the up part): each row-wise kernel proven
    on its own run, the plan right, cached under its own key (read back without the prover), and one
    of superoptimize's candidates; without the prover or the cache there is none, and no error."""
    import sys

    from prism.errors import VerificationError
    from prism.ir import ReduceOp
    from prism.rowwise import row_vendor_plan
    from prism.tune.backends import InterpreterBackend

    g = _mlp_block()
    assert pipeline.primitive_ops(g) > pipeline.WHOLE_PROGRAM_OPS
    out = pipeline.search_and_verify(g, program="mlp", progress=False)
    (plan,) = out.of(pipeline.PlanSource.CONSTRUCTED)
    custom = [k for k in plan.kernels if isinstance(k, CustomKernel)]
    assert len(custom) == 2 and sum(isinstance(op, ReduceOp) for k in custom for op in k.ops) == 1
    assert run_plan(g, plan) < 1e-12
    assert row_vendor_plan(g, "mlp", prove=lambda part, kg: False) is None  # nothing proven: no plan
    with monkeypatch.context() as m:  # a run the prover cannot take is not proven, not an error
        m.setattr("prism.verify.verify_all", lambda *a, **k: (_ for _ in ()).throw(VerificationError("ill-typed")))
        refused = pipeline._constructed(g, "mlp", cache=False)
    assert refused == ()

    with monkeypatch.context() as m:
        m.setattr("prism.verify.verify_all", lambda *a, **k: (_ for _ in ()).throw(AssertionError("proved")))
        again = pipeline.search_and_verify(g, program="mlp", progress=False)
    assert again.of(pipeline.PlanSource.CONSTRUCTED) == (plan,)  # from the cache

    seen: list[list[KernelGraph]] = []
    real = pipeline.tune

    def spy(graph: Graph, templates: list[KernelGraph], **k):  # type: ignore[no-untyped-def]
        seen.append(list(templates))
        return real(graph, templates, **k)

    with monkeypatch.context() as m:
        m.setattr(pipeline, "tune", spy)
        res = pipeline.superoptimize(g, samples=3, backend=InterpreterBackend(lambda kg: 1.0), progress=False)
    assert res.summary["rel_err"] < 1e-9
    assert any(t.kernels == plan.kernels for t in seen[-1])  # among the final choice's candidates

    pipeline.search_cache().path(f"{g.structure_key()}{pipeline.CONSTRUCTED_KEY}").unlink()
    monkeypatch.setitem(sys.modules, "egglog", None)  # a GPU image: no prover (the parts' plans are cached)
    bare = pipeline.search_and_verify(g, program="mlp", progress=False)
    assert bare.of(pipeline.PlanSource.CONSTRUCTED) == () and bare.of(pipeline.PlanSource.STITCHED)


def _kinds(g: Graph, nodes: tuple[int, ...]) -> list[str]:
    return [g.nodes[i].kind.value for i in nodes]


def test_an_activation_of_projections_is_their_epilogue_not_the_next_matmuls_prologue() -> None:
    """silu(x @ W1) @ W2: the activation runs once on the first projection's output (one part) and the
    down projection is a plain matmul; a gate of two projections takes both; a norm before them then
    runs as a part of its own; a residual (another input) after a projection is no epilogue, so the
    norm stays the projection's prologue."""
    g = zoo_graph("mlp_silu")
    assert [(p.heavy, _kinds(g, p.nodes)) for p in partition(g)] == [
        (False, ["matmul", "unary"]), (True, ["matmul"])]
    g = zoo_graph("swiglu_mlp")
    assert [(p.heavy, _kinds(g, p.nodes)) for p in partition(g)] == [
        (False, ["matmul", "unary", "matmul", "binary"]), (True, ["matmul"])]
    g = zoo_graph("llama_mlp_block")
    kinds = [_kinds(g, p.nodes) for p in partition(g)]
    assert ["unary", "reduce", "unary", "unary", "unary", "binary", "binary"] in kinds  # the weighted norm alone
    assert ["transpose", "matmul", "unary", "transpose", "matmul", "binary"] in kinds  # gate, up and silu * up
    g = zoo_graph("norm_matmul_residual")
    norm = ["unary", "reduce", "unary", "unary", "unary", "binary"]
    assert [_kinds(g, p.nodes) for p in partition(g)] == [[*norm, "matmul"], ["binary"]]
    g = zoo_graph("swiglu_mlp")  # 4 ops do not fit parts of 3: no epilogue, the gate's matmuls stay apart
    assert all(_kinds(g, p.nodes).count("matmul") <= 1 for p in partition(g, max_ops=3))


def test_epilogue_parts_stitch_to_the_program() -> None:
    """Every plan of mlp_silu, its stitched plans of the epilogue part and the plain matmul among them,
    computes the program (interpreter, float64)."""
    g = zoo_graph("mlp_silu")
    out = pipeline.search_and_verify(g, program="mlp_silu", cache=False, progress=False)
    assert [len(po.part.nodes) for po in out.parts] == [2, 1]
    assert out.of(pipeline.PlanSource.STITCHED)
    for kg in out.templates:
        assert run_plan(g, kg) < 1e-9, kg.program


def test_a_bias_after_a_projection_is_its_epilogue_where_nothing_would_be_its_prologue() -> None:
    """gelu(x @ W1 + b1) @ W2 + b2: each bias add and activation runs after its projection (two parts,
    where the bias add and activation had been the next projection's prologue and b2 a part of its
    own); the residual after a decode Llama block's down projection joins it; a norm of an input before
    a projection stays its prologue, the residual after it a part of its own."""
    for name in ("bert_mlp", "relu_mlp_bias"):
        g = zoo_graph(name)
        assert [_kinds(g, p.nodes) for p in partition(g)] == [["matmul", "binary", "unary"], ["matmul", "binary"]]
    g = zoo_graph("llama_mlp_block")
    assert ["transpose", "matmul", "binary"] in [_kinds(g, p.nodes) for p in partition(g)]
    g = zoo_graph("norm_matmul_residual")
    assert [_kinds(g, p.nodes)[-1] for p in partition(g)] == ["matmul", "binary"]


def test_a_part_with_a_bias_gets_its_one_kernel_epilogue_plans() -> None:
    """The parts of bert_mlp have no searched one-kernel plan of their own (the bias is read after the
    loop); their epilogue plans and split plans of those are among the part's plans, and every plan of
    the program, stitched ones included, computes it (interpreter, float64)."""
    g = zoo_graph("bert_mlp")
    out = pipeline.search_and_verify(g, program="bert_mlp", cache=False, progress=False)
    assert len(out.parts) == 2
    for po in out.parts:
        built = [kg for kg, src in zip(po.outcome.templates, po.outcome.sources, strict=True)
                 if src is pipeline.PlanSource.CONSTRUCTED]
        assert any(len(kg.kernels) == 1 and isinstance(kg.kernels[0], CustomKernel) for kg in built), po.part.index
        assert any(len(kg.kernels) == 2 for kg in built), po.part.index  # a split plan of an epilogue plan
    assert out.of(pipeline.PlanSource.STITCHED)
    for kg in out.templates:
        assert run_plan(g, kg) < 1e-9, kg.program


def _random_mlp(seed: int, n: int = 3, d: int = 8) -> Graph:
    """Chains of projections (some through a weight's transpose), activations, gates, residuals and
    norms over one to four weights, with a second output now and then."""
    rng = random.Random(seed)
    g = Graph()
    vals = [g.input((n, d), name="X")]
    ws = [g.input((d, d), name=f"W{i}") for i in range(rng.randint(1, 4))]
    if rng.random() < 0.3:
        vals.append(g.input((n, d), name="R"))
    for _ in range(rng.randint(2, 9)):
        a, k = rng.choice(vals), rng.random()
        if k < 0.3:
            vals.append(getattr(g, rng.choice(("silu", "neg", "gelu", "sqrt")))(a))
        elif k < 0.5:
            vals.append(getattr(g, rng.choice(("add", "mul")))(a, rng.choice(vals)))
        elif k < 0.8:
            w = rng.choice(ws)
            vals.append(g.matmul(a, g.transpose(w) if rng.random() < 0.3 else w))
        else:
            vals.append(g.rms_norm(a, 1e-5))
    outs = [vals[-1], *([rng.choice(vals[:-1])] if rng.random() < 0.3 and len(vals) > 2 else [])]
    for i, o in enumerate(dict.fromkeys(outs)):
        g.output(o, f"O{i}")
    return g.without_dead_ops()


@pytest.mark.parametrize("chunk", range(4))
def test_partitions_of_random_mlps_cover_them_in_order_and_stitch_back(chunk: int) -> None:
    """The epilogue and prologue merges on 100 random programs each: every op in a part, no part reads a
    later one, at most ``MAX_PART_OPS + 2`` ops a part (a norm chunk of one op more and the projection it
    is the prologue of; the transposes a part folds aside), and the parts'
    predefined plans stitched compute the program."""
    for seed in range(100 * chunk, 100 * chunk + 100):
        g = _random_mlp(seed)
        parts = partition(g)
        _assert_ordered_cover(g, parts, seed)
        assert all(len(p.nodes) - len(p.transposes) <= MAX_PART_OPS + 2 for p in parts), seed
        ins = _inputs(g, seed)
        ref = g.evaluate(ins)
        out = interpreter.run(stitch(g, parts, [predefined_plan(p.graph) for p in parts], "mlp"), ins)
        for k, v in ref.items():
            assert np.allclose(out[k], v, rtol=1e-9, atol=1e-12, equal_nan=True), (seed, k)
