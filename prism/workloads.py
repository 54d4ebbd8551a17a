"""The five benchmark programs of docs/benchmarks.md and their ten configurations, plus safe-softmax
variants of the two attention programs (their own configurations)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from prism.errors import WorkloadError
from prism.graph import Graph
from prism.reference import round_to_dtype


def rmsnorm_linear(n: int = 8, d: int = 1024, dtype: str = "float16") -> Graph:
    """O = rms_norm(X) @ W."""
    g = Graph()
    x = g.input((n, d), dtype, "X")
    w = g.input((d, d), dtype, "W")
    g.output(g.matmul(g.rms_norm(x), w), "O")
    return g


def rmsnorm_mlp(n: int = 8, d: int = 1024, dtype: str = "float16") -> Graph:
    """O = (rms_norm(X) @ Wu) * (rms_norm(X) @ Wg)."""
    g = Graph()
    x = g.input((n, d), dtype, "X")
    wu = g.input((d, d), dtype, "Wu")
    wg = g.input((d, d), dtype, "Wg")
    xn = g.rms_norm(x)
    g.output(g.mul(g.matmul(xn, wu), g.matmul(xn, wg)), "O")
    return g


def swiglu(n: int = 16, d: int = 1024, dtype: str = "float16") -> Graph:
    """O = silu(X @ Wg) * (X @ Wu)."""
    g = Graph()
    x = g.input((n, d), dtype, "X")
    wg = g.input((d, d), dtype, "Wg")
    wu = g.input((d, d), dtype, "Wu")
    g.output(g.mul(g.silu(g.matmul(x, wg)), g.matmul(x, wu)), "O")
    return g


def _attention(batch: int, group: int, kv_len: int, head_dim: int, dtype: str, *, norm: bool, safe: bool) -> Graph:
    g = Graph()
    q = g.input((batch, group, head_dim), dtype, "Q")
    kt = g.input((batch, head_dim, kv_len), dtype, "Kt")
    v = g.input((batch, kv_len, head_dim), dtype, "V")
    logits = g.matmul(g.rms_norm(q) if norm else q, kt)
    g.output(g.matmul(g.softmax(logits, -1, safe=safe), v), "O")
    return g


def gqa(batch: int = 2, group: int = 8, kv_len: int = 1024, head_dim: int = 128, dtype: str = "float16") -> Graph:
    """O = softmax(Q @ Kt) @ V, decode-time grouped-query attention (batch = KV heads), with the
    paper's softmax (no max subtraction), as docs/benchmarks.md defines it."""
    return _attention(batch, group, kv_len, head_dim, dtype, norm=False, safe=False)


def qknorm_gqa(batch: int = 2, group: int = 8, kv_len: int = 1024, head_dim: int = 128, dtype: str = "float16") -> Graph:
    """O = softmax(rms_norm(Q) @ Kt) @ V, the paper's softmax."""
    return _attention(batch, group, kv_len, head_dim, dtype, norm=True, safe=False)


def gqa_safe(batch: int = 2, group: int = 8, kv_len: int = 1024, head_dim: int = 128,
             dtype: str = "float16") -> Graph:
    """O = softmax(Q @ Kt) @ V with the safe softmax (row max subtracted)."""
    return _attention(batch, group, kv_len, head_dim, dtype, norm=False, safe=True)


def qknorm_gqa_safe(batch: int = 2, group: int = 8, kv_len: int = 1024, head_dim: int = 128,
                    dtype: str = "float16") -> Graph:
    """O = softmax(rms_norm(Q) @ Kt) @ V with the safe softmax."""
    return _attention(batch, group, kv_len, head_dim, dtype, norm=True, safe=True)


PROGRAMS: dict[str, Callable[..., Graph]] = {
    "rmsnorm_linear": rmsnorm_linear,
    "rmsnorm_mlp": rmsnorm_mlp,
    "swiglu": swiglu,
    "gqa": gqa,
    "qknorm_gqa": qknorm_gqa,
    "gqa_safe": gqa_safe,
    "qknorm_gqa_safe": qknorm_gqa_safe,
}


@dataclass(frozen=True)
class Config:
    """One benchmark configuration: a program, its sizes and the scale of each input's N(0,1) entries."""

    id: str
    program: str
    sizes: dict[str, int]
    scales: dict[str, float] = field(default_factory=dict)
    dtype: str = "float16"

    def build(self) -> Graph:
        return PROGRAMS[self.program](**self.sizes, dtype=self.dtype)

    def random_inputs(self, seed: int = 0, graph: Graph | None = None) -> dict[str, np.ndarray]:
        """Fresh N(0,1)·scale inputs, rounded to the config's dtype, as float64 arrays."""
        graph = graph or self.build()
        rng = np.random.default_rng(seed)
        return {
            t.name: round_to_dtype(rng.standard_normal(t.shape) * self.scales.get(t.name, 1.0), t.dtype)
            for t in graph.inputs
        }


def _cfg(id_: str, program: str, scales: dict[str, float], **sizes: int) -> Config:
    return Config(id_, program, sizes, scales)


