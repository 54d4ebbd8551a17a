"""Predefined plans, partitioning and stitching (CPU): every plan checked in the interpreter."""

from __future__ import annotations

import numpy as np
import pytest

from bench.zoo import ZOO, zoo_graph
from prism import interpreter, pipeline
from prism.codegen.sizes import legal_sizes
from prism.graph import Graph, OpKind
from prism.ir import CustomKernel, KernelGraph, PredefinedKernel
from prism.partition import partition, predefined_plan, stitch
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


@pytest.mark.parametrize("name", list(ZOO))
def test_partition_is_an_ordered_cover_of_the_program(name: str) -> None:
    g = zoo_graph(name)
    parts = partition(g, max_ops=3)
    ops = [i for i, n in enumerate(g.nodes) if n.kind is not OpKind.INPUT]
    assert sorted(i for p in parts for i in p.nodes) == ops  # every op in exactly one part
    done = set(g.input_indices)
    for p in parts:
        assert len(p.nodes) <= 3 or p.heavy
        assert all(a in done or a in p.nodes for i in p.nodes for a in g.nodes[i].args), "reads a later part"
        done.update(p.nodes)
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


def test_predefined_ops_hand_on_the_programs_dtype_generated_kernels_float32() -> None:
    from prism import codegen

    g = zoo_graph("norm_matmul_silu", "small")
    plan = codegen.generate(predefined_plan(g), arch="sm_80")
    assert plan.buffers and {b.dtype for b in plan.buffers} == {"float16"}
    parts = partition(g)  # rms_norm | matmul | silu
    norm = pipeline.search_and_verify(parts[0].graph, progress=False, partitioned=False).of(pipeline.PlanSource.SEARCHED)
    mixed = stitch(g, parts, [norm[0], *(predefined_plan(p.graph) for p in parts[1:])], "nms")
    assert run_plan(g, mixed) < 1e-9
    sizes = legal_sizes(mixed, arch="sm_80", resources=None, limit=1)[0]
    lp = codegen.generate(mixed.instantiate(sizes), arch="sm_80")
    written_by_custom = {s.tensor for k in mixed.kernels if isinstance(k, CustomKernel) for s in k.saves}
    assert lp.buffers and written_by_custom
    for b in lp.buffers:
        assert b.dtype == ("float32" if b.name in written_by_custom else "float16"), b


@pytest.mark.parametrize("name", [n for n in ZOO if ZOO[n].family in ("elementwise", "reduction")])
def test_rowwise_plan_of_matmul_free_programs_is_right_and_proven(name: str) -> None:
    from prism.rowwise import row_plan

    g = zoo_graph(name)
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
    assert "the whole block on each" in src and "__syncthreads" in src
    if nvcc.nvcc_path() is None:
        pytest.skip("nvcc is not on the PATH")
    assert len(nvcc.compile_check([(plan.kernels[0].entry, src)], arch="sm_80")) == 1
