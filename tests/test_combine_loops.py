"""The loops of split kernels' combines, two options:

* ``Options.direct_loops``: a loop kernel without matmuls whose loop writes no shared tile reads its
  loop-varying Loads in place in global memory: no ring, no per-iteration wait or barrier; tensors
  another kernel writes are read past L1 (``ld_l2``).
* ``Options.own_copies``: an element-wise accumulator of a copied loop tile takes the loader's items,
  so each thread adds what it copied; a loop with every stage in flight and nothing else to read
  then has no barrier (``KernelLowering.private_loop``).

Checked by the lowered-IR emulator against the interpreter, by the source, and by nvcc where installed."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import pytest
from test_emulate import SMALL, cheap_sizes, emulate_error

from prism import plans, workloads
from prism.codegen import Options, generate
from prism.codegen import lower as lower_mod
from prism.codegen.arch import arch
from prism.codegen.lower import lower_graph
from prism.codegen.lowered import KernelLowering
from prism.codegen.nvcc import compile_check, nvcc_path
from prism.ir import KernelGraph

STREAM = Options(direct_loops=True)
OWN = Options(own_copies=True)


_KV = [{"x": 1, "s": 2, "i": 1}, {"x": 1, "s": 4, "i": 1}]
_SPLIT_K = [{"x": 1, "y": 4, "i": 1, "c": 2}, {"x": 2, "y": 2, "i": 2, "c": 4}]


def _split_plans() -> list[tuple[str, KernelGraph, list[dict[str, int]]]]:
    """Split plans whose combine loops over the partials, at small sizes where it does: split-KV
    attention (unsafe and safe softmax, with and without the q/k norm) and the split-K GEMVs."""
    g = {p: workloads.program(p, **SMALL[p]) for p in SMALL}
    return [
        ("gqa", plans.gqa_split_plan(g["gqa"]), _KV),
        ("qknorm_gqa", plans.gqa_split_plan(g["qknorm_gqa"], qknorm=True), _KV),
        ("safe_gqa", plans.safe_gqa_split_plan(g["gqa"]), _KV),
        ("safe_qknorm_gqa", plans.safe_gqa_split_plan(g["qknorm_gqa"], qknorm=True), _KV),
        ("rmsnorm_linear", plans.rmsnorm_linear_splitk_plan(g["rmsnorm_linear"]), _SPLIT_K),
        ("swiglu", plans.swiglu_splitk_plan(g["swiglu"]), _SPLIT_K),
    ]


def _streamed(kg: KernelGraph, opts: Options = STREAM) -> list[KernelLowering]:
    return [k for k in lower_graph(kg, arch("sm_80"), opts).kernels if k is not None and k.streamed]


@pytest.mark.parametrize("name", [n for n, _, _ in _split_plans()])
def test_combines_read_their_partials_in_place_and_emulate_like_the_interpreter(name: str) -> None:
    t, sizes = next((t, s) for n, t, s in _split_plans() if n == name)
    for kg in (t.instantiate(s) for s in sizes):
        streamed = _streamed(kg)
        assert [k.kernel.name for k in streamed] == ["combine"], name
        assert not _streamed(kg, Options()), "off by default"
        for opts in (STREAM, Options(direct_loops=True, rotate=3)):
            assert emulate_error(kg, opts) < 1e-9, (name, opts)


def test_the_partials_are_read_past_l1_and_the_split_kernel_is_unchanged() -> None:
    """The fused split-KV launch: the combine has no copy, ring or wait, reads the partials with
    ``ld_l2`` (ld.global.cg) and the split kernel's code is that of the ring-copy combine."""
    g = workloads.program("gqa", batch=2, group=8, kv_len=1024, head_dim=128)
    kg = plans.gqa_split_plan(g).instantiate({"x": 2, "s": 16, "i": 1})
    fused = generate(kg, arch="sm_80", options=STREAM).kernels
    default = generate(kg, arch="sm_80", options=Options(own_copies=False)).kernels
    assert len(fused) == len(default) == 1
    src, base = fused[0].source, default[0].source
    split, combine = src.split("namespace combine {")
    assert split.split("namespace split {")[1] == base.split("namespace combine {")[0].split("namespace split {")[1]
    body = combine.split("void run(")[1]
    assert "ld_l2(gi_s_N" in body and "cp_async" not in body and "load_s_" not in body
    assert "ld.global.cg.f32" in src  # the helper, in the prelude only where a kernel reads past L1
    assert "ld.global.cg" not in base
    loop = body.split("for (int it0 = 0;")[1].split("// epilogue")[0]
    assert "__syncthreads" not in loop and "pf2_0[u][j] = ld_l2(gi_s_N" in loop
    assert loop.index("ra2[j] += pf2_0[u][j]") > loop.rindex("= ld_l2(")  # every load before the first add
    assert fused[0].smem_bytes < default[0].smem_bytes  # no ring of partial tiles
    if nvcc_path() is not None:
        assert len(compile_check([(fused[0].entry, src)], "sm_80", jobs=1)) == 1


