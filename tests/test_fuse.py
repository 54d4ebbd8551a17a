"""prism.codegen.fuse: which split kernel and combine run as one launch, and which combining block
each split block feeds, checked against the blocks' tile regions enumerated one by one."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import pytest

from prism import plans, workloads
from prism.codegen import Options, fuse, generate
from prism.codegen.arch import arch as get_arch
from prism.codegen.fuse import Fusion, fusion, pair_fusion
from prism.codegen.lower import lower_graph
from prism.codegen.lowered import GraphLowering, KernelLowering
from prism.codegen.resources import resources
from prism.codegen.sizes import generated_sizes
from prism.ir import Load, Save

Box = tuple[tuple[int, int], ...]


def _box(mapping: tuple[int | None, ...], grid: tuple[int, ...], block: tuple[int, ...], shape: tuple[int, ...]) -> Box:
    """The elements a block reads or writes, per tensor dim: [start, stop)."""
    box = [(0, n) for n in shape]
    for p, d in enumerate(mapping):
        if d is not None and p < len(grid):
            w = shape[d] // grid[p]
            box[d] = (block[p] * w, (block[p] + 1) * w)
    return tuple(box)


def _meets(a: Box, b: Box) -> bool:
    return all(x0 < y1 and y0 < x1 for (x0, x1), (y0, y1) in zip(a, b, strict=True))


def _blocks(low: KernelLowering) -> list[tuple[int, ...]]:
    return list(itertools.product(*(range(g) for g in low.grid)))


def _feeds(gl: GraphLowering, a: KernelLowering, b: KernelLowering) -> dict[tuple[int, ...], set[tuple[int, ...]]]:
    """Split block -> the combining blocks whose reads meet its writes."""
    saves = [op for op in a.kernel.ops if isinstance(op, Save)]
    loads = [op for op in b.kernel.ops if isinstance(op, Load) and op.tensor in {s.tensor for s in saves}]
    out: dict[tuple[int, ...], set[tuple[int, ...]]] = {}
    for blk in _blocks(a):
        out[blk] = set()
        for s in saves:
            w = _box(s.omap, a.grid, blk, gl.shapes[s.tensor])
            for ld in (ld for ld in loads if ld.tensor == s.tensor):
                out[blk] |= {cb for cb in _blocks(b) if _meets(w, _box(ld.imap, b.grid, cb, gl.shapes[s.tensor]))}
    return out


def _check(gl: GraphLowering, fu: Fusion) -> None:
    a, b = gl.kernels[fu.first], gl.kernels[fu.second]
    assert a is not None and b is not None
    feeds = _feeds(gl, a, b)
    for blk, targets in feeds.items():
        assert targets == {fu.target(blk)}, (blk, targets, fu)
    for cb in _blocks(b):
        assert sum(1 for t in feeds.values() if t == {cb}) == fu.count


def _split_plans() -> list[tuple[str, int]]:
    return [(cid, i) for cid, cfg in workloads.CONFIGS.items()
            for i, t in enumerate(plans.codegen_plans(cfg.program, cfg.build())) if sum(1 for _ in t.kernels) == 2]


@pytest.mark.parametrize("cid,index", _split_plans())
def test_every_split_plan_fuses_and_feeds_one_block(cid: str, index: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the width and L1-line rules off, every split plan whose combine has fewer blocks fuses, and
    the combining block each split block is sent to is exactly the one whose reads meet its writes."""
    monkeypatch.setattr(fuse, "SMALL_COMBINE", 0)
    monkeypatch.setattr(fuse, "L1_LINE", 4)
    cfg = workloads.config(cid)
    template = plans.codegen_plans(cfg.program, cfg.build())[index]
    checked = 0
    for sizes, _ in itertools.islice(generated_sizes(template, "sm_80"), 0, None, 7):
        gl = lower_graph(template.instantiate(sizes), get_arch("sm_80"))
        fu = fusion(gl)
        a, b = gl.kernels
        assert a is not None and b is not None
        if a.blocks <= b.blocks or any(x % y for x, y in zip(a.grid, b.grid, strict=False)) or a.threads != b.threads:
            # nothing to gain, split tiles that straddle two combining blocks, or a split block of 8 warps
            # (its accumulators do not fit 4) beside a combine of 4: one launch has one block size
            continue
        assert fu is not None, sizes
        _check(gl, fu)
        checked += 1
        if checked == 12:
            break
    assert checked >= 3


