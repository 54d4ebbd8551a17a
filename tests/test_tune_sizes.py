"""Legal-size enumeration against brute force on small shapes."""

from __future__ import annotations

import dataclasses
import itertools
import math
import random

import pytest

from prism import plans, workloads
from prism.codegen.resources import KernelResources, Resources, resources
from prism.codegen.sizes import (
    POW2,
    Usage,
    candidate_values,
    iteration_cost,
    legal_sizes,
    sample_legal_sizes,
    size_score,
    smem_budget,
)
from prism.errors import IRError, TuningError
from prism.ir import Accum, CustomKernel, KernelGraph, Load, Save, TensorSpec, UnaryOp, infer
from prism.ops import Reduce, Unary


def fake_resources(kg: KernelGraph, arch: str) -> Usage:
    """Pretend each loaded tile element costs 1 KiB of shared memory; 32 threads per grid-x block."""
    _shapes, per_kernel = infer(kg)
    smem = threads = 0
    for k, ks in zip(kg.kernels, per_kernel, strict=True):
        if isinstance(k, CustomKernel) and ks is not None:
            elems = sum(math.prod(t) for op, t in zip(k.ops, ks.tiles, strict=True) if isinstance(op, Load) and t)
            smem = max(smem, 1024 * elems)
            threads = max(threads, 32 * int(k.grid[0]))
    return Usage(smem, threads)


def brute_force(kg: KernelGraph, arch: str, max_threads: int = 1024, resources=None) -> list[dict[str, int]]:
    """Every integer 1..max dim for every symbol, kept when the μGraph validates and fits."""
    top = max(d for t in (*kg.inputs, *kg.outputs) for d in t.shape)
    out = []
    for vals in itertools.product(range(1, top + 1), repeat=len(kg.symbols)):
        sizes = dict(zip(kg.symbols, vals, strict=True))
        concrete = kg.instantiate(sizes)
        try:
            infer(concrete)
        except IRError:
            continue
        if resources is not None:
            use = resources(concrete, arch)
            if use.smem_bytes > smem_budget(arch) or use.threads > max_threads:
                continue
        out.append(sizes)
    return out


def key(ss: list[dict[str, int]]) -> list[tuple[tuple[str, int], ...]]:
    return sorted(tuple(sorted(s.items())) for s in ss)


SMALL = {
    "rmsnorm_linear": workloads.rmsnorm_linear(n=4, d=16),
    "rmsnorm_mlp": workloads.rmsnorm_mlp(n=4, d=16),
    "gqa": workloads.gqa(batch=2, group=4, kv_len=16, head_dim=8),
    "qknorm_gqa": workloads.qknorm_gqa(batch=2, group=2, kv_len=12, head_dim=4),
}


@pytest.mark.parametrize("program", list(SMALL))
def test_matches_brute_force_without_resource_filter(program: str) -> None:
    g = SMALL[program]
    for kg in plans.hand_plans(program, g):
        got = legal_sizes(kg, arch="sm_80", resources=None)
        assert key(got) == key(brute_force(kg, "sm_80")), (program, kg.symbols)
        assert got, "every hand plan has at least one legal assignment"


def test_divisibility_rejects_non_divisors() -> None:
    g = workloads.rmsnorm_linear(n=4, d=12)
    (kg, _) = plans.hand_plans("rmsnorm_linear", g)
    got = legal_sizes(kg, arch="sm_90", resources=None)
    assert {s["x"] for s in got} == {1, 2, 3, 4, 6, 12}
    assert {s["i"] for s in got} == {1, 2, 3, 4, 6, 12}
    assert len(got) == 36
    assert 8 in candidate_values(kg)  # a power of two is a candidate but never divides 12


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_shared_memory_limit_per_arch(arch: str) -> None:
    g = workloads.rmsnorm_linear(n=4, d=16)
    for kg in plans.hand_plans("rmsnorm_linear", g):
        got = legal_sizes(kg, arch=arch, resources=fake_resources)
        assert key(got) == key(brute_force(kg, arch, resources=fake_resources))
        for s in got:
            assert fake_resources(kg.instantiate(s), arch).smem_bytes <= smem_budget(arch)


