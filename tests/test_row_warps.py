"""Row kernels (no main loop, no matmul, program inputs only) get a warp count sized to their tile
(``lower._row_warps``): a thread per 8-element run of the largest loaded tile, 4 to 16 warps, at most
one warp per row where several rows are reduced. Checked by the count chosen, by the lowered-IR
emulator against the interpreter at those counts, and by nvcc where installed."""

from __future__ import annotations

import re

import numpy as np
import pytest
from row_cases import at_rows, row_vendor_at

from prism import interpreter
from prism.codegen import Options, generate
from prism.codegen.arch import arch as get_arch
from prism.codegen.emulate import emulate
from prism.codegen.lower import DEFAULT_OPTIONS, DirectLoads, lower_graph
from prism.codegen.nvcc import compile_check, nvcc_path
from prism.graph import Graph
from prism.ir import KernelGraph
from prism.ops import Reduce
from prism.reference import relative_error
from prism.rowwise import row_plan


def _rows_per_block(g: Graph, rows: int) -> KernelGraph:
    """The row-wise plan with ``rows`` rows a block."""
    kg = row_plan(g)
    assert kg is not None
    n = g.inputs[0].shape[0]
    return at_rows(kg, n // rows)


def _warps(kg: KernelGraph, options: Options = DEFAULT_OPTIONS) -> int:
    (low,) = [k for k in lower_graph(kg, get_arch("sm_80"), options).kernels if k is not None]
    return low.warps


def _norm(n: int, d: int) -> Graph:
    g = Graph()
    g.output(g.mul(g.rms_norm(g.input((n, d), "float16", "X")), g.input((1, d), "float16", "W")), "O")
    return g


@pytest.mark.parametrize(("n", "d", "rows", "want"), [
    (4, 4096, 1, 16),  # a 4096-wide row a block: 512 runs of 8
    (8, 4096, 8, 8),   # eight rows a block: one warp a row
    (8, 4096, 2, 4),   # two rows: at most 4 (the default)
    (4, 1024, 1, 4),   # 128 runs: 4 warps
    (4, 2048, 1, 8),
    (4, 3584, 1, 14),  # 448 runs: one a thread, not 8 warps striding runs of 2
    (4, 2560, 1, 10),
    (4, 768, 1, 4),    # 96 runs: at least 4 warps
    (8, 3584, 8, 8),
    (7, 3584, 7, 7),   # seven rows a block: one warp a row
    (8, 3584, 2, 4),
])
def test_a_norm_gets_a_warp_per_256_elements_of_its_row(n: int, d: int, rows: int, want: int) -> None:
    kg = _rows_per_block(_norm(n, d), rows)
    assert _warps(kg) == want
    assert _warps(kg, Options(row_warps=False)) == 4 and _warps(kg, Options(warps=2)) == 2


def test_row_kernels_at_their_warp_counts_match_the_interpreter() -> None:
    rng = np.random.default_rng(5)
    cases = [(_norm(4, 4096), 1), (_norm(8, 4096), 8), (_norm(4, 3584), 1), (_norm(7, 2560), 7)]
    g = Graph()
    x, y = g.input((4, 4096), "float16", "X"), g.input((4, 4096), "float16", "Y")
    g.output(g.mul(g.silu(x), y), "O")
    cases.append((g, 1))
    sources = []
    for graph, rows in cases:
        kg = _rows_per_block(graph, rows)
        assert _warps(kg) in (7, 8, 14, 16)
        inputs = {t.name: rng.standard_normal(t.shape) for t in graph.inputs}
        got, want = emulate(kg, inputs), interpreter.run(kg, inputs)
        assert all(relative_error(got[k], want[k]) < 1e-12 for k in want)
        k = generate(kg, arch="sm_80").kernels[0]
        assert k.block[0] == 32 * _warps(kg)
        sources.append((k.entry, k.source))
    if nvcc_path() is not None:
        assert len(compile_check(sources, "sm_80", jobs=1)) == len(sources)


def test_a_kernel_that_reads_a_generated_kernels_output_keeps_four_warps() -> None:
    """Only kernels whose loads are settled (program inputs, or outputs of predefined kernels such as
    a vendor GEMM's) count as row kernels: a generated kernel's output may be read by a combine fused
    into its launch, which shares its block size. The norm after a vendor GEMM gets its row's count;
    the second of two generated row kernels, reading the first's output, keeps 4."""
    from prism.ir import CustomKernel
    from prism.partition import partition, stitch

    g = Graph()
    y = g.matmul(g.input((4, 64), "float16", "X"), g.input((64, 4096), "float16", "W"))
    g.output(g.mul(g.rms_norm(y), g.input((1, 4096), "float16", "G")), "O")
    after_gemm = row_vendor_at(g, 4)
    assert _warps(after_gemm) == 16

    g = Graph()
    v = g.rms_norm(g.input((4, 4096), "float16", "X"))
    g.output(g.mul(g.silu(v), v), "O")
    parts = partition(g, max_ops=5)
    rows = [row_plan(p.graph) for p in parts]
    assert len(parts) == 2 and all(r is not None for r in rows)
    two = stitch(g, parts, rows, "two")  # type: ignore[arg-type]
    kg = at_rows(two, 4)
    _, second = [k for k in kg.kernels if isinstance(k, CustomKernel)]
    assert {op.tensor for op in second.loads} - {t.name for t in kg.inputs}  # reads the first's output
    warps = [low.warps for low in lower_graph(kg, get_arch("sm_80")).kernels if low is not None]
    assert warps == [16, 4]
    rng = np.random.default_rng(3)
    inputs = {"X": rng.standard_normal((4, 4096))}
    got, want = emulate(kg, inputs), interpreter.run(kg, inputs)
    assert relative_error(got["O"], want["O"]) < 1e-12


@pytest.mark.parametrize(("d", "rows", "opts", "run"), [
    (4096, 1, DEFAULT_OPTIONS, 8),          # 16 warps: one run of 8 a thread
    (4096, 1, Options(row_warps=False), 8),  # 4 warps: four runs of 8 a thread
    (1536, 1, DEFAULT_OPTIONS, 8),          # 6 warps: one run of 8 a thread
    (3584, 1, DEFAULT_OPTIONS, 8),          # 14 warps: one run of 8 a thread
    (1000, 1, DEFAULT_OPTIONS, 8),          # 125 runs of 8 over 4 warps: the last 3 threads idle
    (1000, 1, Options(warps=8), 4),         # 250 runs of 4 over 256 threads: one at most, as with 8
    (3584, 1, Options(warps=8), 8),         # 448 runs of 8 over 256 threads: two at most, not seven of 2
    (1002, 1, DEFAULT_OPTIONS, 2),          # 501 runs of 2
    (1001, 1, DEFAULT_OPTIONS, 1),          # no whole runs: element by element
])
def test_the_block_wide_reduction_reads_runs(d: int, rows: int, opts: Options, run: int) -> None:
    """A block-wide reduction (one row, every thread striding it) reads each thread's run of ``run``
    elements with one vector load (``render_reduce.block_run``) where the row is whole runs; threads
    past the last run take none."""
    kg = _rows_per_block(_norm(4, d), rows)
    src = generate(kg, arch="sm_80", options=opts).kernels[0].source
    walk = next(line for line in src.splitlines() if "the whole block on" in line)
    assert "sum over dim 1" in walk
    step = _warps(kg, opts) * 32 * run
    runs = -(-d // step)
    if run > 1:
        if runs == 1:  # one run a thread at most: one guarded pass, no loop
            assert f"const int r0 = tid * {run};" in src and "for (int r0 =" not in src
            assert (f"if (r0 < {d}) {{" in src) == (step > d)
            # the thread's run is read once, at the kernel start, under the pass's guard (EarlyReads)
            assert re.search(rf"unsigned early\d+\[{run // 2}\];", src) and not re.search(r"red\d+_v0", src)
            assert (f"if (tid * {run} < {d}) ld_run(early" in src) == (step > d)
        elif runs <= 4:  # a few runs a thread: an unrolled pass each, every run loaded at the kernel start
            assert f"for (int rj = 0; rj < {runs}; ++rj) {{" in src and f"const int r0 = tid * {run} + rj * {step};" in src
            assert re.search(rf"unsigned early\d+\[{runs}\]\[{run // 2}\];", src) and not re.search(r"red\d+_v0", src)
            assert (f"if (r0 < {d}) {{" in src) == (runs * step > d)
        else:
            assert f"for (int r0 = tid * {run}; r0 < {d}; r0 += {step})" in src
            assert re.search(rf"unsigned red\d+_v0\[{run // 2}\];", src)
    else:
        assert f"for (int r = tid; r < {d}; r += " in src and not re.search(r"red\d+_v0", src)
    rng = np.random.default_rng(6)
    inputs = {"X": rng.standard_normal((4, d)), "W": rng.standard_normal((1, d))}
    got, want = emulate(kg, inputs, options=opts), interpreter.run(kg, inputs)
    assert relative_error(got["O"], want["O"]) < 1e-12
    if nvcc_path() is not None:
        k = generate(kg, arch="sm_80", options=opts).kernels[0]
        assert len(compile_check([(k.entry, k.source)], "sm_80", jobs=1)) == 1


def test_a_block_wide_reduction_of_one_row_is_held_in_registers() -> None:
    """A block-wide reduction to one output leaves its value in every thread's register: each warp
    combines the partials itself, so the result needs no shared-memory tile and no barrier of its own
    (a one-row norm: the load's barrier and the partials' barrier). Two rows a block keep the
    published tile and its barrier; both emulate like the interpreter and compile."""
    one = _rows_per_block(_norm(4, 4096), 1)
    src = generate(one, arch="sm_80", options=Options(direct_loads=DirectLoads.NEVER)).kernels[0].source
    assert "the whole block on it, held by every thread" in src
    assert src.count("__syncthreads();") == 2
    (name,) = re.findall(r"float (red\d+)_r;", src)
    assert f"{name}[" not in src and src.count(f"{name}_r") >= 3  # declared, set, read by the saver
    two = _rows_per_block(_norm(4, 4096), 2)
    src2 = generate(two, arch="sm_80", options=Options(direct_loads=DirectLoads.NEVER)).kernels[0].source
    assert "the whole block on each" in src2 and "_r;" not in src2
    # both rows' warp values go to shared memory behind one barrier; one thread a row combines them
    reduction = src2[src2.index("the whole block on each"):src2.index("// save")]
    assert reduction.count("__syncthreads();") == 2 and "if (tid < 2) {" in reduction
    rng = np.random.default_rng(8)
    inputs = {"X": rng.standard_normal((4, 4096)), "W": rng.standard_normal((1, 4096))}
    for kg in (one, two):
        got, want = emulate(kg, inputs), interpreter.run(kg, inputs)
        assert relative_error(got["O"], want["O"]) < 1e-12
    if nvcc_path() is not None:
        ks = [generate(kg, arch="sm_80").kernels[0] for kg in (one, two)]
        assert len(compile_check([(k.entry, k.source) for k in ks], "sm_80", jobs=1)) == 2


def _softmax_rows(n: int, d: int) -> tuple[Graph, KernelGraph]:
    """Softmax one row a block, its denominator kept as a rescaled lane-group accumulator (a searched
    template's form)."""
    from prism.ir import Accum, BinaryOp, CustomKernel, Load, ReduceOp, Save, UnaryOp
    from prism.ops import Binary, Reduce, Unary

    g = Graph()
    g.output(g.softmax(g.input((n, d), "float16", "X"), -1), "O")
    ops = (Load("X", (0,), None), ReduceOp(Reduce.MAX, 0, 1), BinaryOp(Binary.SUB, 0, 1), UnaryOp(Unary.EXP, 2),
           Accum(3), Accum(3, reduce_dim=1, rescale=1), BinaryOp(Binary.DIV, 4, 5), Save(6, "O", (0,)))
    return g, KernelGraph.of(g, "softmax", [CustomKernel("k0", ("k0_x",), 1, ops)]).instantiate({"k0_x": n})


@pytest.mark.parametrize(("n", "d"), [(5, 768), (3, 3584), (4, 4096)])
def test_a_row_sum_accumulator_is_walked_by_the_whole_block(n: int, d: int) -> None:
    """A lane-group accumulator with one output a block is walked by every thread (one warp walked the
    row while the others idled), each keeping a partial; the partials of the rescaled sum are added after
    the loop, every warp adding them into a register (``KernelLowering.held``). Read in place
    (``DirectLoads.ROWS``), the loop of one iteration has no wait or barrier: two barriers in all (the
    max's partials, the sum's partials), the exponentials read in place (``Options.inline_special``);
    three with that option off (the epilogue's barrier for the exponentials' tile)."""
    g, kg = _softmax_rows(n, d)
    low = next(k for k in lower_graph(kg, get_arch("sm_80")).kernels if k is not None)
    assert low.accs[5].group == low.threads and low.held == {1, 5}
    src = generate(kg, arch="sm_80").kernels[0].source
    assert "the whole block, thread partials" in src and "a5_part" in src
    assert src.count("__syncthreads();") == 2 and "acc5_r" in src
    assert "cp_async_wait" not in src.split("extern \"C\"")[1]
    tile = generate(kg, arch="sm_80", options=Options(inline_special=False)).kernels[0].source
    assert tile.count("__syncthreads();") == 3
    rng = np.random.default_rng(11)
    inputs = {"X": rng.standard_normal((n, d))}
    both = (DEFAULT_OPTIONS, Options(direct_loads=DirectLoads.NEVER), Options(inline_special=False))
    for opts in both:
        got, want = emulate(kg, inputs, options=opts), interpreter.run(kg, inputs)
        assert relative_error(got["O"], want["O"]) < 1e-12
        assert relative_error(got["O"], g.evaluate(inputs)["O"]) < 1e-12
    if nvcc_path() is not None:
        ks = [generate(kg, arch="sm_80", options=o).kernels[0] for o in both]
        assert len(compile_check([(k.entry, k.source) for k in ks], "sm_80", jobs=1)) == 3


def test_independent_block_wide_accumulators_share_one_barrier() -> None:
    """A variance (``mean(x²) − mean(x)²``) searched as one kernel accumulates both sums over the row: their
    block-wide combines are written behind one barrier (``render_held_accs``), not one each, and the
    kernel still computes the program (emulated; compiled where nvcc is)."""
    from prism import pipeline
    from prism.codegen.sizes import generated_sizes

    g = Graph()
    x = g.input((4, 1024), "float16", "X")
    g.output(g.sub(g.mean(g.square(x), -1), g.square(g.mean(x, -1))), "O")
    found = None
    for t in pipeline.search_and_verify(g, program="variance", progress=False, cache=False).templates:
        kg = pipeline.bind_shapes(t, g)
        for sizes, _ in generated_sizes(kg):
            src = generate(kg.instantiate(sizes), arch="sm_80").kernels[0].source
            part = r"__shared__ __align__\(16\) float a\d+_part"
            if re.search(rf"{part}\[\d+\];\n\s*{part}", src):
                found = kg.instantiate(sizes), src
                break
        if found:
            break
    assert found is not None, "no searched kernel with two block-wide accumulators"
    kg, src = found
    merged = src[src.index("__shared__ __align__(16) float a"):]
    merged = merged[:merged.index("\n  }\n")]
    assert merged.count("__syncthreads();") == 1 and len(re.findall(r"acc\d+_r = \(", merged)) == 2
    rng = np.random.default_rng(8)
    inputs = {"X": rng.standard_normal((4, 1024))}
    assert relative_error(emulate(kg, inputs)["O"], interpreter.run(kg, inputs)["O"]) < 1e-9
    if nvcc_path() is not None:
        k = generate(kg, arch="sm_80").kernels[0]
        assert len(compile_check([(k.entry, k.source)], "sm_80", jobs=1)) == 1


@pytest.mark.parametrize("nw", [1, 2, 4, 6, 10, 14, 16, 32])
@pytest.mark.parametrize("fn", [Reduce.SUM, Reduce.MAX])
def test_the_warps_values_are_combined_once_each_from_float4_reads(nw: int, fn: Reduce) -> None:
    """Every thread combines a held reduction's warp values itself (``render_reduce._parts_sum``): the
    array is read as whole float4s (padded to them, 16-byte aligned), each of the ``nw`` values enters the
    tree once and no padding does; the tree's depth is log2(nw), not a 32-lane shuffle chain."""
    from prism.codegen.render_reduce import _parts_decl, _parts_sum

    assert _parts_decl("pp", nw).strip() == f"__shared__ __align__(16) float pp[{-(-nw // 4) * 4}];"
    *loads, expr = _parts_sum("pp", "pp_q", nw, fn, "out")
    assert loads == [f"const float4 pp_q{k} = reinterpret_cast<const float4*>(pp)[{k}];" for k in range(-(-nw // 4))]
    values = [float(3 ** w % 97) for w in range(-(-nw // 4) * 4)]
    padded = values[:nw] + [1e9] * (len(values) - nw)  # a padding value read would show
    env = {f"pp_q{k}": type("q", (), dict(zip("xyzw", padded[4 * k:4 * k + 4], strict=True)))
           for k in range(len(padded) // 4)}
    got = eval(expr.removeprefix("out = ").rstrip(";").replace("fmaxf", "max"), {"max": max}, env)
    assert got == (sum(values[:nw]) if fn is Reduce.SUM else max(values[:nw]))
    assert max(_depth(expr), 1) == max((nw - 1).bit_length(), 1)


def _depth(expr: str) -> int:
    depth = best = 0
    for ch in expr:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        best = max(best, depth)
    return best
