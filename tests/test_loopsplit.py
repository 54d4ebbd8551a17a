"""Split-loop plans (``prism.loopsplit``): a one-kernel plan's loop spread over one more grid dim, its
accumulators saved as partials and combined by a second kernel (rescaled by the partial maxes for
an online softmax). Built from one-kernel plans of attention (unsafe and safe softmax, with a norm)
and of a GEMV; each is proven, computes the program under the interpreter and the emulated lowering,
and wrong variants (no rescaling, a loop-varying Load left whole) are not proven."""

from __future__ import annotations

from dataclasses import replace

import pytest

from prism import interpreter, pipeline, plans, workloads
from prism.codegen import fuse, generate
from prism.codegen.arch import arch
from prism.codegen.emulate import emulate
from prism.codegen.lower import DEFAULT_OPTIONS, lower_graph
from prism.codegen.plan import KernelLaunch
from prism.codegen.sizes import sample_legal_sizes
from prism.graph import Graph
from prism.ir import Accum, CustomKernel, KernelGraph, Load, ReduceOp, Save
from prism.loopsplit import split_loop, split_plans
from prism.ops import Reduce
from prism.reference import relative_error
from prism.verify import verify_all
from tests.test_emulate import inputs_of

_ATTN = {"batch": 2, "group": 4, "kv_len": 128, "head_dim": 16}
CASES = {
    "gqa_safe": (lambda g: plans.safe_gqa_plan(g), _ATTN),
    "qknorm_gqa_safe": (lambda g: plans.safe_gqa_plan(g, qknorm=True), _ATTN),
    "gqa": (lambda g: plans.gqa_plan(g), _ATTN),
    "rmsnorm_linear": (lambda g: plans.rmsnorm_linear_plan(g), {"n": 4, "d": 128}),
}


def _split_sizes(kg: KernelGraph, count: int = 2) -> list[dict[str, int]]:
    """Legal sizes (they lower: mma tiles fit) with at least two splits, up to ``count``."""
    legal = sample_legal_sizes(kg, arch="sm_80", count=32)
    out = [sz for sz in legal if sz[_s(kg)] >= 2][:count]
    assert out, f"{kg.program}: no legal size with a split"
    return out


def _s(kg: KernelGraph) -> str:
    first = kg.kernels[0]
    assert isinstance(first, CustomKernel) and isinstance(first.grid[-1], str)
    return first.grid[-1]


def _split(name: str) -> tuple[Graph, KernelGraph]:
    make, sizes = CASES[name]
    g = workloads.program(name, **sizes)
    kg = split_loop(g, make(g), name)
    assert kg is not None, name
    return g, kg


def _check(g: Graph, concrete: KernelGraph) -> None:
    ins = inputs_of(concrete)
    (out,) = [t.name for t in g.outputs]
    want = g.evaluate(ins)[out]
    assert relative_error(interpreter.run(concrete, ins)[out], want) < 1e-9
    assert relative_error(emulate(concrete, ins)[out], want) < 1e-9


@pytest.mark.parametrize("name", list(CASES))
def test_a_split_plan_is_proven_and_computes_the_program(name: str) -> None:
    g, kg = _split(name)
    split, combine = kg.kernels
    assert isinstance(split, CustomKernel) and isinstance(combine, CustomKernel)
    assert split.grid[-1] == combine.loop == "s" and combine.grid == split.grid[:-1]
    assert verify_all(g, [kg])[0].proven
    for sizes in _split_sizes(kg):
        _check(g, kg.instantiate(sizes))


@pytest.mark.parametrize("name", ["gqa_safe", "qknorm_gqa_safe"])
def test_online_softmax_partials_carry_their_running_max(name: str) -> None:
    """One max partial for the shared shift; the numerator and denominator rescaled by it."""
    _, kg = _split(name)
    split, combine = kg.kernels
    assert isinstance(split, CustomKernel) and isinstance(combine, CustomKernel)
    assert sum(isinstance(op, Accum) and op.fn is Reduce.MAX for op in split.ops) == 1
    rescaled = [op for op in combine.ops if isinstance(op, Accum) and op.rescale is not None]
    assert len(rescaled) == 2 and len({op.rescale for op in rescaled}) == 1
    assert isinstance(combine.ops[rescaled[0].rescale], Load)  # rescale op index is the max partial's Load


def test_a_split_without_rescaling_is_not_proven() -> None:
    g, kg = _split("gqa_safe")
    split, combine = kg.kernels
    assert isinstance(combine, CustomKernel)
    plain = replace(combine, ops=tuple(replace(op, rescale=None) if isinstance(op, Accum) else op for op in combine.ops))
    assert not verify_all(g, [replace(kg, kernels=(split, plain))])[0].proven