def test_sm90_allows_more_than_sm80() -> None:
    kg = plans.rmsnorm_linear_plan(workloads.rmsnorm_linear(n=4, d=16))
    a80 = key(legal_sizes(kg, arch="sm_80", resources=fake_resources))
    a90 = key(legal_sizes(kg, arch="sm_90", resources=fake_resources))
    assert set(a80) < set(a90)
    # x=2, i=1: W tile 16x8 + X tile 4x16 = 192 elements = 192 KiB: over 163 KB, under 227 KB.
    assert (("i", 1), ("x", 2)) in set(a90) - set(a80)


def test_thread_limit() -> None:
    kg = plans.rmsnorm_linear_plan(workloads.rmsnorm_linear(n=4, d=16))
    got = legal_sizes(kg, arch="sm_90", resources=fake_resources, max_threads=128)
    assert got and all(32 * s["x"] <= 128 for s in got)
    assert key(got) == key(brute_force(kg, "sm_90", max_threads=128, resources=fake_resources))


def test_codegen_error_means_illegal() -> None:
    from prism.errors import CodegenError

    def picky(kg: KernelGraph, arch: str) -> Usage:
        k = kg.kernels[0]
        assert isinstance(k, CustomKernel)
        if int(k.loop) > 2:
            raise CodegenError("loop too long for this test")
        return Usage(0, 32)

    kg = plans.rmsnorm_linear_plan(workloads.rmsnorm_linear(n=4, d=16))
    got = legal_sizes(kg, arch="sm_90", resources=picky)
    assert {s["i"] for s in got} == {1, 2}


def test_sizes_shared_across_kernels() -> None:
    """The split-KV plan's s is the split kernel's grid dim and the combine kernel's loop."""
    g = workloads.gqa(batch=2, group=2, kv_len=16, head_dim=4)
    kg = plans.gqa_split_plan(g)
    assert kg.symbols == ["x", "s", "i"]
    got = legal_sizes(kg, arch="sm_90", resources=None)
    assert key(got) == key(brute_force(kg, "sm_90"))
    for s in got:
        assert 16 % (s["s"] * s["i"]) == 0 and 2 % s["x"] == 0
    assert len(got) == 2 * 15  # x in {1,2}; (s, i) with s*i | 16: 15 pairs


def test_limit_and_grid_limits() -> None:
    kg = plans.rmsnorm_linear_plan(workloads.rmsnorm_linear(n=8, d=4096))
    assert len(legal_sizes(kg, arch="sm_90", resources=None, limit=5)) == 5
    # grid y and z are at most 65535
    # (a Graph refuses tensors of 2^31 elements: the plan is re-bound to the large shapes directly)
    d = 2**17
    kg2 = plans.rmsnorm_linear_2d_plan(workloads.rmsnorm_linear(n=2, d=64)).with_shapes(
        {"X": (2, d), "W": (d, d)}, {"O": (2, d)})
    got = legal_sizes(kg2, arch="sm_90", resources=None, limit=None)
    assert got and max(s["y"] for s in got) == 2**15 and all(s["y"] <= 65535 for s in got)


def test_unknown_arch() -> None:
    kg = plans.rmsnorm_linear_plan(workloads.rmsnorm_linear(n=4, d=16))
    with pytest.raises(TuningError, match="sm_70"):
        legal_sizes(kg, arch="sm_70", resources=None)


def test_with_the_code_generators_resources() -> None:
    """Real prism.codegen.resources: sm_90's 227 KB admit every sm_80 choice and more; brute force agrees."""
    codegen = pytest.importorskip("prism.codegen")
    if not hasattr(codegen, "resources"):
        pytest.skip("prism.codegen.resources does not exist yet")
    from prism.errors import CodegenError

    cfg = workloads.config("swiglu_d4096")
    kg = plans.swiglu_plan(cfg.build())
    per_arch = {}
    for arch in ("sm_80", "sm_90"):
        got = legal_sizes(kg, arch=arch)
        brute = []
        for x, i in itertools.product(candidate_values(kg), repeat=2):
            concrete = kg.instantiate({"x": x, "i": i})
            try:
                infer(concrete)
                res = codegen.resources(concrete, arch)
            except (IRError, CodegenError):
                continue
            if res.smem_bytes <= smem_budget(arch) and res.threads <= 1024:
                brute.append({"x": x, "i": i})
        assert key(got) == key(brute)
        per_arch[arch] = set(key(got))
    assert per_arch["sm_80"] <= per_arch["sm_90"]


