"""The five benchmark programs of BENCHMARKS.md and their ten configurations."""

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


def gqa(batch: int = 2, group: int = 8, kv_len: int = 1024, head_dim: int = 128, dtype: str = "float16") -> Graph:
    """O = softmax(Q @ Kt) @ V, decode-time grouped-query attention (batch = KV heads)."""
    g = Graph()
    q = g.input((batch, group, head_dim), dtype, "Q")
    kt = g.input((batch, head_dim, kv_len), dtype, "Kt")
    v = g.input((batch, kv_len, head_dim), dtype, "V")
    g.output(g.matmul(g.softmax(g.matmul(q, kt), -1), v), "O")
    return g


def qknorm_gqa(batch: int = 2, group: int = 8, kv_len: int = 1024, head_dim: int = 128, dtype: str = "float16") -> Graph:
    """O = softmax(rms_norm(Q) @ Kt) @ V."""
    g = Graph()
    q = g.input((batch, group, head_dim), dtype, "Q")
    kt = g.input((batch, head_dim, kv_len), dtype, "Kt")
    v = g.input((batch, kv_len, head_dim), dtype, "V")
    g.output(g.matmul(g.softmax(g.matmul(g.rms_norm(q), kt), -1), v), "O")
    return g


PROGRAMS: dict[str, Callable[..., Graph]] = {
    "rmsnorm_linear": rmsnorm_linear,
    "rmsnorm_mlp": rmsnorm_mlp,
    "swiglu": swiglu,
    "gqa": gqa,
    "qknorm_gqa": qknorm_gqa,
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


def program(name: str, **sizes: int) -> Graph:
    """Build a registered program by name (default sizes unless given)."""
    if name not in PROGRAMS:
        raise WorkloadError(f"unknown program {name!r}; known: {', '.join(PROGRAMS)}")
    return PROGRAMS[name](**sizes)


def config(config_id: str) -> Config:
    """A benchmark configuration by its id in BENCHMARKS.md."""
    if config_id not in CONFIGS:
        raise WorkloadError(f"unknown configuration {config_id!r}; known: {', '.join(CONFIGS)}")
    return CONFIGS[config_id]


def configs_of(program_name: str) -> list[Config]:
    return [c for c in CONFIGS.values() if c.program == program_name]


def default_scales(program_name: str, sizes: dict[str, int]) -> dict[str, float]:
    """Input scales in the spirit of BENCHMARKS.md for any sizes of a program."""
    if program_name in ("rmsnorm_linear", "rmsnorm_mlp", "swiglu"):
        s = sizes.get("d", 1024) ** -0.5
        return {"W": s, "Wu": s, "Wg": s}
    if program_name == "gqa":
        return {"Q": sizes.get("head_dim", 128) ** -0.5}
    if program_name == "qknorm_gqa":
        return {"Kt": sizes.get("head_dim", 128) ** -0.5}
    return {}


def make_config(program_name: str, sizes: dict[str, int], dtype: str = "float16") -> Config:
    """A Config for any sizes of a registered program (id: program plus its sizes)."""
    if program_name not in PROGRAMS:
        raise WorkloadError(f"unknown program {program_name!r}; known: {', '.join(PROGRAMS)}")
    key = "_".join(f"{k}{v}" for k, v in sizes.items())
    return Config(f"{program_name}_{key}", program_name, dict(sizes), default_scales(program_name, sizes), dtype)