def test_a_split_that_leaves_a_loop_varying_load_whole_is_not_proven() -> None:
    """Every split block reading all of V: the partials would sum V's rows s times."""
    g, kg = _split("gqa")
    split, combine = kg.kernels
    assert isinstance(split, CustomKernel)
    ops = tuple(replace(op, imap=(*op.imap[:-1], None)) if isinstance(op, Load) and op.tensor == "V" else op
                for op in split.ops)
    assert not verify_all(g, [replace(kg, kernels=(replace(split, ops=ops), combine))])[0].proven


def test_plans_without_a_loop_or_with_three_grid_dims_are_not_split() -> None:
    make, sizes = CASES["gqa_safe"]
    g = workloads.program("gqa_safe", **sizes)
    k = make(g).kernels[0]
    assert isinstance(k, CustomKernel)
    no_loop = KernelGraph.of(g, "p", [replace(k, loop=1)])
    three = KernelGraph.of(g, "p", [replace(k, grid=("x", "y", "z"), ops=tuple(
        replace(op, imap=(*op.imap, None, None)) if isinstance(op, Load) else op for op in k.ops))])
    assert split_loop(g, no_loop, "p") is None and split_loop(g, three, "p") is None
    assert split_plans(g, [no_loop, three], "p", lambda *_: True) == []


def test_the_pipeline_adds_split_plans_of_the_searched_one_kernel_plans() -> None:
    """A GEMV searched whole: its split-loop plans come with the constructed plans, two custom kernels
    each, proven (the pipeline proves them) and computing the program."""
    g = workloads.rmsnorm_linear(4, 128)
    out = pipeline.search_and_verify(g, program="rmsnorm_linear", progress=False, cache=False)
    split = [t for t, s in zip(out.templates, out.sources, strict=True) if s is pipeline.PlanSource.CONSTRUCTED
             and len(t.kernels) == 2 and all(isinstance(k, CustomKernel) for k in t.kernels)]
    assert split
    for kg in split:
        for sizes in _split_sizes(kg, 1):
            _check(g, kg.instantiate(sizes))