@pytest.mark.parametrize("program", list(SMALL))
def test_sample_legal_sizes_draws_legal_sizes_without_enumerating(program: str) -> None:
    """``sample_legal_sizes``: ascending, the first legal assignments in order; seeded, distinct
    legal ones, the same for the same seed; never more lowerings than its budget."""
    g = SMALL[program]
    for kg in plans.hand_plans(program, g):
        every = legal_sizes(kg, arch="sm_80", resources=fake_resources, values=POW2)
        first = sample_legal_sizes(kg, arch="sm_80", count=3, resources=fake_resources)
        assert first == every[:3]
        drawn = sample_legal_sizes(kg, arch="sm_80", count=4, rng=random.Random(1), resources=fake_resources)
        assert drawn and all(s in every for s in drawn) and len(key(drawn)) == len(set(key(drawn)))
        assert drawn == sample_legal_sizes(kg, arch="sm_80", count=4, rng=random.Random(1), resources=fake_resources)
    calls = []

    def counting(kg: KernelGraph, arch: str) -> Usage:
        calls.append(1)
        return Usage(10**9, 32)  # never fits: the descents exhaust their budget

    assert sample_legal_sizes(plans.hand_plans(program, g)[0], arch="sm_80", count=2, resources=counting,
                              max_checks=5) == []
    assert len(calls) <= 5


def _decoder_block_rows(n: int = 16, d: int = 2048, f: int = 5632) -> KernelGraph:
    """The constructed plan of a decoder's MLP half plus the final norm (a transformers region at decode
    batch 16): row-wise kernels between vendor GEMMs, 4 size symbols of 23 candidate values each."""
    from prism.graph import Graph
    from prism.rowwise import row_vendor_plan

    g = Graph()
    x, r = g.input((n, d), "float16", "X"), g.input((n, d), "float16", "R")
    gain, last = g.input((1, d), "float16", "G"), g.input((1, d), "float16", "H")
    wg, wu, wd = g.input((f, d), "float16", "Wg"), g.input((f, d), "float16", "Wu"), g.input((d, f), "float16", "Wd")
    h = g.add(x, r)
    a = g.mul(g.rms_norm(h), gain)
    y = g.mul(g.silu(g.matmul(a, g.transpose(wg))), g.matmul(a, g.transpose(wu)))
    g.output(g.mul(g.rms_norm(g.add(h, g.matmul(y, g.transpose(wd)))), last), "O")
    plan = row_vendor_plan(g)
    assert plan is not None
    return plan


def test_a_sparse_legal_set_still_gets_sizes_to_time() -> None:
    """Its row-wise kernels read the GEMMs' outputs, whose splits are checked only at the leaves, so
    random descents rarely reach a legal leaf; the ascending descent backs them up."""
    from prism.codegen.resources import resources as codegen_resources
    from prism.tune import draw

    plan = _decoder_block_rows()
    assert len(candidate_values(plan)) ** len(plan.symbols) > draw.FULL_ENUMERATION
    for got in (draw.legal_sizes_of(plan, "sm_90", codegen_resources, None),
                draw._one_legal(plan, "sm_90", codegen_resources, None)):
        assert got
        for sizes in got:  # legal: shapes infer, the generator's resources fit (it raises otherwise)
            concrete = plan.instantiate(sizes)
            infer(concrete, structure=False)
            codegen_resources(concrete, "sm_90")


