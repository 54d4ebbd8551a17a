"""The lowered-form emulator (prism/codegen/emulate.py) against the μGraph interpreter, on the CPU.

For hand plans, searched templates and zoo plans at several legal sizes, the emulator executes what
the CUDA renderer prints (block by block: cp.async copies and ring stages, warp and k-split
matmuls with each lane's ldmatrix address, guarded sweeps, shared-memory layout) and must give the
interpreter's outputs. The mutation tests re-introduce lowering bugs (a load guard off by one) and
assert that the emulator rejects each. (The width-8 fault of the H200 is not among them: the
emulator runs that kernel correctly, and so does the GPU at other, equivalent layouts; see
docs/codegen.md, "The width-8 fault".) Programs run at small sizes (the templates are size-free);
sizes are sampled cheaply (:func:`cheap_sizes`). CI: every hand plan, and every searched template
of the programs whose search takes seconds; ``-m slow``: every searched template of the five
benchmark programs and of the whole zoo.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Callable, Iterator
from dataclasses import replace

import numpy as np
import pytest

from bench.zoo import ZOO, zoo_graph
from prism import interpreter, pipeline, plans, workloads
from prism.codegen import emulate as emulate_mod
from prism.codegen import emulate_mma, lower, lowered
from prism.codegen.arch import arch
from prism.codegen.emulate import EmulationError, emulate
from prism.codegen.lower import Options
from prism.codegen.sizes import sample_legal_sizes
from prism.errors import CodegenError
from prism.graph import Graph
from prism.ir import Accum, CustomKernel, KernelGraph, Load, MatmulOp, Save, UnaryOp
from prism.ops import Unary
from prism.reference import relative_error

# the five benchmark programs at small sizes (the templates do not depend on the sizes)
SMALL: dict[str, dict[str, int]] = {
    "rmsnorm_linear": {"n": 8, "d": 128},
    "rmsnorm_mlp": {"n": 8, "d": 128},
    "swiglu": {"n": 16, "d": 128},
    "gqa": {"batch": 1, "group": 8, "kv_len": 64, "head_dim": 32},
    "qknorm_gqa": {"batch": 1, "group": 8, "kv_len": 64, "head_dim": 32},
}
MAX_WORK = 64  # CI: sizes with at most this many block iterations (blocks x loop), per kernel graph


def _work(kg: KernelGraph) -> int:
    return sum(math.prod(int(g) for g in k.grid) * int(k.loop) for k in kg.kernels if isinstance(k, CustomKernel))


def cheap_sizes(template: KernelGraph, count: int, max_work: int | None = MAX_WORK) -> list[dict[str, int]]:
    """Up to ``count`` legal sizes spread over the cheap ones (first, middle, last by work), from a
    pool of at most 16: the first legal sizes in ascending order and a sample seeded by the
    template's text (deterministic; the legal sizes are never all enumerated)."""
    seed = int(hashlib.sha256(template.dumps().encode()).hexdigest()[:12], 16)
    pool = [*sample_legal_sizes(template, arch="sm_80", count=8),
            *sample_legal_sizes(template, arch="sm_80", count=8, rng=random.Random(seed))]
    unique = list({tuple(sorted(s.items())): s for s in pool}.values())
    costed = sorted(unique, key=lambda s: (_work(template.instantiate(s)), sorted(s.items())))
    if max_work is not None:
        costed = [s for s in costed if _work(template.instantiate(s)) <= max_work] or costed[:1]
    if len(costed) <= count:
        return costed
    return [costed[round(k * (len(costed) - 1) / (count - 1))] for k in range(count)] if count > 1 else costed[:1]


