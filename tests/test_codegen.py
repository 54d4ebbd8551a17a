"""Code generation on the CPU: every hand plan generates, compiles with nvcc for sm_80, agrees with
``resources``; snapshots of two small programs; CodegenError for what cannot be lowered."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from prism import interpreter, plans, workloads
from prism.codegen import CodegenError, DirectLoads, LaunchPlan, Options, generate, resources
from prism.codegen.arch import arch as get_arch
from prism.codegen.nvcc import compile_check, nvcc_path
from prism.codegen.sizes import default_sizes, drawn_sizes, generated_sizes, size_score
from prism.errors import CompileError
from prism.graph import Graph
from prism.ir import Accum, CustomKernel, KernelGraph, Load, MatmulOp, Save, TensorSpec
from prism.reference import relative_error

SNAPSHOTS = Path(__file__).parent / "snapshots"


def _picks(template: KernelGraph, arch: str) -> list[dict[str, int]]:
    """Three legal size choices spread over the legal set (first, middle, last), deterministic."""
    legal = [s for s, _ in generated_sizes(template, arch)]
    assert legal, f"{template.program}: no legal sizes"
    idx = sorted({0, len(legal) // 2, len(legal) - 1})
    return [legal[i] for i in idx]


def _all_plans(arch: str = "sm_80", prior: bool = False) -> list[tuple[str, int, dict[str, int], LaunchPlan]]:
    """Every hand plan of every configuration at its ``_picks`` (listing every legal size: 35 s over the
    hand plans), or with ``prior`` at ``_prior_pick`` alone (the size the tuner draws first)."""
    out = []
    for cid, cfg in workloads.CONFIGS.items():
        g = cfg.build()
        for pi, template in enumerate(plans.codegen_plans(cfg.program, g)):
            for sizes in [_prior_pick(template, arch)] if prior else _picks(template, arch):
                out.append((cid, pi, sizes, generate(template.instantiate(sizes), arch=arch)))
    return out


def _prior_pick(template: KernelGraph, arch: str = "sm_80") -> dict[str, int]:
    """The static prior's best of the tuner's 16 seeded draws (``default_sizes`` scores every legal size:
    28 s over the hand plans)."""
    sms = get_arch(arch).sms
    drawn = drawn_sizes(template, arch, resources, 16)
    assert drawn, f"{template.program}: no legal sizes"
    return max(drawn, key=lambda sz: size_score(resources(template.instantiate(sz), arch), sms))


def test_every_hand_plan_generates_deterministically() -> None:
    for cid, cfg in workloads.CONFIGS.items():
        g = cfg.build()
        for template in plans.codegen_plans(cfg.program, g):
            kg = template.instantiate(_prior_pick(template))
            a, b = generate(kg, arch="sm_80"), generate(kg, arch="sm_80")
            assert a == b, cid
            counters = {b.name for b in a.buffers if b.dtype == "uint32"}
            for k in a.kernels:
                assert f"program {cfg.program}" in k.source and k.entry in k.source
                for t in k.args:
                    # named after the μGraph's tensors; a fused kernel's arrival counters are its last argument
                    assert (t in k.source) if t not in counters else (t == k.args[-1] and "prism_done" in k.source)


def _compile_hand_plans(items: list[tuple[str, int, dict[str, int], LaunchPlan]], least: int) -> None:
    sources = {k.entry: k.source for *_, plan in items for k in plan.kernels}
    assert len(sources) >= least
    compiled = compile_check(list(sources.items()), "sm_80", jobs=2)
    assert {c.entry for c in compiled} == set(sources)
    # the instructions the generator promises are in the sources
    text = "\n".join(sources.values())
    for needle in ("mma.sync.aligned.m16n8k16", "ldmatrix.sync.aligned", "cp.async.cg.shared.global",
                   "__shfl_xor_sync", "st_h8("):
        assert needle in text


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc is not installed on this machine")
def test_every_hand_plan_compiles_with_nvcc_sm80_at_its_prior_size() -> None:
    """Every hand plan at the size the tuner draws first; the test below (marked slow: a minute, most of
    it listing every legal size) compiles each at three sizes spread over its legal set."""
    _compile_hand_plans(_all_plans("sm_80", prior=True), 20)


@pytest.mark.slow
@pytest.mark.skipif(nvcc_path() is None, reason="nvcc is not installed on this machine")
def test_every_hand_plan_compiles_with_nvcc_sm80() -> None:
    _compile_hand_plans(_all_plans("sm_80"), 60)


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc is not installed on this machine")
def test_nvcc_error_is_located() -> None:
    cfg = workloads.config("rmsnorm_linear_d1024")
    plan = generate(plans.hand_plans(cfg.program, cfg.build())[0].instantiate({"x": 32, "i": 8}))
    k = plan.kernels[0]
    broken = k.source.replace("cp_async_commit();", "cp_async_commit() oops;", 1)
    with pytest.raises(CompileError) as e:
        compile_check([(k.entry, broken)], "sm_80", jobs=1)
    assert e.value.line is not None and "oops" in broken.splitlines()[e.value.line - 1]


@pytest.mark.parametrize("program", sorted(plans.SPLIT_K_PLANS))
def test_split_k_plans_match_reference_in_interpreter(program: str) -> None:
    g = workloads.program(program, **({"n": 8, "d": 64} if program == "rmsnorm_linear" else {"n": 16, "d": 64}))
    rng = np.random.default_rng(3)
    inputs = {t.name: rng.standard_normal(t.shape) * 0.5 for t in g.inputs}
    ref = g.evaluate(inputs)["O"]
    for make in plans.SPLIT_K_PLANS[program]:
        for d in ({"x": 2, "y": 2, "i": 2, "c": 4}, {"x": 4, "y": 4, "i": 1, "c": 2}, {"x": 1, "y": 8, "i": 2, "c": 1}):
            out = interpreter.run(make(g).instantiate(d), inputs)["O"]
            assert relative_error(out, ref) < 1e-12, (program, d)


def test_resources_agree_with_generate() -> None:
    for cid in ("rmsnorm_linear_d4096", "swiglu_d1024", "qknorm_gqa_h2048"):
        cfg = workloads.config(cid)
        g = cfg.build()
        for template in plans.hand_plans(cfg.program, g):
            syms = template.symbols
            for v in (1, 4, 16, 64, 256, 1024):
                sizes = dict.fromkeys(syms, v)
                if "x" in sizes:
                    sizes["x"] = max(1, min(v, 64))
                kg = template.instantiate(sizes)
                try:
                    res = resources(kg, "sm_80")
                except CodegenError:
                    with pytest.raises(CodegenError):
                        generate(kg, arch="sm_80")
                    continue
                plan = generate(kg, arch="sm_80")
                assert res.smem_bytes == plan.smem_bytes
                assert [k.smem_bytes for k in res.kernels] == [k.smem_bytes for k in plan.kernels]
                assert [k.threads for k in res.kernels] == [k.block[0] for k in plan.kernels]


def test_arch_budget() -> None:
    cfg = workloads.config("swiglu_d4096")
    template = plans.hand_plans(cfg.program, cfg.build())[0]
    kg = template.instantiate({"x": 256, "i": 4})  # Wg, Wu tiles [1024, 16] + X [16, 1024]: 2 stages > 163 KB
    with pytest.raises(CodegenError, match="shared memory"):
        resources(kg, "sm_80")
    with pytest.raises(CodegenError, match="shared memory"):
        generate(kg, arch="sm_80")
    assert resources(kg, "sm_90").smem_bytes > 163 * 1024  # fits the 227 KB of H100/H200, with opt-in
    big = generate(kg, arch="sm_90")
    assert big.kernels[0].smem_bytes > 48 * 1024


def test_narrow_mma_tiles_are_legal_only_with_the_option_and_compute_the_program() -> None:
    """``Options.narrow_mma``: an output tile of one n8 mma tile (1024/128 = 8 columns) lowers, and its
    lowered form computes the program; without the option the size is not legal (timed slower on an H100,
    docs/codegen.md, "Narrow matmul tiles")."""
    from prism.codegen.emulate import emulate

    cfg = workloads.config("rmsnorm_linear_d1024")
    graph = cfg.build()
    template = plans.hand_plans(cfg.program, graph)[0]
    narrow = Options(narrow_mma=True)
    sizes = {"x": 128, "i": 8}
    assert sizes not in [sz for sz, _ in generated_sizes(template, "sm_90")]
    assert sizes in [sz for sz, _ in generated_sizes(template, "sm_90", options=narrow)]
    x = cfg.random_inputs(3, graph)
    got = emulate(template.instantiate(sizes), x, arch="sm_90", options=narrow)
    assert relative_error(got["O"], graph.evaluate(x)["O"]) < 1e-9
    assert "mma" in generate(template.instantiate(sizes), arch="sm_90", options=narrow).kernels[0].source


def test_codegen_errors() -> None:
    cfg = workloads.config("rmsnorm_linear_d1024")
    template = plans.hand_plans(cfg.program, cfg.build())[0]
    with pytest.raises(CodegenError, match="multiple of 16"):
        generate(template.instantiate({"x": 8, "i": 128}))  # contraction tile 1024/128 = 8
    with pytest.raises(CodegenError, match="output width 4 is not a multiple of 16"):
        generate(template.instantiate({"x": 256, "i": 8}))  # output tile 1024/256 = 4 columns
    with pytest.raises(CodegenError, match="output width 8 is not a multiple of 16"):
        generate(template.instantiate({"x": 128, "i": 8}))  # one n8 tile: refused (faulted on the H200)
    with pytest.raises(CodegenError, match="symbolic"):
        generate(template)
    with pytest.raises(CodegenError, match="unknown target"):
        generate(template.instantiate({"x": 32, "i": 8}), arch="sm_70")
    with pytest.raises(CodegenError, match="warps"):
        generate(template.instantiate({"x": 32, "i": 8}), options=Options(warps=3))
    with pytest.raises(CodegenError, match="rotate"):
        generate(template.instantiate({"x": 32, "i": 8}), options=Options(rotate=-1))
    # float32 programs have no tensor-core path
    g = Graph()
    x = g.input((16, 64), "float32", "X")
    w = g.input((64, 64), "float32", "W")
    g.output(g.matmul(x, w), "O")
    kg32 = KernelGraph("mm32", tuple(TensorSpec(t.name, t.shape, t.dtype) for t in g.inputs),
                       (TensorSpec("O", (16, 64), "float32"),),
                       (CustomKernel("k0", (4,), 2, (Load("X", (None,), 1), Load("W", (1,), 0), MatmulOp(0, 1),
                                                        Accum(2), Save(3, "O", (1,)))),))
    with pytest.raises(CodegenError, match="float16"):
        generate(kg32)
    # a matmul after the loop is not supported
    post = KernelGraph("post_mm", (TensorSpec("X", (16, 64), "float16"), TensorSpec("W", (64, 64), "float16")),
                       (TensorSpec("O", (16, 64), "float16"),),
                       (CustomKernel("k0", (1,), 1, (Load("X", (None,), None), Load("W", (None,), None), Accum(0),
                                                     Accum(1), MatmulOp(2, 3), Save(4, "O", (1,)))),))
    with pytest.raises(CodegenError, match="after the for-loop"):
        generate(post)


def test_accumulator_register_limit() -> None:
    cfg = workloads.config("swiglu_d4096")
    template = plans.hand_plans(cfg.program, cfg.build())[0]
    with pytest.raises(CodegenError, match="registers"):  # two [16, 2048] fragment tiles: over 128 even with 8 warps
        resources(template.instantiate({"x": 2, "i": 256}), "sm_90")
    with pytest.raises(CodegenError, match="registers"):  # two [16, 1024] ones: over 128 with 4 warps
        resources(template.instantiate({"x": 4, "i": 256}), "sm_90", options=Options(warps=4))
    assert resources(template.instantiate({"x": 4, "i": 256}), "sm_90").kernels[0].threads == 256


def test_split_plan_has_float32_buffers_and_json() -> None:
    cfg = workloads.config("gqa_h2048")
    template = plans.hand_plans(cfg.program, cfg.build())[2]
    plan = generate(template.instantiate({"x": 2, "s": 32, "i": 2}), arch="sm_90", options=Options(fuse=False))
    assert [k.name for k in plan.kernels] == ["split", "combine"]
    assert {b.name: (b.shape, b.dtype) for b in plan.buffers} == {"N": ((2, 8, 128 * 32), "float32"),
                                                                   "D": ((2, 8, 32), "float32")}
    doc = json.loads(plan.dumps())
    assert doc["format"] == "prism.launch_plan"
    assert [s["entry"] for s in doc["steps"]] == [k.entry for k in plan.kernels]
    assert doc["steps"][0]["grid"] == [2, 32, 1] and doc["steps"][1]["grid"] == [2, 1, 1]
    assert plan.kernels[0].args == ("Q", "Kt", "V", "N", "D")


def test_split_plan_fuses_its_combine() -> None:
    """By default the split kernel and its combine are one launch of the split grid: every split block
    feeds combining block (x, 0) (grid dim y of the split is summed), 32 of them per combining block,
    through a uint32 counter per combining block."""
    cfg = workloads.config("gqa_h2048")
    template = plans.hand_plans(cfg.program, cfg.build())[2]
    kg = template.instantiate({"x": 2, "s": 32, "i": 2})
    plan, apart = generate(kg, arch="sm_90"), generate(kg, arch="sm_90", options=Options(fuse=False))
    (k,) = plan.kernels
    assert k.name == "split+combine" and k.grid == (2, 32, 1) == apart.kernels[0].grid
    assert k.smem_bytes == max(x.smem_bytes for x in apart.kernels)
    assert k.args == ("Q", "Kt", "V", "N", "D", "O", "done.combine")
    assert {b.name: (b.shape, b.dtype) for b in plan.buffers} == {
        "N": ((2, 8, 128 * 32), "float32"), "D": ((2, 8, 32), "float32"), "done.combine": ((2,), "uint32")}
    assert "arrive_last(prism_done + cb_lin, 32u" in k.source and "make_uint3(blockIdx.x, 0, 0)" in k.source
    assert "namespace split {" in k.source and "namespace combine {" in k.source


def _small_snapshot(name: str) -> str:
    if name == "rmsnorm_linear_small":
        g = workloads.program("rmsnorm_linear", n=8, d=64)
        kg = plans.hand_plans("rmsnorm_linear", g)[0].instantiate({"x": 2, "i": 2})
    else:
        g = workloads.program("gqa", batch=2, group=8, kv_len=64, head_dim=16)
        kg = plans.hand_plans("gqa", g)[2].instantiate({"x": 2, "s": 2, "i": 2})
    plan = generate(kg, arch="sm_80")
    return "\n".join(k.source for k in plan.kernels)


@pytest.mark.parametrize("name", ["rmsnorm_linear_small", "gqa_split_small"])
def test_snapshot(name: str) -> None:
    text = _small_snapshot(name)
    path = SNAPSHOTS / f"{name}.cu"
    if os.environ.get("PRISM_UPDATE_SNAPSHOTS") == "1" or not path.exists():
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(text)
        if not os.environ.get("PRISM_UPDATE_SNAPSHOTS"):
            pytest.fail(f"snapshot {path} was missing and has been written; rerun")
    assert text == path.read_text(), f"generated source changed; PRISM_UPDATE_SNAPSHOTS=1 to accept ({path})"


def test_emit_cli(tmp_path: Path) -> None:
    from prism.cli import main

    assert main(["emit", "gqa", "--config", "gqa_h1024", "--out", str(tmp_path)]) == 0
    dirs = sorted(p.name for p in (tmp_path / "gqa_h1024").iterdir())
    assert len(dirs) == 3 and any(d.startswith("p2_") for d in dirs)
    split = next((tmp_path / "gqa_h1024").glob("p2_*"))
    assert {p.name for p in split.iterdir()} == {"split+combine.cu", "plan.json"}  # fused: one launch
    doc = json.loads((split / "plan.json").read_text())
    assert [s["name"] for s in doc["steps"]] == ["split+combine"]
    assert main(["emit", "gqa", "--out", str(tmp_path)]) == 1  # a program needs --config
    assert main(["emit", "swiglu", "--config", "gqa_h1024", "--out", str(tmp_path)]) == 1


def test_a_kernel_whose_loop_would_do_nothing_has_none() -> None:
    """An element-wise kernel (loop of one, values read in place) copying its inputs to shared memory
    waits for its copies and synchronises once, in the prologue: no main loop, no drain, no epilogue
    barrier; reading them in place (the default for it) it has no barrier at all. A kernel that
    accumulates in its loop keeps all three."""
    from prism.rowwise import row_plan

    g = Graph()
    x, y = g.input((8, 64), "float16", "X"), g.input((8, 64), "float16", "Y")
    g.output(g.mul(g.silu(x), y), "O")
    kg = row_plan(g)
    assert kg is not None
    sized = kg.instantiate(default_sizes(kg, "sm_80"))
    copied = generate(sized, arch="sm_80", options=Options(direct_loads=DirectLoads.NEVER)).kernels[0]
    assert "for (int it = 0;" not in copied.source and copied.source.count("__syncthreads();") == 1
    direct = generate(sized, arch="sm_80").kernels[0]
    assert "for (int it = 0;" not in direct.source and "__syncthreads();" not in direct.source
    loop = plans.hand_plans("rmsnorm_linear", workloads.rmsnorm_linear(4, 32))[0]
    kept = generate(loop.instantiate(default_sizes(loop, "sm_80")), arch="sm_80").kernels[0].source
    assert "for (int it = 0;" in kept and kept.count("__syncthreads();") >= 3
    if nvcc_path() is not None:
        assert len(compile_check([(k.entry, k.source) for k in (direct, copied)], "sm_80", jobs=1)) == 2


def test_a_tile_whose_accumulators_do_not_fit_four_warps_gets_eight() -> None:
    """A 128x128 matmul tile beside a row reduction needs 136 accumulator registers per thread with 4
    warps (over the limit of 128): the block gets 8 warps (68 each), and its emulation matches the
    interpreter; with Options(warps=4) it is refused; a tile that fits 4 warps keeps 4."""
    from prism.codegen.emulate import emulate
    from prism.codegen.lower import lower_graph

    g = workloads.program("rmsnorm_linear", n=128, d=256)
    tmpl = plans.hand_plans("rmsnorm_linear", g)[0]
    big, small = tmpl.instantiate({"x": 2, "i": 4}), tmpl.instantiate({"x": 4, "i": 4})
    low = next(k for k in lower_graph(big, get_arch("sm_80")).kernels if k is not None)
    assert (low.warps, low.threads) == (8, 256)
    assert next(k for k in lower_graph(small, get_arch("sm_80")).kernels if k is not None).warps == 4
    with pytest.raises(CodegenError, match="accumulator"):
        generate(big, arch="sm_80", options=Options(warps=4))
    rng = np.random.default_rng(5)
    inputs = {t.name: rng.standard_normal(t.shape) * (0.06 if t.name == "W" else 1.0) for t in g.inputs}
    got, want = emulate(big, inputs)["O"], interpreter.run(big, inputs)["O"]
    assert relative_error(got, want) < 1e-12
    assert generate(big, arch="sm_80").kernels[0].block == (256, 1, 1)


def test_a_tile_whose_fragments_would_spill_at_four_warps_gets_eight() -> None:
    """A 128x128 mma tile needs 128 fragment registers per thread at 4 warps (within the accumulator
    limit, but 255 registers and spills on the H200): it gets 8 warps (64 each) and its emulation
    matches the interpreter; a 128x64 tile (64 at 4 warps) keeps 4; Options(warps=4) still gives 4."""
    from prism.codegen.emulate import emulate
    from prism.codegen.lower import FRAG_REGS, _frag_regs
    from tests.matmul_cases import matmul_graph
    from tests.test_warp_tiles import _kernel

    wide, narrow = matmul_graph(256, 256, 64, (2, 2), 2), matmul_graph(256, 256, 64, (2, 4), 2)  # 128x128, 128x64 blocks
    assert (_kernel(wide, Options()).warps, _frag_regs(_kernel(wide, Options()))) == (8, FRAG_REGS)
    assert (_kernel(narrow, Options()).warps, _frag_regs(_kernel(narrow, Options()))) == (4, FRAG_REGS)
    forced = _kernel(wide, Options(warps=4))
    assert (forced.warps, _frag_regs(forced)) == (4, 2 * FRAG_REGS)
    rng = np.random.default_rng(6)
    inputs = {t.name: rng.standard_normal(t.shape) for t in wide.inputs}
    assert relative_error(emulate(wide, inputs)["O"], interpreter.run(wide, inputs)["O"]) < 1e-12


def test_entry_names_depend_only_on_options_that_differ_from_the_defaults() -> None:
    """A kernel's entry name hashes the μGraph, the target and the non-default options only, so adding
    an option (with a default) renames no kernel; the snapshots above pin the default names."""
    from prism.codegen.generate import entry_name
    from prism.codegen.lower import lower_graph

    g = workloads.program("rmsnorm_linear", n=8, d=64)
    kg = plans.hand_plans("rmsnorm_linear", g)[0].instantiate({"x": 2, "i": 2})
    gl = lower_graph(kg, get_arch("sm_80"))
    k = next(k for k in gl.kg.kernels if isinstance(k, CustomKernel))
    names = {o: entry_name(gl, k, o) for o in (Options(), Options(fuse=True), Options(direct_loads=DirectLoads.NEVER))}
    assert names[Options()] == names[Options(fuse=True)] != names[Options(direct_loads=DirectLoads.NEVER)]


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc not on the PATH")
def test_compile_results_come_back_in_the_order_of_the_sources() -> None:
    from tests.matmul_cases import matmul_graph

    sources = [(k.entry, k.source) for kg in (matmul_graph(64, 64, 64, (1, 1), 1), matmul_graph(128, 64, 64, (1, 1), 2),
                                              matmul_graph(64, 128, 64, (1, 1), 2))
               for k in generate(kg, arch="sm_80").kernels]
    assert [c.entry for c in compile_check(sources, "sm_80", jobs=2, per_unit=2)] == [e for e, _ in sources]