def test_settled_tensors_are_read_through_l1_with_vector_loads() -> None:
    """The split-K combine of rmsnorm_linear re-reads X (a program input) for Σx²: plain vector loads
    (``ld_run``), while the partials another kernel wrote go through ``ld_l2``."""
    g = workloads.program("rmsnorm_linear", n=8, d=1024)
    kg = plans.rmsnorm_linear_splitk_plan(g).instantiate({"x": 64, "y": 4, "i": 2, "c": 64})
    low = _streamed(kg)[0]
    l2 = {b.name: b.l2 for b in low.bufs.values() if b.direct}
    assert l2 == {"s_P": True, "s_X": False}
    src = generate(kg, arch="sm_80", options=STREAM).kernels[1].source
    assert re.search(r"ld_run\(\w+, reinterpret_cast<const unsigned\*>\(gi_s_X", src)
    assert "ld_l2(gi_s_P" in src


def test_kernels_with_a_matmul_or_a_loop_reduction_keep_their_rings() -> None:
    for p in ("rmsnorm_linear", "swiglu", "gqa"):
        g = workloads.program(p, **SMALL[p])
        for t in plans.hand_plans(p, g):
            for s in cheap_sizes(t, 3):
                kg = t.instantiate(s)
                for k in _streamed(kg):
                    assert not any(type(op).__name__ in ("MatmulOp", "ReduceOp") for op in k.kernel.ops), (p, s)