def test_a_wide_combine_keeps_its_own_launch() -> None:
    """64 combining blocks (a split-K GEMV): more than a quarter of the SMs, not fused."""
    cfg = workloads.config("rmsnorm_linear_d1024")
    template = plans.codegen_plans(cfg.program, cfg.build())[2]
    gl = lower_graph(template.instantiate({"x": 64, "y": 4, "i": 2, "c": 64}), get_arch("sm_80"))
    b = gl.kernels[1]
    assert b is not None and b.blocks == 64
    assert fusion(gl) is None


def test_narrow_copies_of_partials_need_whole_l1_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    """gqa's combine copies D [2, 8, s] 4 bytes at a time (cp.async.ca, through L1): fused while each
    combining block's share is whole 128-byte lines (8 * s floats), refused when lines are shared."""
    cfg = workloads.config("gqa_h1024")
    template = plans.hand_plans(cfg.program, cfg.build())[2]
    gl = lower_graph(template.instantiate({"x": 2, "s": 16, "i": 2}), get_arch("sm_80"))
    b = gl.kernels[1]
    assert b is not None and any(lp.tensor == "D" and lp.nbytes == 4 for lp in b.loads)
    assert fusion(gl) is not None  # D[x] is 8 * 16 floats: 512 bytes
    monkeypatch.setattr(fuse, "L1_LINE", 1024)  # as if lines were 1 KB: two combining blocks would share one
    assert fusion(gl) is None


def test_one_kernel_plans_do_not_fuse() -> None:
    cfg = workloads.config("swiglu_d1024")
    template = plans.hand_plans(cfg.program, cfg.build())[0]
    sizes, _ = next(iter(generated_sizes(template, "sm_80")))
    assert fusion(lower_graph(template.instantiate(sizes), get_arch("sm_80"))) is None


def test_a_combine_that_reads_every_partial_in_every_block_does_not_fuse() -> None:
    """A combining grid dim that partitions none of the partials: every split block feeds several
    combining blocks, so no single block may run the combine; the plan keeps two launches."""
    cfg = workloads.config("gqa_h1024")
    template = plans.hand_plans(cfg.program, cfg.build())[2]
    gl = lower_graph(template.instantiate({"x": 2, "s": 16, "i": 2}), get_arch("sm_80"))
    fu = fusion(gl)
    assert fu is not None
    b = gl.kernels[fu.second]
    assert b is not None
    wide = (*b.grid, 2)  # a made-up combine grid with a second dim that its loads do not map
    a = gl.kernels[fu.first]
    assert a is not None
    assert pair_fusion(gl, a, replace(b, grid=wide)) is None
    assert math.prod(wide) == 2 * b.blocks


def test_a_split_kernel_of_eight_warps_fuses_with_its_combine_at_eight() -> None:
    """rmsnorm_linear_d4096's split-K plan at x=4, y=4, i=32, c=4: the split kernel's mma fragments (a
    16x1024 tile: 128 registers at 4 warps, over ``lower.FRAG_REGS``) get 8 warps, the combine keeps 4;
    ``generate`` lowers both with 8, so they share one launch."""
    cfg = workloads.config("rmsnorm_linear_d4096")
    kg = plans.codegen_plans(cfg.program, cfg.build())[2].instantiate({"x": 4, "y": 4, "i": 32, "c": 4})
    apart = generate(kg, arch="sm_80", options=Options(fuse=False))
    assert sorted(k.block[0] for k in apart.kernels) == [128, 256]
    fused = generate(kg, arch="sm_80")
    assert [(k.name, k.block[0]) for k in fused.kernels] == [("split+combine", 256)]


def test_resources_count_a_fused_pair_as_one_launch() -> None:
    """``resources`` decides fusion as ``generate`` does (8 warps for both kernels included): the
    static prior charges launches, not kernels."""
    cfg = workloads.config("rmsnorm_linear_d4096")
    template = plans.codegen_plans(cfg.program, cfg.build())[2]
    for sizes, fused in (({"x": 4, "y": 4, "i": 32, "c": 4}, True), ({"x": 64, "y": 2, "i": 16, "c": 64}, False)):
        kg = template.instantiate(sizes)
        res = resources(kg, "sm_80")
        assert (res.fused, res.launches) == (fused, 2 - fused)
        assert res.launches == len(generate(kg, arch="sm_80").steps)
    apart = resources(template.instantiate({"x": 4, "y": 4, "i": 32, "c": 4}), "sm_80", options=Options(fuse=False))
    assert not apart.fused and apart.launches == 2