def inputs_of(kg: KernelGraph, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {t.name: rng.standard_normal(t.shape) * 0.5 for t in kg.inputs}


def emulate_error(kg: KernelGraph, options: Options | None = None) -> float:
    """Largest relative error of the emulated outputs against the interpreter's."""
    ins = inputs_of(kg)
    got, want = emulate(kg, ins, options=options), interpreter.run(kg, ins)
    return max(relative_error(got[n], want[n]) for n in want)


def _hand(program: str) -> Iterator[tuple[str, KernelGraph]]:
    g = workloads.program(program, **SMALL[program])
    for pi, t in enumerate(plans.codegen_plans(program, g)):
        yield f"{program}:p{pi}", t


def _check_all(items: list[tuple[str, KernelGraph]], count: int, max_work: int | None, strict: bool = True) -> int:
    """Emulate each template at up to ``count`` cheap sizes against the interpreter; fails listing
    every mismatch and emulation error (not only the first), and, when ``strict``, every template
    for which no legal size was found. Returns the number of runs."""
    ran, bad, unsized = 0, [], []
    for label, t in items:
        sampled = cheap_sizes(t, count, max_work)
        if not sampled:
            unsized.append(label)
            if strict:
                bad.append((label, {}, "no legal size found"))
        for sizes in sampled:
            ran += 1
            try:
                err = emulate_error(t.instantiate(sizes))
            except EmulationError as e:
                bad.append((label, sizes, str(e)))
                continue
            if not err < 1e-9:
                bad.append((label, sizes, err))
    assert not bad, f"{len(bad)} of {ran} runs wrong: {bad[:10]}"
    if unsized:
        print(f"no legal size found for {len(unsized)} templates: {unsized[:10]}")
    return ran


@pytest.mark.parametrize("program", list(SMALL))
def test_hand_plans_emulate_like_the_interpreter(program: str) -> None:
    assert _check_all(list(_hand(program)), 3, MAX_WORK) >= 3


@pytest.mark.parametrize("program", list(SMALL))
def test_rotated_loop_order_emulates_like_the_interpreter(program: str) -> None:
    """``Options(rotate=3)``: blocks in 3 phases start their loops at different iterations (the
    loaded tile is that of ``(it + rot) % loop``); the accumulators give the same outputs."""
    opts = Options(rotate=3)
    rotated = 0
    for _, t in _hand(program):
        for s in cheap_sizes(t, 3):
            kg = t.instantiate(s)
            lows = [k for k in lower.lower_graph(kg, arch("sm_80"), opts).kernels if k is not None]
            rotated += any(k.rotation(b) for k in lows for b in range(k.blocks))
            assert emulate_error(kg, opts) < 1e-9, s
    assert rotated, f"{program}: no rotated kernel at the sampled sizes"


def _searched(g: Graph, program: str) -> list[tuple[str, KernelGraph]]:
    out = pipeline.search_and_verify(g, program=program, progress=False)
    return [(f"{program}:{src.value}{n}", t) for n, (t, src) in enumerate(zip(out.templates, out.sources, strict=True))
            if any(isinstance(k, CustomKernel) for k in t.kernels)]


# zoo programs with a matmul: their small sizes (dims of 8) admit no mma tile (k a multiple of 16),
# so they run at these instead
EMULATOR_SIZES = {"n": 8, "d": 64, "f": 64, "r": 16, "b": 2, "s": 4, "batch": 1, "group": 8, "kv_len": 64,
                  "head_dim": 32}


def _graph(name: str) -> Graph:
    """A benchmark program at its small sizes, or a zoo program (with a matmul: at EMULATOR_SIZES)."""
    if name in SMALL:
        return workloads.program(name, **SMALL[name])
    p = ZOO[name]
    if p.family in ("matmul", "attention") or "matmul" in name:
        return p.build(**{k: EMULATOR_SIZES[k] for k in p.small}, dtype="float16")
    return zoo_graph(name)


# CI: every template the search returns on these programs (searches of seconds on 2 cores), 2 cheap
# sizes each; the other benchmark programs are covered in CI by their hand plans (above), and every
# searched template of all of them and of the whole zoo by the slow sweep below.
FAST_SEARCH = ("swiglu", "silu_mul", "bias_gelu", "rms_norm", "row_scale")


@pytest.mark.parametrize("name", FAST_SEARCH)
def test_searched_templates_emulate_like_the_interpreter(name: str) -> None:
    items = _searched(_graph(name), name)
    assert items, f"{name}: no generated template"
    assert _check_all(items, 2, MAX_WORK) >= len(items)


@pytest.mark.slow  # every searched template of the five benchmark programs (and their hand plans) and of the zoo
@pytest.mark.timeout(7200)
@pytest.mark.parametrize("name", ["swiglu", "rmsnorm_linear", "rmsnorm_mlp", *(n for n in ZOO if n not in SMALL),
                                  "gqa", "qknorm_gqa"])  # the two with thousands of templates last
def test_every_searched_template_emulates_like_the_interpreter(name: str) -> None:
    items = _searched(_graph(name), name) + (list(_hand(name)) if name in SMALL else [])
    print(f"{name}: {len(items)} templates, {_check_all(items, 3, MAX_WORK, strict=False)} runs")


def _guard_off_by_one(items: int, threads: int) -> lowered.Sweep:
    """``e < items`` printed as ``e <= items``."""
    return lowered.Sweep(items, threads, items + 1 if items % threads else None)


def _a_unswizzled(plan: lowered.MmaPlan, buf: lowered.Buf, *args: object) -> object:
    """The A operand's ldmatrix addresses as if its tile were not swizzled (the loader still permutes)."""
    return _A_ADDRESSES(plan, replace(buf, swizzle=False), *args)


def _read_unswizzled(self: object, b: lowered.Buf, idx: list[object]) -> object:
    """Expression reads (the Σx² of rmsnorm) that ignore a tile's swizzle."""
    return emulate_mod.offset(b.strides, idx)


_A_ADDRESSES = emulate_mma.a_addresses

# (what is patched, the buggy stand-in)
MUTATIONS: dict[str, tuple[object, str, Callable[..., object]]] = {
    "guard off by one": (lower, "sweep", _guard_off_by_one),
    "A ldmatrix ignores the swizzle": (emulate_mma, "a_addresses", _a_unswizzled),
    "expression read ignores the swizzle": (emulate_mod._Block, "tile_offset", _read_unswizzled),
}


def _swizzled_operand_kernel() -> KernelGraph:
    """X [32, 64] by rows over 2 blocks: X @ W, and X² elementwise. X's tile is swizzled (an mma A
    operand) and also read position by position (unlike rmsnorm's Σx², which a permutation within a
    row leaves unchanged)."""
    g = Graph()
    x, w = g.input((32, 64), name="X"), g.input((64, 64), name="W")
    g.output(g.matmul(x, w), name="O")
    g.output(g.square(x), name="Y")
    ops = (Load("X", (0,)), Load("W", (None,)), MatmulOp(0, 1), Accum(2), Save(3, "O", (0,)),
           UnaryOp(Unary.SQUARE, 0), Accum(5), Save(6, "Y", (0,)))
    return KernelGraph.of(g, "swizzled_operand", [CustomKernel("k0", ("x",), 1, ops)]).instantiate({"x": 2})


def test_operand_tile_read_by_expressions_is_swizzled() -> None:
    """A tile read by ldmatrix (as A or B) and by expressions is swizzled; every reader agrees."""
    kg = _swizzled_operand_kernel()
    low = lower.lower_graph(kg, arch("sm_80")).kernels[0]
    assert low is not None and low.bufs[0].swizzle and low.bufs[1].swizzle
    assert emulate_error(kg) < 1e-9


def test_unit_batch_operand_tiles_are_swizzled() -> None:
    """A batched matmul's operand tiles whose batch dim the grid maps ([1, rows, cols]: attention's K
    and V) are swizzled like 2-D tiles (no pad: more pipeline stages fit), and emulate like the
    interpreter; a batch of two stays padded."""
    assert lower.swizzles((1, 64, 32), 2) and lower.swizzles((1, 1, 32, 64), 2)
    assert not lower.swizzles((2, 64, 32), 2) and not lower.swizzles((1, 1, 64), 2)
    g = workloads.program("gqa", **SMALL["gqa"])
    split = plans.codegen_plans("gqa", g)[2]
    checked = 0
    for sizes in cheap_sizes(split, 3):
        kg = split.instantiate(sizes)
        low = lower.lower_graph(kg, arch("sm_80")).kernels[0]
        assert low is not None
        swizzled = [b for b in low.bufs.values() if b.swizzle and len(b.shape) == 3]
        assert swizzled and all(b.shape[0] == 1 and b.pitch == b.shape[-1] for b in swizzled)
        assert emulate_error(kg) < 1e-9
        checked += 1
    assert checked


@pytest.mark.parametrize("name", list(MUTATIONS))
def test_emulator_rejects_lowering_bugs(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each bug, patched into the lowering, makes some hand plan (or the swizzled-operand kernel)
    fail in the emulator."""
    where, attr, bad = MUTATIONS[name]
    cases = [(label, t.instantiate(s)) for p in ("rmsnorm_linear", "gqa") for label, t in _hand(p)
             for s in cheap_sizes(t, 3)] + [("swizzled operand", _swizzled_operand_kernel())]
    for _, kg in cases:  # sound before the mutation
        assert emulate_error(kg) < 1e-9
    monkeypatch.setattr(where, attr, bad)
    caught = 0
    for _, kg in cases:
        try:
            caught += emulate_error(kg) > 1e-6
        except (EmulationError, CodegenError):
            caught += 1
    assert caught > 0, name


def test_emulation_error_names_the_tile(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lower, "sweep", _guard_off_by_one)
    _, t = next(_hand("rmsnorm_linear"))
    errors = []
    for s in cheap_sizes(t, 5, None):
        try:
            emulate_error(t.instantiate(s))
        except EmulationError as e:
            errors.append(str(e))
    assert errors and any("is outside" in e for e in errors), errors


def test_one_iteration_accumulators_are_read_in_place() -> None:
    """rms_norm's searched templates run a for-loop of one iteration (no matmul): their element-wise
    accumulators hold their one value, so lowering reads them in place (no registers, no tile), the
    tiles after the loop follow the loop's instead of reusing them, and the emulation (whose shared
    memory model fails on a read of an overwritten tile) still matches the interpreter."""
    items = _searched(_graph("rms_norm"), "rms_norm")
    inlined = 0
    for label, t in items:
        for sizes in cheap_sizes(t, 1, MAX_WORK):
            kg = t.instantiate(sizes)
            gl = lower.lower_graph(kg, arch("sm_80"))
            off = lower.lower_graph(kg, arch("sm_80"), Options(inline_accums=False))
            for low, low_off in zip(gl.kernels, off.kernels, strict=True):
                assert low is not None and low_off is not None and low.loop == 1
                if not low.reads_loop_tiles_after:
                    continue
                inlined += 1
                rows = low.tiles[0]  # the loaded [rows, d] tile: accumulators of that size are read in place
                ew = [i for i, op in enumerate(low.kernel.ops) if isinstance(op, Accum) and op.reduce_dim is None]
                assert all(low.stores[i] is lowered.Store.INLINE and i not in low.accs
                           for i in ew if low.tiles[i] == rows), label
                assert all(low_off.stores[i] is lowered.Store.ACC for i in ew)
                loop_end = max((b.offset + b.nbytes for b in low.all_bufs().values() if b.region is not lowered.Phase.POST),
                               default=0)
                assert all(b.offset >= loop_end for b in low.bufs.values() if b.region is lowered.Phase.POST), label
            for options in (None, Options(inline_accums=False)):
                assert emulate_error(kg, options) < 1e-6, (label, sizes, options)
    assert inlined >= 3


def test_the_softmax_family_reads_its_one_iteration_accumulators_in_place_unless_told_not_to() -> None:
    """A kernel that reduces and runs exp over whole rows reads its one-iteration element-wise
    accumulators in place (``Options.inline_special``, on) and keeps them with the option off
    (lower._is_its_value); the kernels emulate like the interpreter either way."""
    items = _searched(_graph("softmax"), "softmax")
    assert items
    kept = Options(inline_special=False)
    seen = 0
    for label, t in items:
        for sizes in cheap_sizes(t, 1, MAX_WORK):
            kg = t.instantiate(sizes)
            low = lower.lower_graph(kg, arch("sm_80")).kernels[0]
            off = lower.lower_graph(kg, arch("sm_80"), kept).kernels[0]
            assert low is not None and off is not None and low.loop == 1 and not off.reads_loop_tiles_after, label
            ew = [i for i, op in enumerate(low.kernel.ops) if isinstance(op, Accum) and op.reduce_dim is None]
            seen += len(ew)
            assert all(low.stores[i] is lowered.Store.INLINE for i in ew), label
            assert all(off.stores[i] is lowered.Store.ACC for i in ew), label
            for options in (None, kept):
                assert emulate_error(kg, options) < 1e-6, (label, options)
    assert seen > 0
