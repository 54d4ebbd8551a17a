"""The five programs written the way a PyTorch user would write them, and their roofline counts.

The torch functions are the "PyTorch eager" baseline and what ``torch.compile`` compiles. torch is
only imported by callers that pass torch tensors; this module imports without it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from prism.graph import Graph, OpKind
from prism.ops import ITEMSIZE

EPS = 1e-6


def _rms_norm(x: Any) -> Any:
    import torch

    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS)


def _softmax(s: Any) -> Any:
    e = s.exp()  # no max subtraction, as in docs/benchmarks.md
    return e / e.sum(-1, keepdim=True)


def _safe_softmax(s: Any) -> Any:
    return s.softmax(-1)


def rmsnorm_linear(x: Any, w: Any) -> Any:
    return _rms_norm(x) @ w


def rmsnorm_mlp(x: Any, wu: Any, wg: Any) -> Any:
    xn = _rms_norm(x)
    return (xn @ wu) * (xn @ wg)


def swiglu(x: Any, wg: Any, wu: Any) -> Any:
    import torch

    return torch.nn.functional.silu(x @ wg) * (x @ wu)


def gqa(q: Any, kt: Any, v: Any) -> Any:
    return _softmax(q @ kt) @ v


def qknorm_gqa(q: Any, kt: Any, v: Any) -> Any:
    return _softmax(_rms_norm(q) @ kt) @ v


def gqa_safe(q: Any, kt: Any, v: Any) -> Any:
    return _safe_softmax(q @ kt) @ v


def qknorm_gqa_safe(q: Any, kt: Any, v: Any) -> Any:
    return _safe_softmax(_rms_norm(q) @ kt) @ v


def sdpa_gqa(q: Any, kt: Any, v: Any) -> Any:
    """``F.scaled_dot_product_attention`` (a safe softmax; logits unscaled, like the programs), heads as
    SDPA wants them, [batch, heads, length, dim] (one head per KV group here), K made contiguous
    (its fused kernels need a unit last stride; otherwise PyTorch takes the unfused math path): the
    timing includes that transpose copy of Kt, which a user storing K as [L, D] would not pay."""
    import torch

    k = kt.transpose(-1, -2).contiguous()
    out = torch.nn.functional.scaled_dot_product_attention(q[:, None], k[:, None], v[:, None], scale=1.0)
    return out[:, 0]


def sdpa_qknorm_gqa(q: Any, kt: Any, v: Any) -> Any:
    return sdpa_gqa(_rms_norm(q), kt, v)


# Arguments in the order of the Graph's inputs (workloads.py declares them in this order).
TORCH_PROGRAMS: dict[str, Callable[..., Any]] = {
    "rmsnorm_linear": rmsnorm_linear,
    "rmsnorm_mlp": rmsnorm_mlp,
    "swiglu": swiglu,
    "gqa": gqa,
    "qknorm_gqa": qknorm_gqa,
    "gqa_safe": gqa_safe,
    "qknorm_gqa_safe": qknorm_gqa_safe,
}

# The fused attention kernel PyTorch ships, where a program is attention (the "sdpa" baseline).
SDPA_PROGRAMS: dict[str, Callable[..., Any]] = {
    "gqa": sdpa_gqa,
    "qknorm_gqa": sdpa_qknorm_gqa,
    "gqa_safe": sdpa_gqa,
    "qknorm_gqa_safe": sdpa_qknorm_gqa,
}


@dataclass(frozen=True)
class Roofline:
    """Each input read once, each output written once; matmul flops only."""

    bytes: int
    flops: int

    def floor_us(self, copy_bytes_per_s: float, matmul_flops_per_s: float) -> float:
        return 1e6 * max(self.bytes / copy_bytes_per_s, self.flops / matmul_flops_per_s)


def roofline(graph: Graph) -> Roofline:
    nbytes = sum(math.prod(t.shape) * ITEMSIZE[t.dtype] for t in (*graph.inputs, *graph.outputs))
    flops = 0
    for node in graph.nodes:
        if node.kind is OpKind.MATMUL:
            k = graph.nodes[node.args[0]].shape[-1]
            flops += 2 * math.prod(node.shape) * k
    return Roofline(nbytes, flops)
