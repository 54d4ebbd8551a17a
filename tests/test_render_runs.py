"""Runs of consecutive elements read with vector shared loads (``render_expr.RunReads``) and written with
one store (``render_save.materialise_vec``): which tiles qualify, and the C each emits."""

from __future__ import annotations

from typing import cast

from prism.codegen.lowered import Buf, KernelLowering, Phase, Storage
from prism.codegen.render_expr import Exprs, RunReads, with_last
from prism.codegen.render_save import materialise_vec


def _buf(dtype: Storage = Storage.HALF, pitch: int = 80, **kw: object) -> Buf:
    return Buf("s_X", Phase.LOOP, dtype, (16, 64), pitch, **kw)  # type: ignore[arg-type]


def _reads(b: Buf, vec: int = 8) -> tuple[list[str], list[str]]:
    rr = RunReads(Exprs(cast(KernelLowering, None)), "c", vec, "v")
    reads = [rr.buf_read(b, with_last(["r", "c"], k)) for k in range(vec)]
    assert rr.buf_read(b, ["r", "c + 3"]) == reads[3]  # a second read of the run reuses its registers
    return rr.loads, reads


def test_a_run_of_halves_is_one_vector_load_into_words() -> None:
    loads, reads = _reads(_buf())
    assert loads == ["unsigned v0[4];", "ld_run(v0, reinterpret_cast<const unsigned*>(s_X + r * 80 + c));"]
    assert reads[0] == "hload((half_t)v0[0])" and reads[5] == "hload((half_t)(v0[2] >> 16))"


def test_a_run_of_floats_and_a_swizzled_run_inside_one_chunk() -> None:
    loads, reads = _reads(_buf(Storage.F32, pitch=68), vec=4)
    assert loads == ["float v0[4];", "ld_run(v0, s_X + r * 68 + c);"] and reads[2] == "v0[2]"
    loads, _ = _reads(_buf(pitch=64, swizzle=True))
    assert loads[1] == "ld_run(v0, reinterpret_cast<const unsigned*>(s_X + r * 64 + (c ^ ((r % 8) * 8))));"


def test_tiles_whose_runs_are_not_aligned_are_read_element_by_element() -> None:
    for b in (_buf(pitch=76), _buf(copies=2), _buf(offset=8)):  # rows of 152 B; partial copies; base off 16 B
        loads, reads = _reads(b)
        assert loads == [] and "[" in reads[1] and "v0" not in reads[1]
    loads, reads = _reads(_buf(pitch=64, swizzle=True), vec=16)  # a run of 16 halves crosses a chunk
    assert loads == [] and "^" in reads[9]


def test_a_lane_index_that_is_not_the_run_is_read_as_before() -> None:
    rr = RunReads(Exprs(cast(KernelLowering, None)), "c", 8, "v")
    assert rr.buf_read(_buf(), ["r", "0"]) == "hload(s_X[r * 80])" and rr.loads == []
    whole = RunReads(Exprs(cast(KernelLowering, None)), "0", 8, "v")  # a tile of one run: literal indices
    assert whole.buf_read(_buf(), ["r", "7"]) == "hload((half_t)(v0[3] >> 16))"


def test_materialising_passes_store_the_widest_aligned_run() -> None:
    dst = Buf("ew", Phase.LOOP, Storage.HALF, (16, 64), 72)
    assert materialise_vec((16, 64), dst) == 8
    assert materialise_vec((16, 64), Buf("ew", Phase.LOOP, Storage.HALF, (16, 64), 68)) == 4
    assert materialise_vec((16, 6), Buf("ew", Phase.LOOP, Storage.HALF, (16, 6), 72)) == 2
    assert materialise_vec((16, 64), Buf("ew", Phase.LOOP, Storage.HALF, (16, 64), 64, swizzle=True)) == 1
