"""Random programs for the product's contract: ``superoptimize`` returns a plan that computes the program,
or a typed error, for any program the Graph API accepts (docs/hardening.md, "Random programs").

    PYTHONPATH=. python -m bench.fuzz --seeds 0:40 [--json out.json] [--nvcc]
    PYTHONPATH=. python -m bench.fuzz --seeds 0:40 --prepare   # searches into PRISM_CACHE_DIR, then on a GPU:
    PYTHONPATH=. python -m bench.fuzz --seeds 0:40 --cuda      # superoptimize there, callables vs float64
    PYTHONPATH=. python -m bench.fuzz --seeds 0:20 --sizes model --cuda --eager --compile  # and timed

Each program draws from every op family the Graph API has (element-wise, scalar, broadcast, reduction,
softmax and norm composites, matmuls with and without a transposed weight) at sizes that are and are not
powers of two, with one or two outputs. It runs through ``superoptimize`` on the CPU with
``EmulatorBackend``: every candidate the tuner checks and the plan it returns run in the emulator of the
generated code, and the returned plan is checked once more here against the float64 reference on inputs
of its own.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from prism.codegen.arch import arch as get_arch
from prism.codegen.emulate import emulate_lowering
from prism.codegen.lower import DEFAULT_OPTIONS, lower_graph
from prism.codegen.resources import resources
from prism.errors import DeviceError, PrismError
from prism.graph import Graph, Tensor
from prism.ir import CustomKernel, KernelGraph, validate
from prism.reference import relative_error
from prism.tune.backends import InterpreterBackend
from prism.tune.tolerance import tolerance
from prism.tune.tuner import default_scales, random_inputs

Op = Callable[[Graph, random.Random, list[Tensor], Tensor], Tensor | None]


def _positive(g: Graph, a: Tensor) -> Tensor:
    """A value > 0 from ``a``: what a log, sqrt, rsqrt or divisor takes."""
    return g.add_scalar(g.square(a), 0.5)


def _unary(g: Graph, rng: random.Random, vals: list[Tensor], a: Tensor) -> Tensor:
    name = rng.choice(("exp", "silu", "gelu", "gelu_erf", "square", "neg", "relu", "abs", "tanh", "sigmoid",
                       "erf", "sqrt", "rsqrt", "log", "mish", "softsign", "hardswish", "logsigmoid"))
    match name:
        case "gelu_erf":
            return g.gelu(a, approximate="none")
        case "sqrt" | "rsqrt" | "log":
            return getattr(g, name)(_positive(g, a))
        case "exp":
            return g.exp(g.tanh(a))  # bounded: chains of exps stay finite in float16
        case _:
            return getattr(g, name)(a)


def _scalar(g: Graph, rng: random.Random, vals: list[Tensor], a: Tensor) -> Tensor:
    c = rng.choice((0.5, -1.25, 2.0))
    match rng.choice(("scale", "add_scalar", "clamp", "maximum", "minimum", "leaky_relu", "elu", "softplus")):
        case "scale":
            return g.scale(a, c)
        case "add_scalar":
            return g.add_scalar(a, c)
        case "clamp":
            return g.clamp(a, -0.75, 0.5)
        case "maximum":
            return g.maximum(a, c)
        case "minimum":
            return g.minimum(a, c)
        case "leaky_relu":
            return g.leaky_relu(a, 0.1)
        case "elu":
            return g.elu(a)
        case _:
            return g.softplus(a, 2.0)


def _binary(g: Graph, rng: random.Random, vals: list[Tensor], a: Tensor) -> Tensor | None:
    b = rng.choice([v for v in vals if _broadcasts(v.shape, a.shape)] or [a])
    match rng.choice(("add", "sub", "mul", "div", "maximum", "minimum")):
        case "div":
            return g.div(a, _positive(g, b))
        case name:
            return getattr(g, name)(a, b)


def _broadcasts(b: tuple[int, ...], a: tuple[int, ...]) -> bool:
    return len(a) == len(b) and all(y in (1, x) for x, y in zip(a, b, strict=True))


def _reduce(g: Graph, rng: random.Random, vals: list[Tensor], a: Tensor) -> Tensor | None:
    dim = rng.choice([-1, *[k for k in range(a.rank - 1) if a.shape[k] > 1]])
    if a.shape[dim] == 1:
        return None
    return getattr(g, rng.choice(("sum", "max", "mean")))(a, dim)


def _row(g: Graph, rng: random.Random, vals: list[Tensor], a: Tensor) -> Tensor | None:
    if a.shape[-1] == 1:
        return None
    match rng.choice(("softmax", "log_softmax", "logsumexp", "rms_norm", "col_softmax")):
        case "col_softmax":
            return g.softmax(a, -2) if a.shape[-2] > 1 else None
        case name:
            return getattr(g, name)(a)


def _matmul(g: Graph, rng: random.Random, vals: list[Tensor], a: Tensor) -> Tensor | None:
    """``a`` times a weight (stored either way), or times a value of its rank whose last two dims fit:
    ``a @ b^T`` of two values of one shape (scores), then ``scores @ v`` (a weighted sum)."""
    weights = [v for v in vals if v.node.name in ("W", "Wt")]
    if weights and rng.random() < 0.5:
        w = rng.choice(weights)
        w = g.transpose(w) if w.node.name == "Wt" else w
        return g.matmul(a, w) if w.shape[0] == a.shape[-1] else None
    same = [v for v in vals if v.shape == a.shape and v.node.name not in ("W", "Wt")]
    rows = [v for v in vals if v.rank == a.rank and v.shape[:-2] == a.shape[:-2] and v.shape[-2] == a.shape[-1]
            and v.shape[-1] > 1]
    if rows and rng.random() < 0.5:
        return g.matmul(a, rng.choice(rows))
    return g.matmul(a, g.transpose(rng.choice(same))) if same and a.shape[-1] > 1 else None


def _transpose(g: Graph, rng: random.Random, vals: list[Tensor], a: Tensor) -> Tensor | None:
    """A transpose of a computed value (or an input): its last two dims swapped."""
    return g.transpose(a) if a.shape[-1] > 1 or a.shape[-2] > 1 else None


OPS: tuple[tuple[float, Op], ...] = ((0.3, _unary), (0.15, _scalar), (0.25, _binary), (0.1, _reduce),
                                     (0.1, _row), (0.12, _matmul), (0.05, _transpose))


# row counts and widths the programs draw from: ``small`` (the default, what CI runs), ``large`` (the code
# generator's tiles, warps and loops at widths more like a model's; longer to emulate)
SIZES: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {"small": ((4, 12, 16), (16, 24, 64)),
                                                             "large": ((32, 48, 64), (128, 192, 512)),
                                                             # the sizes models run at: decode and prefill rows
                                                             "model": ((16, 256, 1024), (1024, 2048, 4096))}


def _lead(rng: random.Random) -> tuple[int, ...]:
    """A leading dim of 2 or 3 (heads, a batch) in a third of the programs, else none."""
    return (rng.choice((2, 3)),) if rng.random() < 0.33 else ()


def _dtype(seed: int) -> str:
    """float16 in three of four programs, else float32 or bfloat16, from a stream of its own (the programs
    of other seeds stay as they were drawn)."""
    return random.Random(-1 - seed).choice(("float16",) * 6 + ("float32", "bfloat16"))


def _weight(g: Graph, rng: random.Random, dt: str, name: str, k: int, m: int) -> Tensor:
    """A [k, m] weight, or stored [m, k] as nn.Linear keeps it and read through a transpose."""
    return g.input((k, m), dt, name) if rng.random() < 0.5 else g.transpose(g.input((m, k), dt, name))


def _layer_norm(g: Graph, x: Tensor) -> Tensor:
    """A layer norm written out, without gain."""
    c = g.sub(x, g.mean(x, -1))
    return g.mul(c, g.rsqrt(g.add_scalar(g.mean(g.square(c), -1), 1e-5)))


def random_program(seed: int, sizes: str = "small") -> Graph:
    """A random program: rows ([n, d], or [h, n, d] in a third of them), a broadcast row or column,
    a weight stored either way, float16 in three of four, else float32 or bfloat16; 2-7 ops of every
    family, the last value an output and, sometimes, an earlier one too."""
    rng = random.Random(seed)
    n, d = rng.choice(SIZES[sizes][0]), rng.choice(SIZES[sizes][1])
    lead = _lead(rng)
    dt = _dtype(seed)
    g = Graph()
    vals: list[Tensor] = [g.input((*lead, n, d), dt, "X")]
    for name, shape, p in (("Y", (*lead, n, d), 0.5), ("B", (*(1 for _ in lead), 1, d), 0.3),
                           ("C", (*lead, n, 1), 0.3)):
        if rng.random() < p:
            vals.append(g.input(shape, dt, name))
    if rng.random() < 0.5:
        vals.append(g.input((d, d), dt, "W") if rng.random() < 0.5 else g.input((d, d), dt, "Wt"))
    computed: list[Tensor] = []
    weights = sum(w for w, _ in OPS)
    while len(computed) < rng.randint(2, 7):
        r, pick = rng.random() * weights, OPS[-1][1]
        for w, op in OPS:
            if r < w:
                pick = op
                break
            r -= w
        a = rng.choice([v for v in [*vals, *computed] if v.node.name not in ("W", "Wt")])
        out = pick(g, rng, [*vals, *computed], a)
        if out is not None:
            computed.append(out)
    g.output(computed[-1], "O")
    if len(computed) > 2 and rng.random() < 0.3:
        g.output(rng.choice(computed[:-2]), "O2")
    return g


# attention-shaped programs: query rows, key / value rows of another length, head dims (small, large, model)
ATTENTION_SIZES: dict[str, tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]] = {
    "small": ((1, 4, 16), (16, 24, 64), (16, 32)), "large": ((1, 8, 32), (128, 200, 512), (64, 128)),
    "model": ((1, 16, 128), (1024, 4000, 8192), (64, 128))}


def _scores_op(g: Graph, rng: random.Random, s: Tensor, mask: Tensor | None) -> Tensor:
    """One op on attention scores: a scale, the mask added, a soft cap, a unary op or a max subtracted."""
    match rng.choice(("scale", "mask", "softcap", "unary", "shift")):
        case "scale":
            return g.scale(s, rng.choice((0.125, 0.0884, 0.5)))
        case "mask" if mask is not None:
            return g.add(s, mask)
        case "softcap":
            return g.scale(g.tanh(g.scale(s, 1 / 30)), 30.0)
        case "unary":
            return _unary(g, rng, [], s)
        case _:
            return g.sub(s, g.max(s, -1))


def _probs(g: Graph, rng: random.Random, s: Tensor) -> Tensor:
    """Scores into weights: a softmax (as the op or written out), a sigmoid, or an exp of a bounded score."""
    match rng.choice(("softmax", "softmax", "written", "sigmoid", "exp", "log_softmax")):
        case "softmax":
            return g.softmax(s)
        case "written":
            e = g.exp(g.sub(s, g.max(s, -1)))
            return g.div(e, g.sum(e, -1))
        case "sigmoid":
            return g.sigmoid(s)
        case "exp":
            return g.exp(g.tanh(s))
        case _:
            return g.log_softmax(s)


def random_attention(seed: int, sizes: str = "small") -> Graph:
    """A random attention-shaped program: Q [n, d] against K, V [m, d] (lengths drawn apart, [h, ...] heads
    in a third), ops on Q or K before the scores, 0-3 ops on the scores (scale, soft cap, shift, unary; a
    drawn mask added among them), weights
    from them (softmax written either way, sigmoid, exp, log-softmax), the weighted sum of V, then 0-2 ops
    after it (an element-wise op with Q, a norm, a projection by a weight of another width); the scores or
    weights a second output sometimes. float16 in three of four programs, else float32 or bfloat16."""
    rng = random.Random(seed)
    ns, ms, ds = ATTENTION_SIZES[sizes]
    n, m, d = rng.choice(ns), rng.choice(ms), rng.choice(ds)
    lead = _lead(rng)
    dt = _dtype(seed)
    g = Graph()
    q, k, v = g.input((*lead, n, d), dt, "Q"), g.input((*lead, m, d), dt, "K"), g.input((*lead, m, d), dt, "V")
    mask = g.input((*(1 for _ in lead), n, m), dt, "M") if rng.random() < 0.3 else None
    if rng.random() < 0.4:
        q = rng.choice((g.rms_norm, g.silu, lambda t: g.scale(t, 0.125)))(q)
    if rng.random() < 0.25:
        k = rng.choice((g.rms_norm, g.tanh))(k)
    s = g.matmul(q, g.transpose(k))
    ops = rng.randint(0, 3)
    at = rng.randint(0, ops)  # where a drawn mask is added, among the ops on the scores
    for i in range(ops + 1):
        s = g.add(s, mask) if i == at and mask is not None else s
        s = _scores_op(g, rng, s, mask) if i < ops else s
    p = _probs(g, rng, s)
    o = g.matmul(p, v)
    for _ in range(rng.randint(0, 2)):
        match rng.choice(("residual", "norm", "project", "unary")):
            case "residual" if o.shape == q.shape:
                o = g.add(o, q)
            case "norm":
                o = g.rms_norm(o)
            case "project":
                width = rng.choice((16, 48)) if sizes == "small" else 2 * d  # (from the width o has: a second one too)
                o = g.matmul(o, g.input((o.shape[-1], width), dt, f"W{len(g.inputs)}"))
            case _:
                o = _unary(g, rng, [], o)
    g.output(o, "O")
    if rng.random() < 0.2:
        g.output(rng.choice((s, p)), "O2")
    return g


# MLP-shaped programs: rows, model width, hidden width (small, large, model)
MLP_SIZES: dict[str, tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]] = {
    "small": ((1, 4, 16, 24), (16, 32), (48, 64)), "large": ((1, 8, 64, 100), (128, 256), (384, 512)),
    "model": ((1, 16, 512, 1000), (1024, 2048), (2816, 4096))}


def _activation(g: Graph, rng: random.Random, h: Tensor) -> Tensor:
    name = rng.choice(("silu", "gelu", "gelu_erf", "relu", "squared_relu", "tanh", "sigmoid", "mish"))
    match name:
        case "gelu_erf":
            return g.gelu(h, approximate="none")
        case "squared_relu":
            return g.square(g.relu(h))
        case _:
            return getattr(g, name)(h)


def random_mlp(seed: int, sizes: str = "small") -> Graph:
    """A random MLP-shaped program: rows X [n, d] ([b, s, d] in a third), maybe a norm first (with or
    without its weight, RMS or layer norm written out), an up projection to the hidden width (a weight
    stored either way, a bias sometimes), an activation, gated by a second projection in half, a down
    projection back (or not), then maybe a residual add and a norm after; the hidden activations a second
    output sometimes."""
    rng = random.Random(seed)
    ns, ds, fs = MLP_SIZES[sizes]
    n, d, f = rng.choice(ns), rng.choice(ds), rng.choice(fs)
    lead = _lead(rng)
    dt = _dtype(seed)
    g = Graph()
    x = g.input((*lead, n, d), dt, "X")

    def weight(name: str, k: int, m: int) -> Tensor:
        return _weight(g, rng, dt, name, k, m)

    h = x
    match rng.choice(("none", "rms", "rms_weight", "layer")):
        case "rms":
            h = g.rms_norm(x)
        case "rms_weight":
            h = g.mul(g.rms_norm(x), g.input((*(1 for _ in lead), 1, d), dt, "G"))
        case "layer":
            h = _layer_norm(g, x)
        case _:
            pass
    up = g.matmul(h, weight("W1", d, f))
    if rng.random() < 0.3:
        up = g.add(up, g.input((*(1 for _ in lead), 1, f), dt, "B1"))
    a = _activation(g, rng, up)
    if rng.random() < 0.5:
        a = g.mul(a, g.matmul(h, weight("W3", d, f)))
    out = g.matmul(a, weight("W2", f, d)) if rng.random() < 0.8 else a
    if out.shape == x.shape and rng.random() < 0.5:
        out = g.add(out, x)
    if rng.random() < 0.2:
        out = g.rms_norm(out)
    g.output(out, "O")
    if out is not a and rng.random() < 0.15:
        g.output(a, "O2")
    return g


def _norm(g: Graph, rng: random.Random, x: Tensor, gain: Tensor) -> Tensor:
    """An RMS norm or a layer norm written out, times its gain."""
    if rng.random() < 0.7:
        return g.mul(g.rms_norm(x), gain)
    return g.mul(_layer_norm(g, x), gain)


def random_block(seed: int, sizes: str = "small") -> Graph:
    """A random decoder layer: X [n, d] against a cache K, V [m, d] (one head; weights stored either way),
    pre-norm or post-norm, attention with a mask or a scale and a softmax written either way, an output
    projection and a residual, then an MLP (gated or not, any activation) and a second residual. Tens of
    ops: more than a whole-program search takes, so parts, stitching and their tails are what runs."""
    rng = random.Random(seed)
    ns, ms, ds = ATTENTION_SIZES[sizes]
    n, m, d = rng.choice(ns), rng.choice(ms), rng.choice(ds)
    f = 2 * d
    dt = _dtype(seed)
    g = Graph()
    x, k, v = g.input((n, d), dt, "X"), g.input((m, d), dt, "K"), g.input((m, d), dt, "V")

    def weight(name: str, k: int, m: int) -> Tensor:
        return _weight(g, rng, dt, name, k, m)

    pre = rng.random() < 0.8
    h = _norm(g, rng, x, g.input((1, d), dt, "G1")) if pre else x
    s = g.matmul(g.matmul(h, weight("Wq", d, d)), g.transpose(k))
    s = g.add(s, g.input((n, m), dt, "M")) if rng.random() < 0.4 else g.scale(s, d ** -0.5)
    p = g.softmax(s) if rng.random() < 0.7 else _probs(g, rng, s)
    x2 = g.add(x, g.matmul(g.matmul(p, v), weight("Wo", d, d)))
    x2 = x2 if pre else _norm(g, rng, x2, g.input((1, d), dt, "G1"))
    h2 = _norm(g, rng, x2, g.input((1, d), dt, "G2")) if pre else x2
    a = _activation(g, rng, g.matmul(h2, weight("W1", d, f)))
    if rng.random() < 0.6:
        a = g.mul(a, g.matmul(h2, weight("W3", d, f)))
    out = g.add(x2, g.matmul(a, weight("W2", f, d)))
    g.output(out if pre else _norm(g, rng, out, g.input((1, d), dt, "G2")), "O")
    return g


# the program families ``--family`` draws from
FAMILIES: dict[str, Callable[[int, str], Graph]] = {"rows": random_program, "attention": random_attention,
                                                    "mlp": random_mlp, "block": random_block}


class EmulatorBackend(InterpreterBackend):
    """The CUDA backend's contract on the CPU: legal sizes by the code generator's resources, each plan
    lowered as ``generate`` lowers it when compiled (a CodegenError there is a failed compile, as
    NVRTC's would be) and run in the emulator of that lowering (predefined kernels in the interpreter),
    every tensor written rounded to its buffer's dtype as GPU memory holds it. A plan's 'time' is 1000
    per predefined kernel plus a digest of its text and sizes (under 1000): the tuner returns a
    generated plan wherever one passes its checks, a different one from program to program."""

    def __init__(self, *, stored: bool = True) -> None:
        super().__init__(_pseudo_time, arch="sm_80", resources=resources)
        self.stored = stored  # off: values in float64 throughout (the generated code's exact semantics)

    def compile(self, kg: KernelGraph) -> Any:
        kg = validate(kg)
        return kg, lower_graph(kg, get_arch("sm_80"), DEFAULT_OPTIONS)

    def time_us(self, kernel: Any) -> float:
        return float(self.timer(kernel[0]))

    def run(self, kernel: Any, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        return emulate_lowering(kernel[1], inputs, stored=self.stored)


def _pseudo_time(kg: KernelGraph) -> float:
    digest = int(hashlib.sha256(kg.dumps().encode()).hexdigest()[:6], 16) / 0x1000000 * 999
    return 1000.0 * sum(not isinstance(k, CustomKernel) for k in kg.kernels) + digest


@dataclass(frozen=True)
class Outcome:
    seed: int
    program: str  # the program's ops, in order
    result: str  # "plan" | "typed error" | "crash" | "wrong"
    seconds: float
    detail: str = ""  # the plan's source and kernels, the error, or the error of the plan


def _describe(g: Graph) -> str:
    return " ".join(n.kind.value if n.fn is None else n.fn.value for n in g.nodes)


def _outcome(seed: int, sizes: str, run: Callable[[Graph], tuple[str, str]], family: str = "rows") -> Outcome:
    """``run`` on program ``seed`` of ``family``: its (result, detail), a PrismError as "typed error", any
    other exception as "crash" (the contract: none escapes), with the seconds it took."""
    g = FAMILIES[family](seed, sizes)
    t0 = time.perf_counter()
    try:
        result, detail = run(g)
    except PrismError as e:
        result, detail = "typed error", f"{type(e).__name__}: {e}"
    except Exception:
        result, detail = "crash", traceback.format_exc(limit=6)
    return Outcome(seed, _describe(g), result, round(time.perf_counter() - t0, 2), detail)


def _kinds(kg: KernelGraph) -> str:
    """A plan's kernels for people: C for a generated one, P for a predefined one."""
    return ",".join(type(k).__name__[0] for k in kg.kernels)


def run_one(seed: int, search_budget: float = 3.0, returned: list[KernelGraph] | None = None,
            sizes: str = "small", family: str = "rows") -> Outcome:
    """``superoptimize`` of program ``seed`` and the check of what it returns (its plan appended to
    ``returned``, when given)."""
    from prism.pipeline import superoptimize

    def run(g: Graph) -> tuple[str, str]:
        res = superoptimize(g, samples=4, cache=False, progress=False, inductor=False, program=f"fuzz{seed}",
                            backend=EmulatorBackend(), search_budget=search_budget, time_budget=30)
        if returned is not None:
            returned.append(res.kernel_graph)
        try:
            return _checked(g, res.kernel_graph, seed, res.summary.get("plan_source"))
        except Exception:  # the returned plan does not run (a PrismError too): as bad as a crash
            return "crash", traceback.format_exc(limit=6)

    return _outcome(seed, sizes, run, family)


def _checked(g: Graph, kg: KernelGraph, seed: int, source: object) -> tuple[str, str]:
    """The returned plan against the float64 reference on inputs of its own, drawn as the tuner draws them
    (``default_scales``: weights N(0, 1/K); unscaled, a large MLP's outputs left float16's range and the
    bound was inf): its exact semantics (values in float64 throughout, error < 1e-6) and, its tensors
    held in their buffers' dtypes, within the tuner's bound. The plan is of the program ``superoptimize``
    searched, called as its callable calls it (``rows.program_callable``: [h, n, d] rows taken as [h·n, d],
    output transposes returned as views)."""
    from prism.rows import program_callable

    inputs = random_inputs(g, default_scales(g), seed + 1)
    want = g.evaluate(inputs)
    lowered = EmulatorBackend().compile(kg)[1]  # lowered once, emulated both ways

    def errors(stored: bool) -> float:  # the plan called like the program, as its callable is
        def run(**ins: np.ndarray) -> tuple[np.ndarray, ...]:
            res = emulate_lowering(lowered, ins, stored=stored)
            return tuple(res[t.name] for t in kg.outputs)
        got = program_callable(run, g)(**inputs)
        return max(relative_error(o, want[t.name]) for o, t in zip(got, g.outputs, strict=True))

    errs = [errors(False), errors(True)]
    bound = tolerance(g, inputs=inputs)
    detail = f"{source} [{_kinds(kg)}] error {errs[0]:.1e}, stored {errs[1]:.1e} (bound {bound:.1e})"
    return "plan" if errs[0] < 1e-6 and errs[1] <= bound else "wrong", detail


def prepare(seed: int, search_budget: float = 3.0, sizes: str = "small", family: str = "rows") -> Outcome:
    """The search of program ``seed`` into the search cache (this machine's CPU, z3 and egglog), for a
    later ``run_cuda`` on a GPU machine without them."""
    from prism.pipeline import search_and_verify
    from prism.rows import searched_graph

    def run(g: Graph) -> tuple[str, str]:  # the graph superoptimize searches: [h, n, d] rows merged
        out = search_and_verify(searched_graph(g), program=f"fuzz{seed}", progress=False, time_budget=search_budget)
        return "searched", json.dumps(out.to_json()["verified_by_source"])

    return _outcome(seed, sizes, run, family)


def run_cuda(seed: int, search_budget: float = 3.0, sizes: str = "small", eager: bool = False,
             compiled: bool = False, family: str = "rows") -> Outcome:
    """``superoptimize`` of program ``seed`` on the GPU (searches from the cache ``prepare`` filled), its
    callable run on torch tensors and compared with the float64 reference within the tuner's bound;
    with ``eager`` the callable and PyTorch eager timed as the bench times them (CUDA-graph replay);
    with ``compiled`` torch.compile too, and ``superoptimize`` with its default Inductor candidate."""
    import torch

    from prism.pipeline import superoptimize

    def run(g: Graph) -> tuple[str, str]:
        res = superoptimize(g, samples=8, progress=False, inductor=compiled, program=f"fuzz{seed}",
                            search_budget=search_budget)
        inputs = random_inputs(g, default_scales(g), seed + 1)
        got = res(**{t.name: torch.tensor(inputs[t.name], dtype=getattr(torch, t.dtype), device="cuda")
                     for t in g.inputs})
        got = got if isinstance(got, tuple | list) else (got,)
        want = g.evaluate(inputs)
        err = max(relative_error(o.double().cpu().numpy(), want[t.name]) for o, t in zip(got, g.outputs, strict=True))
        bound = tolerance(g, inputs=inputs)
        s = res.summary
        speedups = _speedups(g, res, eager, compiled) if err <= bound else {}  # a wrong callable is not timed
        timed = "".join(f", {system} {x:.2f}x" for system, x in speedups.items())
        return "plan" if err <= bound else "wrong", (
            f"{s.get('plan_source')} [{_kinds(res.kernel_graph)}] error {err:.1e} bound {bound:.1e} "
            f"{s.get('best_us', 0):.2f} us{_versus(s)}, search cached {s.get('search_cache_hit')}{timed}")

    return _outcome(seed, sizes, run, family)


def _versus(summary: Mapping[str, Any]) -> str:
    """The times of superoptimize's comparison with PyTorch's kernels, where it timed them (the plan in
    brackets is the generated one, also where PyTorch's was returned)."""
    v = summary.get("inductor") or {}
    timed = [f"{k} {v[k + '_us']:.2f} us" for k in ("inductor", "eager") if v.get(k + "_us") is not None]
    if v.get("generated_us") is None or not timed:
        return ""
    return f" (generated {v['generated_us']:.2f} us, {', '.join(timed)})"


def _speedups(g: Graph, fast: Any, eager: bool, compiled: bool) -> dict[str, float]:
    """Each baseline's time (PyTorch eager, torch.compile) over the callable's, all timed by the bench's
    protocol (``bench.zoo_bench``): baseline name -> speedup."""
    if not (eager or compiled):
        return {}
    from bench.zoo_bench import Runner
    from prism.tune.timing import Timed, interleaved_time_us

    runner, scales = Runner(samples=8, seed=0), default_scales(g)
    systems = [s for s, on in (("eager", eager), ("compile", compiled)) if on]
    fns = {"prism": fast, **{s: runner.system_fn(g, f"fuzz-{s}", s, {}) for s in systems}}
    got = interleaved_time_us({s: Timed(fn, lambda i: runner.copy(g, scales, i)) for s, fn in fns.items()})
    if got.errors:
        raise DeviceError(f"timing failed: {got.failures()}")
    return {s: got.us[s] / got.us["prism"] for s in systems}


def compile_failures(plans: list[tuple[int, KernelGraph]]) -> dict[int, str]:
    """The CUDA source of every generated kernel of the returned plans through nvcc for sm_80 (no GPU
    needed): per seed whose sources do not compile (or do not generate), why."""
    from prism.codegen.generate import generate
    from prism.codegen.nvcc import compile_check
    from prism.errors import CompileError

    bad: dict[int, str] = {}
    for seed, kg in plans:
        try:
            sources = [(k.entry, k.source) for k in generate(kg, arch="sm_80").kernels]
            compile_check(sources, "sm_80", jobs=2)
        except (PrismError, CompileError) as e:
            bad[seed] = f"{type(e).__name__}: {str(e)[:400]}"
    return bad


def _seeds(text: str) -> list[int]:
    """``first:last`` (last excluded) or ``a,b,c``."""
    if ":" in text:
        first, last = (int(x) for x in text.split(":"))
        return list(range(first, last))
    return [int(x) for x in text.split(",")]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="0:20", help="first:last (last excluded), or a comma-separated list")
    ap.add_argument("--json", default="")
    ap.add_argument("--nvcc", action="store_true", help="also compile the returned plans' CUDA sources")
    ap.add_argument("--prepare", action="store_true", help="only search, into the search cache (for --cuda)")
    ap.add_argument("--cuda", action="store_true", help="superoptimize on the GPU, searches from the cache")
    ap.add_argument("--sizes", default="small", choices=sorted(SIZES))
    ap.add_argument("--family", default="rows", choices=sorted(FAMILIES),
                    help="rows: every op family over [n, d] rows; attention: Q against K, V of another length; "
                         "mlp: norms, projections, activations and gates; block: a decoder layer")
    ap.add_argument("--eager", action="store_true", help="with --cuda: time the callable against PyTorch eager")
    ap.add_argument("--compile", action="store_true",
                    help="with --cuda: time against torch.compile too (and superoptimize with its Inductor candidate)")
    args = ap.parse_args()
    rows = []
    plans: list[tuple[int, KernelGraph]] = []
    for seed in _seeds(args.seeds):
        returned: list[KernelGraph] = []
        if args.prepare:
            out = prepare(seed, sizes=args.sizes, family=args.family)
        else:
            out = (run_cuda(seed, sizes=args.sizes, eager=args.eager, compiled=args.compile, family=args.family)
                   if args.cuda else run_one(seed, returned=returned, sizes=args.sizes, family=args.family))
        plans += [(seed, kg) for kg in returned if any(isinstance(k, CustomKernel) for k in kg.kernels)]
        rows.append(asdict(out))
        print(json.dumps(rows[-1]), flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(rows, f, indent=1)
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["result"]] = counts.get(r["result"], 0) + 1
    if args.nvcc:
        bad = compile_failures(plans)
        print(json.dumps({"compiled": len(plans) - len(bad), "compile_failures": bad}))
    print(json.dumps(counts))


if __name__ == "__main__":
    main()
