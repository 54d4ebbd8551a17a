"""Carried copy addresses (``Options.carried_copies``): a GEMM's main loop that refills its ring keeps
each copy's global pointer and shared address in registers and runs its iterations in turns of the ring's
depth. The rendered loop, evaluated for every thread and iteration, must copy exactly what the
item-by-item loader copies into the slot the plain loop refills."""

from __future__ import annotations

import re

import pytest

from prism.codegen import Options, generate
from prism.codegen.lower import global_strides
from prism.codegen.lowered import KernelLowering, LoadPlan
from prism.codegen.nvcc import compile_check, nvcc_path
from tests.matmul_cases import matmul_graph, scaled_matmul_graph
from tests.test_stepped_copies import _c, _old
from tests.test_warp_tiles import _kernel

ON = Options(carried_copies=True)
# (graph, options): GEMM tiles of 128 and of 64 rows, rings whose depth does not divide the loop, a norm's
# weight ahead of a GEMM (its [1, 64] tile copied by 8 of the threads)
CASES = [(matmul_graph(512, 256, 1024, (4, 4), 16), ON), (matmul_graph(64, 1024, 1024, (1, 8), 16), ON),
         (matmul_graph(128, 128, 512, (1, 1), 8), Options(carried_copies=True, stages=3)),
         (matmul_graph(256, 96, 640, (2, 1), 10), Options(carried_copies=True, stages=4)),
         (scaled_matmul_graph(128, 128, 1024, (1, 2), 16), ON)]


def test_the_option_is_on_for_gemm_tiles_and_applies_only_to_a_refilled_ring() -> None:
    kg = matmul_graph(128, 128, 512, (1, 1), 8)
    assert _kernel(kg, Options()).carried and "addr_" in generate(kg, arch="sm_80").kernels[0].source
    assert not _kernel(kg, Options(carried_copies=False)).carried
    assert not _kernel(kg, Options(late_refill=True)).carried
    assert not _kernel(matmul_graph(256, 256, 512, (2, 2), 8), Options(rotate=2)).carried
    assert not _kernel(matmul_graph(128, 128, 64, (1, 1), 1), ON).carried  # one iteration: no refill
    gemv = matmul_graph(16, 1024, 1024, (1, 16), 16)  # a GEMV's 16 rows: copies item by item
    assert not _kernel(gemv, ON).carried and "addr_" not in generate(gemv, arch="sm_80").kernels[0].source


def _addresses(source: str, lp: LoadPlan, tid: int) -> list[tuple[int, int]]:
    """(shared byte address, global element offset) of each copy the addresses function gives ``tid``,
    with the destination and source as the loop's setup passes them (read from the source)."""
    fn = re.search(rf"void addr_{lp.fn}\(.*?\n}}\n", source, re.S)
    assert fn is not None, lp.fn
    setup = re.search(rf"addr_{lp.fn}\(cp_\w+, cd_\w+, smem_base(?: \+ (\d+))?, g_\w+ \+ (\d+), tid\);", source)
    assert setup is not None
    dst, src = int(setup[1] or 0), int(setup[2])
    out = []
    for j in range(lp.sweep.per):
        env = {"tid": tid, "j": j, "dst": dst, "src": src}
        for line in fn[0].splitlines():
            if m := re.fullmatch(r"\s*const int (\w+) = (.*);", line):
                env[m[1]] = _c(m[2], env)
            elif m := re.fullmatch(r"\s*p\[j\] = (.*);", line):
                g = _c(m[1], env)
            elif m := re.fullmatch(r"\s*d\[j\] = (.*);", line):
                d = _c(m[1], env)
        out.append((d, g))
    return out


def _carried(source: str, low: KernelLowering, lp: LoadPlan, tid: int) -> dict[int, set[tuple[int, int]]]:
    """Iteration -> the (shared, global) copies the rendered carried loop makes for ``lp`` in it."""
    head = re.search(r"for \(int i0 = 0; i0 < (\d+); i0 \+= (\d+)\) \{\n\s*#pragma unroll\n\s*for \(int u = 0; u < (\d+);",
                     source)
    guard = re.search(r"if \(it \+ (\d+) < (\d+)\) \{", source)
    b = lp.buf.name
    copy = re.search(rf"(?:if \(tid \+ j \* {lp.sweep.threads} < (\d+)\) )?"
                     rf"cp_async{lp.nbytes}\(cd_{b}\[j\] \+ \(\(u \+ (\d+)\) % (\d+)\) \* (\d+), "
                     rf"cp_{b}\[j\] \+ u \* (\d+)\);",
                     source)
    step = re.search(rf"cp_{b}\[j\] \+= (\d+);", source)
    assert head and guard and copy and step, b
    loop, turn, depth = map(int, head.groups())
    ahead, end = map(int, guard.groups())
    bound = int(copy[1]) if copy[1] else None
    lead, mod, slot_bytes, stride = map(int, copy.groups()[1:])
    assert turn == depth and loop == low.loop == end  # u is it % depth
    first = [a for j, a in enumerate(_addresses(source, lp, tid)) if bound is None or tid + j * lp.sweep.threads < bound]
    out: dict[int, set[tuple[int, int]]] = {}
    for it in range(loop):
        i0, u = divmod(it, depth)
        if it + ahead < end:
            out[it] = {(d + (u + lead) % mod * slot_bytes, g + i0 * int(step[1]) + u * stride) for d, g in first}
    return out


def _expected(low: KernelLowering, lp: LoadPlan, tid: int) -> dict[int, set[tuple[int, int]]]:
    """The same, of the plain loop: iteration ``it`` copies tile ``it + prefetch`` item by item into slot
    ``(it + prefetch) % stages`` of the ring."""
    items = _old(lp, global_strides(low.tensor_shapes[lp.tensor]), None, tid, 0)
    slot = lp.buf.copy_elems * lp.buf.esize
    return {it: {(lp.buf.offset + (it + low.prefetch) % low.stages * slot + d, (it + low.prefetch) * lp.iter_stride + g)
                 for d, g, _ in items}
            for it in range(low.loop) if it + low.prefetch < low.loop}


@pytest.mark.parametrize("case", range(len(CASES)))
def test_the_carried_loop_copies_what_the_plain_loop_copies(case: int) -> None:
    kg, options = CASES[case]
    low = _kernel(kg, options)
    assert low.carried and low.prefetch < low.loop
    source = generate(kg, arch="sm_80", options=options).kernels[0].source
    assert "sb_rd" not in source
    for lp in (lp for lp in low.loads if lp.buf.ring):
        for tid in range(low.threads):
            assert _carried(source, low, lp, tid) == _expected(low, lp, tid), (lp.fn, tid)


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc not on the PATH")
def test_carried_sources_compile_without_spills() -> None:
    sources = [(k.entry, k.source) for g, o in CASES for k in generate(g, arch="sm_80", options=o).kernels]
    assert all("addr_" in s for _, s in sources)
    compiled = compile_check(sources, "sm_80", jobs=2)
    assert all(c.spills == 0 for c in compiled), [(c.registers, c.spills) for c in compiled]