def test_a_parts_split_plans_are_timed_whatever_the_draw(monkeypatch: pytest.MonkeyPatch) -> None:
    """superoptimize tunes each part with its split-loop plans in ``always`` (as the whole program's
    constructed plans are): a part's few samples do not leave them out."""
    from prism.tune.backends import InterpreterBackend

    g = workloads.rmsnorm_linear(4, 128)
    calls: list[tuple[list[KernelGraph], tuple[int, ...]]] = []
    real = pipeline.tune

    def recording(graph: Graph, templates: list[KernelGraph], **kw: object) -> object:
        calls.append((list(templates), tuple(kw.get("always", ()))))  # type: ignore[arg-type]
        return real(graph, templates, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(pipeline, "tune", recording)
    pipeline.superoptimize(g, samples=2, backend=InterpreterBackend(lambda kg: 1.0), cache=False, progress=False)
    def rule_built(t: KernelGraph) -> bool:  # split_loop names its kernels <name>_split, <name>_combine
        return len(t.kernels) == 2 and t.kernels[0].name.endswith("_split") and t.kernels[1].name.endswith("_combine")

    parts = [(ts, always) for ts, always in calls[:-1] if any(rule_built(t) for t in ts)]
    assert parts, "no part has a split-loop plan"
    for ts, always in parts:
        assert {i for i, t in enumerate(ts) if rule_built(t)} <= set(always)


def test_a_plan_the_prover_cannot_shape_is_dropped_not_raised() -> None:
    from prism.errors import IRError

    make, sizes = CASES["gqa"]
    g = workloads.program("gqa", **sizes)

    def bad_shapes(*_: object) -> bool:
        raise IRError("tile does not fit")

    assert split_plans(g, [make(g)], "gqa", bad_shapes) == []
    assert len(split_plans(g, [make(g)], "gqa", lambda *_: True)) == 2  # the split and its spread combine


def test_a_plan_that_only_accumulates_loaded_elements_is_not_split() -> None:
    """A column sum that adds whole tiles in the loop and reduces them after it would save partials
    as large as its input; the same program's plan that reduces in the loop is split."""
    g = Graph()
    g.output(g.sum(g.input((64, 128), "float16", "X"), 0), "O")
    load = Load("X", (1,), 0)
    tiles = CustomKernel("k0", ("k0_x",), "k0_i", (load, Accum(0), ReduceOp(Reduce.SUM, 1, 0), Save(2, "O", (1,))))
    rows = CustomKernel("k0", ("k0_x",), "k0_i", (load, Accum(0, 0), Save(1, "O", (1,))))
    assert split_loop(g, KernelGraph.of(g, "col_sum", [tiles]), "col_sum") is None
    split = split_loop(g, KernelGraph.of(g, "col_sum", [rows]), "col_sum")
    assert split is not None and verify_all(g, [split])[0].proven


@pytest.mark.parametrize("name", ["gqa_safe", "qknorm_gqa_safe", "gqa"])
def test_a_combine_spread_over_the_head_dim_is_proven_and_computes_the_program(name: str) -> None:
    """The combine on one more grid dim over the output's head dim: the numerator partial read in
    shares, the max and sum partials (extent 1 there) whole; proven, and right with c >= 2."""
    from prism.loopsplit import spread_combine

    g, kg = _split(name)
    wide = spread_combine(g, kg, name)
    assert wide is not None
    split, combine = wide.kernels
    assert isinstance(split, CustomKernel) and isinstance(combine, CustomKernel)
    assert split == kg.kernels[0] and combine.grid[:-1] == kg.kernels[1].grid and combine.grid[-1] == "c"
    whole = {op.tensor for op in combine.ops if isinstance(op, Load) and op.imap[-1] is None}
    shares = {op.tensor for op in combine.ops if isinstance(op, Load) and op.imap[-1] is not None}
    assert len(shares) == 1 and len(whole) == (2 if name.endswith("safe") else 1), (whole, shares)
    assert verify_all(g, [wide])[0].proven
    legal = [sz for sz in sample_legal_sizes(wide, arch="sm_80", count=64) if sz["c"] >= 2 and sz["s"] >= 2][:2]
    assert legal, "no legal size with a spread combine"
    for sizes in legal:
        _check(g, wide.instantiate(sizes))


def test_a_wrong_spread_reading_a_share_of_the_statistics_is_not_valid() -> None:
    """Reading the max partial in shares too: its extent along the head dim is 1, so no c >= 2 divides
    it (the IR refuses the sizes) or the proof fails."""
    from prism.errors import IRError
    from prism.ir import infer
    from prism.loopsplit import spread_combine

    g, kg = _split("gqa_safe")
    wide = spread_combine(g, kg, "gqa_safe")
    assert wide is not None
    split, combine = wide.kernels
    assert isinstance(combine, CustomKernel)
    d = next(op.imap[-1] for op in combine.ops if isinstance(op, Load) and op.imap[-1] is not None)
    ops = tuple(replace(op, imap=(*op.imap[:-1], d)) if isinstance(op, Load) else op for op in combine.ops)
    bad = replace(wide, kernels=(split, replace(combine, ops=ops)))
    sizes = dict.fromkeys(bad.symbols, 1) | {"c": 2}
    with pytest.raises(IRError):
        infer(bad.instantiate(sizes))


def test_a_norm_gemv_split_fuses_with_its_partials_read_past_l1() -> None:
    """rmsnorm_linear's split saves the sum of squares as one float a block and a row, so with several
    combining blocks they share the partial's 128-byte lines: the copy through L1 is refused
    (``fuse._l1_safe``). ``launch_fusion`` lowers the plan again with the combine reading its partials
    in place past L1 (``Options.partials_in_place``; the split kernel unchanged), which fuses; so
    lowered, the combine emulates like the interpreter and the source reads them with ``ld_l2``."""
    g, kg = _split("rmsnorm_linear")
    concrete = kg.instantiate({"x": 2, "s": 4, "i": 1})
    gl = lower_graph(concrete, arch("sm_80"), DEFAULT_OPTIONS)
    assert fuse.fusion(gl) is None
    again, opts, fu = fuse.launch_fusion(concrete, gl, DEFAULT_OPTIONS)
    assert fu is not None and opts.partials_in_place
    split, combine = again.kernels
    assert split is not None and combine is not None and combine.streamed and not split.streamed
    ins = inputs_of(concrete)
    (out,) = [t.name for t in g.outputs]
    assert relative_error(emulate(concrete, ins, options=opts)[out], g.evaluate(ins)[out]) < 1e-9
    (launch,) = generate(concrete, arch="sm_80").steps
    assert isinstance(launch, KernelLaunch) and "ld_l2(gi_s_part0" in launch.source
    assert not fuse.launch_fusion(concrete, gl, replace(DEFAULT_OPTIONS, fuse=False))[2]