CONFIGS: dict[str, Config] = {
    c.id: c
    for c in [
        _cfg("rmsnorm_linear_d1024", "rmsnorm_linear", {"W": 1024**-0.5}, n=8, d=1024),
        _cfg("rmsnorm_linear_d4096", "rmsnorm_linear", {"W": 4096**-0.5}, n=8, d=4096),
        _cfg("rmsnorm_mlp_n8", "rmsnorm_mlp", {"Wu": 1024**-0.5, "Wg": 1024**-0.5}, n=8, d=1024),
        _cfg("rmsnorm_mlp_n16", "rmsnorm_mlp", {"Wu": 1024**-0.5, "Wg": 1024**-0.5}, n=16, d=1024),
        _cfg("swiglu_d1024", "swiglu", {"Wu": 1024**-0.5, "Wg": 1024**-0.5}, n=16, d=1024),
        _cfg("swiglu_d4096", "swiglu", {"Wu": 4096**-0.5, "Wg": 4096**-0.5}, n=16, d=4096),
        _cfg("gqa_h1024", "gqa", {"Q": 128**-0.5}, batch=2, group=8, kv_len=1024, head_dim=128),
        _cfg("gqa_h2048", "gqa", {"Q": 128**-0.5}, batch=2, group=8, kv_len=2048, head_dim=128),
        _cfg("qknorm_gqa_h1024", "qknorm_gqa", {"Kt": 128**-0.5}, batch=2, group=8, kv_len=1024, head_dim=128),
        _cfg("qknorm_gqa_h2048", "qknorm_gqa", {"Kt": 128**-0.5}, batch=2, group=8, kv_len=2048, head_dim=128),
    ]
}

# Safe-softmax attention: not part of the ten (their figures stay comparable), configurations of
# their own. Unit-normal inputs: logits of magnitude ~sqrt(head_dim), beyond ±50 at the tails.
# The paper's attention at the long-context shapes (Q scaled so that it does not overflow) is
# here too: what the safe kernels are compared with.
EXTRA_CONFIGS: dict[str, Config] = {
    c.id: c
    for c in [
        _cfg("gqa_safe_h1024", "gqa_safe", {}, batch=2, group=8, kv_len=1024, head_dim=128),
        _cfg("gqa_safe_h2048", "gqa_safe", {}, batch=2, group=8, kv_len=2048, head_dim=128),
        _cfg("qknorm_gqa_safe_h1024", "qknorm_gqa_safe", {}, batch=2, group=8, kv_len=1024, head_dim=128),
        _cfg("qknorm_gqa_safe_h2048", "qknorm_gqa_safe", {}, batch=2, group=8, kv_len=2048, head_dim=128),
        # long-context decode: 8 sequences x 4 KV heads, 8 query heads per KV head
        _cfg("gqa_safe_b32_kv4096", "gqa_safe", {}, batch=32, group=8, kv_len=4096, head_dim=128),
        _cfg("gqa_safe_b32_kv8192", "gqa_safe", {}, batch=32, group=8, kv_len=8192, head_dim=128),
        _cfg("qknorm_gqa_safe_b32_kv4096", "qknorm_gqa_safe", {}, batch=32, group=8, kv_len=4096, head_dim=128),
        _cfg("gqa_b32_kv4096", "gqa", {"Q": 128**-0.5}, batch=32, group=8, kv_len=4096, head_dim=128),
        _cfg("gqa_b32_kv8192", "gqa", {"Q": 128**-0.5}, batch=32, group=8, kv_len=8192, head_dim=128),
    ]
}
ALL_CONFIGS: dict[str, Config] = {**CONFIGS, **EXTRA_CONFIGS}


def program(name: str, **sizes: int) -> Graph:
    """Build a registered program by name (default sizes unless given)."""
    if name not in PROGRAMS:
        raise WorkloadError(f"unknown program {name!r}; known: {', '.join(PROGRAMS)}")
    return PROGRAMS[name](**sizes)


def config(config_id: str) -> Config:
    """A benchmark configuration by its id in docs/benchmarks.md."""
    if config_id not in ALL_CONFIGS:
        raise WorkloadError(f"unknown configuration {config_id!r}; known: {', '.join(ALL_CONFIGS)}")
    return ALL_CONFIGS[config_id]


def configs_of(program_name: str) -> list[Config]:
    return [c for c in ALL_CONFIGS.values() if c.program == program_name]


def default_scales(program_name: str, sizes: dict[str, int]) -> dict[str, float]:
    """Input scales in the spirit of docs/benchmarks.md for any sizes of a program."""
    if program_name in ("rmsnorm_linear", "rmsnorm_mlp", "swiglu"):
        s = sizes.get("d", 1024) ** -0.5
        return {"W": s, "Wu": s, "Wg": s}
    if program_name == "gqa":
        return {"Q": sizes.get("head_dim", 128) ** -0.5}
    if program_name in ("gqa_safe", "qknorm_gqa_safe"):
        return {}  # unit-normal: the logits a user who does not pre-scale Q gets
    if program_name == "qknorm_gqa":
        return {"Kt": sizes.get("head_dim", 128) ** -0.5}
    return {}


def make_config(program_name: str, sizes: dict[str, int], dtype: str = "float16") -> Config:
    """A Config for any sizes of a registered program (id: program plus its sizes)."""
    if program_name not in PROGRAMS:
        raise WorkloadError(f"unknown program {program_name!r}; known: {', '.join(PROGRAMS)}")
    key = "_".join(f"{k}{v}" for k, v in sizes.items())
    return Config(f"{program_name}_{key}", program_name, dict(sizes), default_scales(program_name, sizes), dtype)