def test_the_emulator_catches_a_streamed_read_of_the_wrong_iteration(monkeypatch: pytest.MonkeyPatch) -> None:
    """Mutation: iteration it reading the tile of it / 2 (``gstep`` halved) is caught."""
    g = workloads.program("gqa", **SMALL["gqa"])
    kg = plans.gqa_split_plan(g).instantiate(_KV[1])
    real = lower_mod._load_plan

    def half_step(d: Any, i: int, op: Any) -> Any:
        lp = real(d, i, op)
        if not lp.buf.gstep:
            return lp
        buf = d.bufs[i] = replace(lp.buf, gstep=lp.buf.gstep // 2)
        return replace(lp, buf=buf)

    monkeypatch.setattr(lower_mod, "_load_plan", half_step)
    assert _streamed(kg)
    assert not emulate_error(kg, STREAM) < 1e-6


@pytest.mark.parametrize("name", [n for n, _, _ in _split_plans()])
def test_accumulators_of_own_copies_emulate_like_the_interpreter(name: str) -> None:
    """Unsafe-softmax and split-K combines: each partial accumulated by the thread that copied it
    (vector items of the loader); the safe combines rescale by a max every thread reads: unchanged."""
    t, sizes = next((t, s) for n, t, s in _split_plans() if n == name)
    for kg in (t.instantiate(s) for s in sizes):
        combine = lower_graph(kg, arch("sm_80"), OWN).kernels[-1]
        assert combine is not None
        own = [a for a in combine.accs.values() if a.own]
        assert bool(own) == (not name.startswith("safe")), name
        for i, a in combine.accs.items():
            lp = next((lp for lp in combine.loads if lp.op == a.x), None)
            if a.own:  # the loader's items: same sweep, same vector width
                assert lp is not None and (combine.elementwise[i], a.vec) == (lp.sweep, lp.vec)
        assert combine.private_loop == (name in ("gqa", "qknorm_gqa", "swiglu")), name
        for opts in (OWN, Options(own_copies=True, rotate=3)):
            assert emulate_error(kg, opts) < 1e-9, (name, opts)


def test_a_private_loop_has_no_barrier_and_adds_in_vector_runs() -> None:
    g = workloads.program("gqa", batch=2, group=8, kv_len=1024, head_dim=128)
    kg = plans.gqa_split_plan(g).instantiate({"x": 2, "s": 16, "i": 1})
    src = generate(kg, arch="sm_80").kernels[0].source  # the default
    assert src == generate(kg, arch="sm_80", options=OWN).kernels[0].source
    base = generate(kg, arch="sm_80", options=Options(own_copies=False)).kernels[0].source
    loop, base_loop = (s.split("namespace combine {")[1].split("int sb_rd")[1].split("// epilogue")[0]
                       for s in (src, base))
    assert "__syncthreads" not in loop.split("cp_async_wait<0>")[0] and "__syncthreads" in base_loop
    assert "ld_run(a2_v0, s_N + " in loop and "ra2[j * 4 + 3] += a2_v0[3];" in loop
    if nvcc_path() is not None:
        assert len(compile_check([(generate(kg, arch="sm_80", options=OWN).kernels[0].entry, src)], "sm_80",
                                 jobs=1)) == 1


def test_a_loop_that_refills_its_ring_keeps_the_barrier() -> None:
    """32 partials in a ring of at most 16 stages: a slot is refilled while others read it."""
    g = workloads.program("gqa", batch=2, group=8, kv_len=1024, head_dim=128)
    kg = plans.gqa_split_plan(g).instantiate({"x": 2, "s": 32, "i": 1})
    combine = lower_graph(kg, arch("sm_80"), OWN).kernels[-1]
    assert combine is not None and combine.prefetch < combine.loop and not combine.private_loop
    assert any(a.own for a in combine.accs.values())


# ------------------------------------------------------------------ Options.shift_first
_SAFE = ("safe_gqa", "safe_qknorm_gqa")
FIRST = Options(shift_first=True)  # off by default: slower on an H200 (docs/codegen.md)


@pytest.mark.parametrize("name", _SAFE)
def test_safe_combines_take_the_shift_maxima_first_and_loop_without_barriers(name: str) -> None:
    """With the option, a safe split-KV combine whose every stage is copied before its loop: one wait
    for all stages, the maxima of the partial maxes first, then a loop with no barrier; emulated like
    the interpreter with and without the option (off by default)."""
    t, sizes = next((t, s) for n, t, s in _split_plans() if n == name)
    for kg in (t.instantiate(s) for s in sizes):
        combine = lower_graph(kg, arch("sm_80"), FIRST).kernels[-1]
        assert combine is not None and combine.shift_first
        assert not lower_graph(kg, arch("sm_80"), Options()).kernels[-1].shift_first  # type: ignore[union-attr]
        src = generate(kg, arch="sm_80", options=Options(fuse=False, shift_first=True)).kernels[-1].source
        head, loop = src.split("// the shifts' maxima over every stage first")
        assert head.rstrip().endswith("cp_async_wait<0>();\n  __syncthreads();")
        main = loop.split("for (int it = 0;")[2].split("// epilogue")[0]
        assert "__syncthreads" not in main.split("cp_async_wait<0>();")[0]
        for opts in (FIRST, Options()):
            assert emulate_error(kg, opts) < 1e-9, (name, opts)


def test_unsafe_combines_and_split_kernels_keep_their_loops() -> None:
    for name, t, sizes in _split_plans():
        for kg in (t.instantiate(s) for s in sizes):
            low = lower_graph(kg, arch("sm_80"), FIRST).kernels
            assert [k.shift_first for k in low if k is not None] == [False, name in _SAFE], name


def test_the_emulator_catches_shift_maxima_read_before_every_stage_landed(monkeypatch: pytest.MonkeyPatch) -> None:
    from prism.codegen import emulate as emulate_mod

    g = workloads.program("gqa", **SMALL["gqa"])
    kg = plans.safe_gqa_split_plan(g).instantiate(_KV[1])
    real = emulate_mod._Block.shift_maxima

    def no_wait(self: Any) -> None:
        wait = self.sm.wait
        self.sm.wait = lambda keep: None
        try:
            real(self)
        finally:
            self.sm.wait = wait

    monkeypatch.setattr(emulate_mod._Block, "shift_maxima", no_wait)
    with pytest.raises(emulate_mod.EmulationError, match="in flight"):
        emulate_error(kg, FIRST)