def test_splits_of_a_vendor_gemms_output_are_checked_early() -> None:
    """A row-wise kernel after a GEMM of inputs: the GEMM's output has a size-free shape, so its split is
    checked as soon as the kernel's grid symbol is assigned, like the input's."""
    from prism.codegen.sizes import _splits
    from prism.graph import Graph
    from prism.rowwise import row_vendor_plan

    g = Graph()
    x, w, r = g.input((16, 64), "float16", "X"), g.input((64, 48), "float16", "W"), g.input((16, 48), "float16", "R")
    g.output(g.rms_norm(g.add(g.matmul(x, w), r)), "O")
    plan = row_vendor_plan(g)
    assert plan is not None and len(plan.symbols) == 1
    loads = [op.tensor for k in plan.kernels if isinstance(k, CustomKernel) for op in k.ops if isinstance(op, Load)]
    assert len(loads) == 2 and "R" in loads  # the GEMM's output and R
    assert len(_splits(plan)) == 2


def _stream(blocks: int, loop: int, stage_bytes: int) -> Resources:
    return Resources((KernelResources("k0", smem_bytes=4 * stage_bytes, threads=128, blocks=blocks, stages=4,
                                      acc_regs=8, stage_bytes=stage_bytes, loop=loop),))


def test_the_prior_charges_iterations_only_where_their_latency_shows() -> None:
    """A d=4096 GEMV's column split (128 blocks streaming 32 MB) ran 10.6 µs at 16 iterations of 16 KB
    and 14.4 at 8 of 32 KB on the H200 (docs/codegen.md): the prior ranks them so. A grid that moves
    little per iteration still pays for every iteration (fewer iterations of larger stages win)."""
    assert size_score(_stream(128, 16, 16384), 132) > size_score(_stream(128, 8, 32768), 132)
    assert iteration_cost(KernelResources("k0", 0, 128, 128, 4, 8, 16384, loop=16)) < 16 * 0.1
    small = [_stream(32, loop, 4096 * 8 // loop) for loop in (2, 8)]
    assert iteration_cost(small[1].kernels[0]) == pytest.approx(0.8)
    assert size_score(small[0], 132) > size_score(small[1], 132)


def _flat(blocks: int, tile_bytes: int, run_bytes: int) -> Resources:
    return Resources((KernelResources("k0", smem_bytes=0, threads=256, blocks=blocks, stages=1, acc_regs=0,
                                      stage_bytes=0, tile_bytes=tile_bytes, run_bytes=run_bytes),))


def test_the_prior_gives_a_large_loop_free_kernel_many_waves_of_blocks() -> None:
    """8 MB element-wise on the H200 (docs/codegen.md, "Blocks of loop-free kernels"): 128 blocks of 64 KB
    11.9 µs, 512 of 16 KB 8.8, 1024 of 8 KB 8.2; a tile of 16-byte rows (a column slab) 12.4 at 512
    blocks. At decode sizes (128 KB) 32-128 blocks ran within 0.1 µs of each other, 16 slower."""
    total = 8 << 20
    score = {b: size_score(_flat(b, total // b, total // b), 132) for b in (128, 512, 1024, 4096)}
    assert score[512] > score[128] and score[1024] > score[128] and score[512] > score[4096]
    assert size_score(_flat(512, 16384, 16), 132) < size_score(_flat(512, 16384, 8192), 132)
    small = 128 << 10
    assert size_score(_flat(64, small // 64, small // 64), 132) > size_score(_flat(4, small // 4, small // 4), 132)


def test_resources_report_a_loop_free_kernels_tiles() -> None:
    kg = KernelGraph(program="silu", inputs=(TensorSpec("X", (1024, 4096), "float16"),),
                     outputs=(TensorSpec("O", (1024, 4096), "float16"),),
                     kernels=(CustomKernel("k0", grid=(256, 4), loop=1, ops=(
                         Load("X", imap=(0, 1), fmap=None), UnaryOp(Unary.SILU, 0),
                         Accum(1, None, Reduce.SUM), Save(2, "O", omap=(0, 1)))),))
    (k,) = resources(kg, "sm_90").kernels
    assert k.blocks == 1024 and k.tile_bytes == 4 * 1024 * 2 and k.run_bytes == 1024 * 2



def test_an_attention_iteration_counts_its_rounds_and_a_gemv_iteration_one() -> None:
    """``loop_rounds``: an attention split's iteration publishes its scores, their max and the
    probabilities before the second matmul reads them; a GEMV's product goes to its accumulator. The
    prior charges iterations by their rounds (``iteration_cost``), so an attention split with fewer,
    longer iterations ranks above one of many short ones (H200: 8.9 µs at one iteration a split, 14.4
    at eight; docs/off-the-suite.md, "The prior of split attention plans")."""
    g = workloads.gqa_safe(batch=2, group=8, kv_len=4096, head_dim=128)
    t = plans.safe_gqa_split_plan(g)
    split = resources(t.instantiate({"x": 2, "s": 16, "i": 2}), "sm_90").kernels[0]
    assert split.rounds >= 3 and 0.9 < split.reread < 1.2  # heads over x: every block its own keys
    gemv = resources(plans.hand_plans("rmsnorm_linear", workloads.rmsnorm_linear(n=8, d=4096))[0].instantiate(
        {"x": 128, "i": 16}), "sm_90").kernels[0]
    assert gemv.rounds == 1 and gemv.reread < 2
    more = dataclasses.replace(split, loop=8)
    assert iteration_cost(more) == pytest.approx(iteration_cost(dataclasses.replace(split, rounds=1, loop=8)) * split.rounds)


def test_the_prior_charges_a_grid_that_reads_its_inputs_many_times_over() -> None:
    k = KernelResources("k", 1024, 128, 128, 2, 8, 16384, loop=4, tile_bytes=16384, run_bytes=256)
    base = size_score(Resources((k,)), 132)
    assert size_score(Resources((dataclasses.replace(k, reread=1.9),)), 132) == base  # up to twice: free
    assert size_score(Resources((dataclasses.replace(k, reread=8.0),)), 132) == pytest.approx(base - 1.0)


def test_the_prior_charges_launches_not_kernels() -> None:
    """A split kernel fused with its combine is one launch: scored like one kernel, half a point above
    the same pair launched apart."""
    split = KernelResources("split", 1024, 128, 128, 2, 8, 16384, loop=4, tile_bytes=16384, run_bytes=256)
    combine = dataclasses.replace(split, name="combine", blocks=32, loop=4)
    apart, fused = Resources((split, combine)), Resources((split, combine), fused=True)
    assert (apart.launches, fused.launches) == (2, 1)
    assert size_score(fused, 132) == pytest.approx(size_score(apart, 132) + 0.5)


@pytest.mark.parametrize(("k", "dtype", "possible"), [(24, "float16", False), (32, "float16", True),
                                                      (32, "float32", False)])
def test_a_matmul_whose_full_contraction_is_no_multiple_of_16_has_no_legal_size(k: int, dtype: str, possible: bool,
                                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The tile of a contraction divides its full extent, so an mma k-step of 16 needs that extent to be a
    multiple of 16: such a template is refused whole (``sizes._mma_possible``), not size by size, and the
    one-by-one enumeration agrees. So is a generated matmul of a float32 program (tensor-core code takes
    half dtypes): a random float32 attention spent 150 s of its tuning finding no size for its padded plans."""
    from prism import pipeline
    from prism.codegen import sizes
    from prism.graph import Graph
    from prism.ir import MatmulOp

    g = Graph()
    g.output(g.silu(g.matmul(g.input((16, k), dtype, "X"), g.input((k, 32), dtype, "W"))), "O")
    out = pipeline.search_and_verify(g, program=f"mm{k}", progress=False)
    mma = [t for t in out.templates if t.symbols and any(
        isinstance(op, MatmulOp) for kk in t.kernels if isinstance(kk, CustomKernel) for op in kk.ops)]
    assert mma and {sizes._mma_possible(t) for t in mma} == {possible}
    monkeypatch.setattr(sizes, "_mma_possible", lambda t: True)  # size by size
    legal = [next(sizes.iter_legal(t, arch="sm_80", resources=resources), None) for t in mma]
    assert any(x is not None for x in legal) == possible
