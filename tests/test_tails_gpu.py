"""Padded tails on the GPU (``prism.codegen.tails``): the hand-built decode-attention plans of
``test_tails`` at 1,000 and 999 cached positions, generated, compiled and run against the float64
program, every legal padded size the tuner's draw gives (loop and split over the cache). The 999
case copies Kt's rows element by element (its rows are not 4-byte aligned) and zero-fills them too."""

from __future__ import annotations

import pytest

from prism.codegen import generate
from prism.codegen.resources import resources
from prism.codegen.sizes import drawn_sizes
from prism.codegen.tails import padded_plans
from prism.loopsplit import split_loop
from prism.reference import relative_error
from tests.test_tails import _attention, _inputs, _loop_plan, _scores, _scores_graph


@pytest.mark.gpu
@pytest.mark.parametrize("kv", [1000, 999])
@pytest.mark.parametrize("split", [False, True])
def test_padded_decode_attention_runs_on_the_gpu(kv: int, split: bool) -> None:
    torch = pytest.importorskip("torch")
    from prism.runtime import compile_plan

    g = _attention(4, kv, 128)
    plan = _loop_plan(g)
    if split:
        plan = split_loop(g, plan, "decode_attention")
        assert plan is not None
    x = _inputs(g, 1)
    want = g.evaluate(x)["O"]
    args = [torch.from_numpy(x[t.name]).to(torch.float16).cuda() for t in g.inputs]
    ran = 0
    for v in padded_plans(plan):
        for sizes in drawn_sizes(v, "sm_80", resources, 3):
            fn = compile_plan(generate(v.instantiate(sizes), arch="sm_90"))
            for _ in range(2):
                got = fn(*args)
                torch.cuda.synchronize()
                err = relative_error(got.double().cpu().numpy(), want)
                assert err < 2e-2, (v.tail, sizes, err)
            ran += 1
    assert ran >= 2


@pytest.mark.gpu
def test_an_output_along_the_tail_runs_on_the_gpu() -> None:
    torch = pytest.importorskip("torch")
    from prism.runtime import compile_plan

    g = _scores_graph(1000, False)
    x = _inputs(g, 2)
    want = g.evaluate(x)["S"]
    args = [torch.from_numpy(x[t.name]).to(torch.float16).cuda() for t in g.inputs]
    ran = 0
    for v in padded_plans(_scores(g, False)):
        for sizes in drawn_sizes(v, "sm_80", resources, 3):
            got = compile_plan(generate(v.instantiate(sizes), arch="sm_90"))(*args)
            torch.cuda.synchronize()
            assert tuple(got.shape) == (2, 1, 1000)
            assert relative_error(got.double().cpu().numpy(), want) < 2e-2, (v.tail, sizes)
            ran += 1
    assert ran >= 2


@pytest.mark.gpu
@pytest.mark.parametrize("kv", [1000, 40])
def test_an_intermediate_along_the_tail_runs_on_the_gpu(kv: int) -> None:
    """Scores passed from one kernel to the next along the padded dim (as stitched parts of an attention
    pass them): stored to the valid elements, read back through masked copies; every size drawn."""
    torch = pytest.importorskip("torch")
    from prism.ir import Tail
    from prism.runtime import compile_plan

    g = _scores_graph(kv, True)
    x = {k: v / 4 for k, v in _inputs(g, 3).items()}  # scores of std 1.4: exp of _inputs' (std 23) overflows float16
    want = g.evaluate(x)["S"]
    args = [torch.from_numpy(x[t.name]).to(torch.float16).cuda() for t in g.inputs]
    padded = _scores(g, True).padded(Tail(1024 if kv == 1000 else 48, kv))
    ran = 0
    for sizes in drawn_sizes(padded, "sm_80", resources, 4):
        got = compile_plan(generate(padded.instantiate(sizes), arch="sm_90"))(*args)
        torch.cuda.synchronize()
        assert tuple(got.shape) == (2, 1, kv)
        assert relative_error(got.double().cpu().numpy(), want) < 2e-2, sizes
        ran += 1
    assert ran >= 2


@pytest.mark.gpu
@pytest.mark.parametrize("f", [60, 1000])
def test_a_split_gemv_over_a_padded_output_row_runs_on_the_gpu(f: int) -> None:
    """A router's (60) or a classifier's (1,000) rows: the GEMV split over its contraction, each split
    block's partial a padded copy of the row (``tails.padded_chunks``), the combine's softmax over the
    valid elements; every drawn size with more than one split, twice (the fused arrival counters reset),
    against float64."""
    torch = pytest.importorskip("torch")
    from prism.codegen.tails import padded_chunks
    from prism.runtime import compile_plan
    from tests.test_tails import _gemv_softmax_plan, _router

    g = _router(8, 512, f)
    split = split_loop(g, _gemv_softmax_plan(g), "router")
    assert split is not None
    x = {k: v / 8 for k, v in _inputs(g, 4).items()}
    want = g.evaluate(x)["O"]
    args = [torch.from_numpy(x[t.name]).to(torch.float16).cuda() for t in g.inputs]
    ran = 0
    for v in padded_plans(split, intermediates=True):
        for sizes in drawn_sizes(v, "sm_80", resources, 6):
            concrete = v.instantiate(sizes)
            if not padded_chunks(concrete):
                continue
            fn = compile_plan(generate(concrete, arch="sm_90"))
            for _ in range(2):
                got = fn(*args)
                torch.cuda.synchronize()
                assert tuple(got.shape) == (8, f)
                err = relative_error(got.double().cpu().numpy(), want)
                assert err < 2e-2, (v.tail, sizes, err)
            ran += 1
    assert ran >= 1
