"""Models for the PyTorch-capture tests and benchmark (``scripts/gpu_capture.py``): a Llama-style
decoder layer built from torch.nn modules, and a ``transformers`` Llama model from a small config,
both with random weights. torch (and transformers) are imported when a model is built.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class LayerConfig:
    hidden: int = 2048  # TinyLlama-1.1B's layer: 32 query heads, 4 key/value heads of 64
    heads: int = 32
    kv_heads: int = 4
    ffn: int = 5632
    eps: float = 1e-5


def llama_layer(cfg: LayerConfig) -> Any:
    """A Llama decoder layer: RMSNorm, q/k/v projections, rotary embedding, grouped-query attention
    (``F.scaled_dot_product_attention``; with a key/value cache at decode, causal at prefill),
    output projection, residual, RMSNorm, SwiGLU MLP, residual. ``forward(x, cos, sin, k_cache=None,
    v_cache=None)``; ``x`` is ``[batch, length, hidden]``."""
    import torch  # optional dependency: only the capture tests and benchmark build models
    import torch.nn.functional as F
    from torch import nn

    class RMSNorm(nn.Module):
        def __init__(self, d: int, eps: float) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.ones(d))
            self.eps = eps

        def forward(self, x: Any) -> Any:
            dtype = x.dtype
            h = x.to(torch.float32)
            h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
            return self.weight * h.to(dtype)

    def rotate_half(x: Any) -> Any:
        a, b = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
        return torch.cat((-b, a), dim=-1)

    class Layer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.hd = cfg.hidden // cfg.heads
            self.norm1, self.norm2 = RMSNorm(cfg.hidden, cfg.eps), RMSNorm(cfg.hidden, cfg.eps)
            self.q = nn.Linear(cfg.hidden, cfg.heads * self.hd, bias=False)
            self.k = nn.Linear(cfg.hidden, cfg.kv_heads * self.hd, bias=False)
            self.v = nn.Linear(cfg.hidden, cfg.kv_heads * self.hd, bias=False)
            self.o = nn.Linear(cfg.heads * self.hd, cfg.hidden, bias=False)
            self.gate = nn.Linear(cfg.hidden, cfg.ffn, bias=False)
            self.up = nn.Linear(cfg.hidden, cfg.ffn, bias=False)
            self.down = nn.Linear(cfg.ffn, cfg.hidden, bias=False)

        def forward(self, x: Any, cos: Any, sin: Any, k_cache: Any = None, v_cache: Any = None) -> Any:
            b, length, _ = x.shape
            y = self.norm1(x)
            q = self.q(y).view(b, length, cfg.heads, self.hd).transpose(1, 2)
            k = self.k(y).view(b, length, cfg.kv_heads, self.hd).transpose(1, 2)
            v = self.v(y).view(b, length, cfg.kv_heads, self.hd).transpose(1, 2)
            q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
            if k_cache is not None:
                k, v = torch.cat((k_cache, k), dim=2), torch.cat((v_cache, v), dim=2)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=k_cache is None and length > 1, enable_gqa=True)
            x = x + self.o(a.transpose(1, 2).reshape(b, length, -1))
            y = self.norm2(x)
            return x + self.down(F.silu(self.gate(y)) * self.up(y))

    return Layer()


def layer_inputs(cfg: LayerConfig, batch: int, length: int, past: int, *, device: str, dtype: Any,
                 seed: int = 0) -> tuple[Any, ...]:
    """``(x, cos, sin[, k_cache, v_cache])``: a decode step (``past`` cached positions) or a prefill."""
    import torch  # optional dependency

    g = torch.Generator(device="cpu").manual_seed(seed)
    hd = cfg.hidden // cfg.heads
    x = torch.randn(batch, length, cfg.hidden, generator=g).to(device, dtype)
    pos = torch.arange(past, past + length, dtype=torch.float32)[:, None]
    freq = pos / 10000 ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd)
    angles = torch.cat((freq, freq), dim=-1)
    cos, sin = (f(angles).to(device, dtype)[None, None] for f in (torch.cos, torch.sin))
    if not past:
        return x, cos, sin
    kv = [torch.randn(batch, cfg.kv_heads, past, hd, generator=g).to(device, dtype) for _ in range(2)]
    return (x, cos, sin, *kv)


def hf_llama(layers: int = 2, cfg: LayerConfig | None = None, vocab: int = 32000) -> Any:
    """A ``transformers`` LlamaForCausalLM of ``layers`` TinyLlama-sized layers, random weights (no
    download), SDPA attention, no KV cache."""
    from transformers import LlamaConfig, LlamaForCausalLM  # optional dependency: the benchmark only

    cfg = cfg or LayerConfig()
    conf = LlamaConfig(vocab_size=vocab, hidden_size=cfg.hidden, intermediate_size=cfg.ffn, num_hidden_layers=layers,
                       num_attention_heads=cfg.heads, num_key_value_heads=cfg.kv_heads, rms_norm_eps=cfg.eps,
                       max_position_embeddings=4096, use_cache=False, attn_implementation="sdpa")
    return LlamaForCausalLM(conf)
