"""The program zoo: small tensor programs a user of Prism would write, in five families.

Every entry builds a :class:`prism.Graph` from named sizes. ``small`` sizes are tiny (every dim 1 to 8)
for CPU tests; ``decode`` and ``prefill`` sizes are realistic LLM shapes for benchmarks (``prefill`` is
None for decode-attention). Those sizes are powers of two (but for the held-out programs, ``HELD_OUT``,
``HELD_OUT_2`` and ``HELD_OUT_3``, which take the widths of the models they come from); ``decode_odd`` and
``prefill_odd`` are the same programs at sizes of real models that are not (``odd_sizes``: 5 or 7 rows, 77
or 1000 tokens, widths of 2560,
3584 or 768, 11008 or 13824 features, a 50,257-entry vocabulary, 7 query heads per KV head, 4000 cached
positions). Every realistic program keeps its inputs well under 256 MB in float16.

    from bench.zoo import ZOO, zoo_graph
    g = zoo_graph("swiglu_mlp", "decode")          # a prism.Graph
    for name, p in ZOO.items(): p.build(**p.small)  # every program at tiny sizes

Families: ``elementwise`` (chains of unary and binary ops), ``reduction`` (norms, softmax, row max),
``residual`` (residual adds and broadcasts around a matmul or a norm), ``matmul`` (matmul chains, sums
of matmuls, gated MLPs) and ``attention`` (3-D batched decode attention: Q (batch, group, head_dim),
Kt (batch, head_dim, kv_len), V (batch, kv_len, head_dim)). Families 1-4 output 2-D tensors, attention
3-D ones; each program has one output, ``O``, of the requested dtype.

``softmax`` is the safe one (row max subtracted, see prism/graph.py). The attention scale is the
fixed constant 1/sqrt(128) (the realistic head_dim), not derived from the sizes, so that every
size of a program has the same structure key.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from prism.graph import Graph, Tensor

EPS = 1e-6
ATTN_SCALE = 128**-0.5  # 1/sqrt(head_dim) at the realistic head_dim
FAMILIES: tuple[str, ...] = ("elementwise", "reduction", "residual", "matmul", "attention")
WHICH: tuple[str, ...] = ("small", "decode", "prefill", "decode_odd", "prefill_odd")


@dataclass(frozen=True)
class ZooProgram:
    """One zoo program: ``build(**sizes, dtype=...)`` returns its Graph."""

    name: str
    family: str
    build: Callable[..., Graph]
    small: dict[str, int]
    decode: dict[str, int]
    prefill: dict[str, int] | None
    description: str

    @property
    def decode_odd(self) -> dict[str, int]:
        """The decode sizes mapped to sizes of real models that are not powers of two (``odd_sizes``)."""
        return odd_sizes(self.decode, prefill=False)

    @property
    def prefill_odd(self) -> dict[str, int] | None:
        """The prefill sizes mapped like ``decode_odd`` (None for decode attention)."""
        return None if self.prefill is None else odd_sizes(self.prefill, prefill=True)

    def sizes(self, which: str = "small") -> dict[str, int]:
        """The sizes of ``which`` ("small", "decode" or "prefill")."""
        if which not in WHICH:
            raise ValueError(f"unknown size set {which!r} for zoo program {self.name!r}; use one of {', '.join(WHICH)}")
        sizes: dict[str, int] | None = getattr(self, which)
        if sizes is None:
            raise ValueError(f"zoo program {self.name!r} ({self.family}) has no {which} sizes; use 'small' or 'decode'")
        return dict(sizes)

    def graph(self, which: str = "small", dtype: str = "float16") -> Graph:
        return self.build(**self.sizes(which), dtype=dtype)


# Sizes of real models that are not powers of two, for the ``_odd`` size sets: hidden widths (Qwen2-7B 3584,
# Phi-2 2560, GPT-2 768), MLP widths (Llama-2-7B 11008, -13B 13824, TinyLlama 5632), GPT-2's vocabulary,
# query heads per KV head (Qwen2-7B 7), cache lengths and batch or token counts nobody rounded.
_ODD: dict[str, dict[int, int]] = {
    "d": {4096: 3584, 2048: 2560, 1024: 768, 131072: 50257},
    "m": {4096: 4000},
    "f": {8192: 11008, 4096: 13824, 2048: 5632},
    "kv_len": {8192: 8000, 4096: 4000, 2048: 2000, 1024: 1000},
    "group": {8: 7, 4: 5},
}
_ODD_ROWS = {1: 1, 2: 3, 4: 3, 8: 5, 16: 7, 32: 31}  # n, b, s, batch at decode; and at prefill below 128
_ODD_TOKENS = {128: 77, 256: 250, 512: 500, 1024: 1000, 2048: 2000}  # rows and tokens at prefill


def odd_sizes(sizes: dict[str, int], prefill: bool) -> dict[str, int]:
    """``sizes`` with each size replaced by the nearby size of a real model in ``_ODD`` (rows and tokens
    by ``_ODD_ROWS`` / ``_ODD_TOKENS``); sizes no table names (ranks, head_dim) are kept."""
    out = {}
    for k, v in sizes.items():
        if k in _ODD:
            out[k] = _ODD[k].get(v, v)
        elif k in ("n", "b", "s", "batch"):
            out[k] = (_ODD_TOKENS.get(v) if prefill else None) or _ODD_ROWS.get(v, v)
        else:
            out[k] = v
    return out


# ---------------------------------------------------------------------- helpers
def _rows(g: Graph, n: int, d: int, dtype: str, *names: str) -> list[Tensor]:
    return [g.input((n, d), dtype, name) for name in names]


def _qk_inputs(g: Graph, batch: int, group: int, kv_len: int, head_dim: int, dtype: str) -> tuple[Tensor, Tensor]:
    q = g.input((batch, group, head_dim), dtype, "Q")
    kt = g.input((batch, head_dim, kv_len), dtype, "Kt")
    return q, kt


def _attn_inputs(g: Graph, batch: int, group: int, kv_len: int, head_dim: int, dtype: str) -> tuple[Tensor, Tensor, Tensor]:
    q, kt = _qk_inputs(g, batch, group, kv_len, head_dim, dtype)
    v = g.input((batch, kv_len, head_dim), dtype, "V")
    return q, kt, v


# ---------------------------------------------------------------------- 1. elementwise chains
def silu_mul(n: int, d: int, dtype: str = "float16") -> Graph:
    g = Graph()
    x, y = _rows(g, n, d, dtype, "X", "Y")
    g.output(g.mul(g.silu(x), y), "O")
    return g


def bias_gelu(n: int, d: int, dtype: str = "float16") -> Graph:
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    b = g.input((1, d), dtype, "B")
    g.output(g.gelu(g.add(x, b)), "O")
    return g


def exp_scale(n: int, d: int, dtype: str = "float16") -> Graph:
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    g.output(g.scale(g.exp(x), 0.5), "O")
    return g


def sigmoid_gate(n: int, d: int, dtype: str = "float16") -> Graph:
    g = Graph()
    x, y = _rows(g, n, d, dtype, "X", "Y")
    g.output(g.div(y, g.add_scalar(g.exp(g.neg(x)), 1.0)), "O")
    return g


def isru(n: int, d: int, dtype: str = "float16") -> Graph:
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    g.output(g.mul(x, g.rsqrt(g.add_scalar(g.square(x), 1.0))), "O")
    return g


def hypot(n: int, d: int, dtype: str = "float16") -> Graph:
    g = Graph()
    x, y = _rows(g, n, d, dtype, "X", "Y")
    g.output(g.sqrt(g.add(g.square(x), g.square(y))), "O")
    return g


def residual_scale(n: int, d: int, dtype: str = "float16") -> Graph:
    g = Graph()
    x, r = _rows(g, n, d, dtype, "X", "R")
    g.output(g.scale(g.add(x, r), 0.5), "O")
    return g


def mid_broadcast(b: int, s: int, d: int, dtype: str = "float16") -> Graph:
    g = Graph()
    x = g.input((b, s, d), dtype, "X")
    y = g.input((b, 1, d), dtype, "Y")
    g.output(g.mul(g.silu(x), y), "O")
    return g


def rational(n: int, d: int, dtype: str = "float16") -> Graph:
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    x2 = g.square(x)
    g.output(g.add(g.scale(g.gelu(x), 0.5), g.div(x2, g.add_scalar(x2, 3.0))), "O")
    return g


# ---------------------------------------------------------------------- 2. reductions over one dim
def rms_norm(n: int, d: int, dtype: str = "float16") -> Graph:
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    g.output(g.rms_norm(x, EPS), "O")
    return g


def rms_norm_weight(n: int, d: int, dtype: str = "float16") -> Graph:
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    w = g.input((1, d), dtype, "G")
    g.output(g.mul(g.rms_norm(x, EPS), w), "O")
    return g


def double_rms_norm(n: int, d: int, dtype: str = "float16") -> Graph:
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    g.output(g.rms_norm(g.rms_norm(x, EPS), EPS), "O")
    return g


def _layer_norm(g: Graph, x: Tensor) -> Tensor:
    xc = g.sub(x, g.mean(x, -1))
    var = g.mean(g.square(xc), -1)
    return g.mul(xc, g.rsqrt(g.add_scalar(var, EPS)))


def layer_norm(n: int, d: int, dtype: str = "float16") -> Graph:
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    g.output(_layer_norm(g, x), "O")
    return g


def _l2_rows(g: Graph, x: Tensor) -> Tensor:
    return g.mul(x, g.rsqrt(g.add_scalar(g.sum(g.square(x), -1), EPS)))


def l2_normalize(n: int, d: int, dtype: str = "float16") -> Graph:
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    g.output(_l2_rows(g, x), "O")
    return g


def softmax(n: int, d: int, dtype: str = "float16") -> Graph:
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    g.output(g.softmax(x, -1), "O")
    return g


def scaled_softmax(n: int, d: int, dtype: str = "float16") -> Graph:
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    g.output(g.softmax(g.scale(x, 0.125), -1), "O")
    return g


def stable_softmax(n: int, d: int, dtype: str = "float16") -> Graph:
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    e = g.exp(g.sub(x, g.max(x, -1)))
    g.output(g.div(e, g.sum(e, -1)), "O")
    return g


def row_max(n: int, d: int, dtype: str = "float16") -> Graph:
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    g.output(g.max(x, -1), "O")
    return g


def col_sum(n: int, d: int, dtype: str = "float16") -> Graph:
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    g.output(g.sum(x, 0), "O")
    return g


def col_softmax(n: int, d: int, dtype: str = "float16") -> Graph:
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    g.output(g.softmax(x, 0), "O")
    return g


def row_mse(n: int, d: int, dtype: str = "float16") -> Graph:
    g = Graph()
    x, y = _rows(g, n, d, dtype, "X", "Y")
    g.output(g.mean(g.square(g.sub(x, y)), -1), "O")
    return g


# ---------------------------------------------------------------------- 3. residual adds and broadcasts
def matmul_residual(n: int, d: int, dtype: str = "float16") -> Graph:
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    w = g.input((d, d), dtype, "W")
    (r,) = _rows(g, n, d, dtype, "R")
    g.output(g.add(g.matmul(x, w), r), "O")
    return g


def matmul_bias_gelu(n: int, d: int, f: int, dtype: str = "float16") -> Graph:
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    w = g.input((d, f), dtype, "W")
    b = g.input((1, f), dtype, "B")
    g.output(g.gelu(g.add(g.matmul(x, w), b)), "O")
    return g


def matmul_col_scale(n: int, d: int, f: int, dtype: str = "float16") -> Graph:
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    w = g.input((d, f), dtype, "W")
    s = g.input((1, f), dtype, "S")
    g.output(g.mul(g.matmul(x, w), s), "O")
    return g


def row_scale(n: int, d: int, dtype: str = "float16") -> Graph:
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    s = g.input((n, 1), dtype, "S")
    g.output(g.mul(x, s), "O")
    return g


def add_rms_norm(n: int, d: int, dtype: str = "float16") -> Graph:
    g = Graph()
    x, r = _rows(g, n, d, dtype, "X", "R")
    g.output(g.rms_norm(g.add(x, r), EPS), "O")
    return g


def add_rms_norm_weight(n: int, d: int, dtype: str = "float16") -> Graph:
    g = Graph()
    x, r = _rows(g, n, d, dtype, "X", "R")
    w = g.input((1, d), dtype, "G")
    g.output(g.mul(g.rms_norm(g.add(x, r), EPS), w), "O")
    return g


def add_norm_two_out(n: int, d: int, dtype: str = "float16") -> Graph:
    g = Graph()
    x, r = _rows(g, n, d, dtype, "X", "R")
    w = g.input((1, d), dtype, "G")
    h = g.add(x, r)
    g.output(g.mul(g.rms_norm(h, EPS), w), "O")
    g.output(h, "H")
    return g


# ---------------------------------------------------------------------- 4. matmul chains and gated MLPs
def mlp_silu(n: int, d: int, f: int, dtype: str = "float16") -> Graph:
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    w1 = g.input((d, f), dtype, "W1")
    w2 = g.input((f, d), dtype, "W2")
    g.output(g.matmul(g.silu(g.matmul(x, w1)), w2), "O")
    return g


def sum_of_matmuls(n: int, d: int, dtype: str = "float16") -> Graph:
    g = Graph()
    x, y = _rows(g, n, d, dtype, "X", "Y")
    w1 = g.input((d, d), dtype, "W1")
    w2 = g.input((d, d), dtype, "W2")
    g.output(g.add(g.matmul(x, w1), g.matmul(y, w2)), "O")
    return g


def geglu(n: int, d: int, f: int, dtype: str = "float16") -> Graph:
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    wg = g.input((d, f), dtype, "Wg")
    wu = g.input((d, f), dtype, "Wu")
    g.output(g.mul(g.gelu(g.matmul(x, wg)), g.matmul(x, wu)), "O")
    return g


def swiglu_mlp(n: int, d: int, f: int, dtype: str = "float16") -> Graph:
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    wg = g.input((d, f), dtype, "Wg")
    wu = g.input((d, f), dtype, "Wu")
    wd = g.input((f, d), dtype, "Wd")
    h = g.mul(g.silu(g.matmul(x, wg)), g.matmul(x, wu))
    g.output(g.matmul(h, wd), "O")
    return g


def llama_mlp_block(n: int, d: int, f: int, dtype: str = "float16") -> Graph:
    """A decoder layer's second half as the model runs it: nn.Linear weight layouts (out x in)."""
    g = Graph()
    x, r = _rows(g, n, d, dtype, "X", "R")
    w = g.input((1, d), dtype, "G")
    wg, wu = g.input((f, d), dtype, "Wg"), g.input((f, d), dtype, "Wu")
    wd = g.input((d, f), dtype, "Wd")
    h = g.add(x, r)
    a = g.mul(g.rms_norm(h, EPS), w)
    y = g.mul(g.silu(g.matmul(a, g.transpose(wg))), g.matmul(a, g.transpose(wu)))
    g.output(g.add(h, g.matmul(y, g.transpose(wd))), "O")
    return g


def decoder_norm_linear(b: int, s: int, d: int, f: int, dtype: str = "float16") -> Graph:
    """A projection as a decoder runs it on ``[batch, tokens, d]`` activations (superoptimize merges the
    leading dims into rows: prism.rows)."""
    g = Graph()
    x = g.input((b, s, d), dtype, "X")
    w = g.input((1, 1, d), dtype, "G")
    wl = g.input((f, d), dtype, "W")
    g.output(g.matmul(g.mul(g.rms_norm(x, EPS), w), g.transpose(wl)), "O")
    return g


def norm_matmul_silu(n: int, d: int, f: int, dtype: str = "float16") -> Graph:
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    w = g.input((d, f), dtype, "W")
    g.output(g.silu(g.matmul(g.rms_norm(x, EPS), w)), "O")
    return g


def norm_matmul_residual(n: int, d: int, dtype: str = "float16") -> Graph:
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    w = g.input((d, d), dtype, "W")
    (r,) = _rows(g, n, d, dtype, "R")
    g.output(g.add(g.matmul(g.rms_norm(x, EPS), w), r), "O")
    return g


def lora_linear(n: int, d: int, r: int, dtype: str = "float16") -> Graph:
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    w = g.input((d, d), dtype, "W")
    la = g.input((d, r), dtype, "La")
    lb = g.input((r, d), dtype, "Lb")
    g.output(g.add(g.matmul(x, w), g.scale(g.matmul(g.matmul(x, la), lb), 2.0)), "O")
    return g


def logits_softmax(n: int, d: int, f: int, dtype: str = "float16") -> Graph:
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    w = g.input((d, f), dtype, "W")
    g.output(g.softmax(g.matmul(g.rms_norm(x, EPS), w), -1), "O")
    return g


def cosine_sim(n: int, m: int, d: int, dtype: str = "float16") -> Graph:
    g = Graph()
    a = g.input((n, d), dtype, "A")
    b = g.input((m, d), dtype, "B")
    g.output(g.matmul(_l2_rows(g, a), g.transpose(_l2_rows(g, b))), "O")
    return g


def ln_affine_linear(n: int, d: int, f: int, dtype: str = "float16") -> Graph:
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    gain, bias = g.input((1, d), dtype, "G"), g.input((1, d), dtype, "B")
    w = g.input((d, f), dtype, "W")
    g.output(g.matmul(g.add(g.mul(_layer_norm(g, x), gain), bias), w), "O")
    return g


def sigmoid_proj_gate(n: int, d: int, dtype: str = "float16") -> Graph:
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    w = g.input((d, d), dtype, "W")
    g.output(g.div(x, g.add_scalar(g.exp(g.neg(g.matmul(x, w))), 1.0)), "O")
    return g


def mean_pool_linear(n: int, d: int, f: int, dtype: str = "float16") -> Graph:
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    w = g.input((d, f), dtype, "W")
    g.output(g.matmul(g.mean(x, 0), w), "O")
    return g


def post_norm(n: int, d: int, dtype: str = "float16") -> Graph:
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    w = g.input((d, d), dtype, "W")
    g.output(g.rms_norm(g.matmul(x, w), EPS), "O")
    return g


def matmul_chain3(n: int, d: int, r: int, dtype: str = "float16") -> Graph:
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    a, b, c = g.input((d, r), dtype, "A"), g.input((r, r), dtype, "B"), g.input((r, d), dtype, "C")
    g.output(g.matmul(g.matmul(g.matmul(x, a), b), c), "O")
    return g


# ---------------------------------------------------------------------- 5. attention (3-D batched)
def _softmax_attention(batch: int, group: int, kv_len: int, head_dim: int, dtype: str, scale: float) -> Graph:
    g = Graph()
    q, kt, v = _attn_inputs(g, batch, group, kv_len, head_dim, dtype)
    p = g.softmax(g.scale(g.matmul(q, kt), scale), -1)
    g.output(g.matmul(p, v), "O")
    return g


def scaled_attention(batch: int, group: int, kv_len: int, head_dim: int, dtype: str = "float16") -> Graph:
    return _softmax_attention(batch, group, kv_len, head_dim, dtype, ATTN_SCALE)


def qnorm_attention(batch: int, group: int, kv_len: int, head_dim: int, dtype: str = "float16") -> Graph:
    g = Graph()
    q, kt, v = _attn_inputs(g, batch, group, kv_len, head_dim, dtype)
    p = g.softmax(g.scale(g.matmul(g.rms_norm(q, EPS), kt), ATTN_SCALE), -1)
    g.output(g.matmul(p, v), "O")
    return g


def qknorm_attention(batch: int, group: int, kv_len: int, head_dim: int, dtype: str = "float16") -> Graph:
    g = Graph()
    q, kt, v = _attn_inputs(g, batch, group, kv_len, head_dim, dtype)
    # K arrives transposed, so its rms norm runs over dim 1 (head_dim) of Kt.
    ktn = g.mul(kt, g.rsqrt(g.add_scalar(g.mean(g.square(kt), 1), EPS)))
    p = g.softmax(g.scale(g.matmul(g.rms_norm(q, EPS), ktn), ATTN_SCALE), -1)
    g.output(g.matmul(p, v), "O")
    return g


def attention_k_transpose(batch: int, group: int, kv_len: int, head_dim: int, dtype: str = "float16") -> Graph:
    g = Graph()
    q = g.input((batch, group, head_dim), dtype, "Q")
    k = g.input((batch, kv_len, head_dim), dtype, "K")
    v = g.input((batch, kv_len, head_dim), dtype, "V")
    p = g.softmax(g.scale(g.matmul(q, g.transpose(k)), ATTN_SCALE), -1)
    g.output(g.matmul(p, v), "O")
    return g


def attention_scores(batch: int, group: int, kv_len: int, head_dim: int, dtype: str = "float16") -> Graph:
    g = Graph()
    q, kt = _qk_inputs(g, batch, group, kv_len, head_dim, dtype)
    g.output(g.matmul(q, kt), "O")
    return g


def attention_probs(batch: int, group: int, kv_len: int, head_dim: int, dtype: str = "float16") -> Graph:
    g = Graph()
    q, kt = _qk_inputs(g, batch, group, kv_len, head_dim, dtype)
    g.output(g.softmax(g.scale(g.matmul(q, kt), ATTN_SCALE), -1), "O")
    return g


def masked_attention(batch: int, group: int, kv_len: int, head_dim: int, dtype: str = "float16") -> Graph:
    g = Graph()
    q, kt, v = _attn_inputs(g, batch, group, kv_len, head_dim, dtype)
    mask = g.input((batch, 1, kv_len), dtype, "M")
    p = g.softmax(g.add(g.scale(g.matmul(q, kt), ATTN_SCALE), mask), -1)
    g.output(g.matmul(p, v), "O")
    return g


# ---------------------------------------------------------------------- 8. held out (2026-12-04)
def gated_rms_norm(n: int, d: int, dtype: str = "float16") -> Graph:
    g = Graph()
    x, z = _rows(g, n, d, dtype, "X", "Z")
    w = g.input((1, d), dtype, "G")
    g.output(g.mul(g.mul(g.rms_norm(x, EPS), w), g.silu(z)), "O")
    return g


def softmax_bias(n: int, d: int, dtype: str = "float16") -> Graph:
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    b = g.input((1, d), dtype, "B")
    g.output(g.softmax(g.add(g.scale(x, 0.5), b), -1), "O")
    return g


def layer_norm_affine(n: int, d: int, dtype: str = "float16") -> Graph:
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    gain, bias = g.input((1, d), dtype, "G"), g.input((1, d), dtype, "B")
    g.output(g.add(g.mul(_layer_norm(g, x), gain), bias), "O")
    return g


def col_rms_scale(n: int, d: int, dtype: str = "float16") -> Graph:
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    g.output(g.mul(x, g.rsqrt(g.add_scalar(g.mean(g.square(x), 0), EPS))), "O")
    return g


def bilinear_score(n: int, d: int, dtype: str = "float16") -> Graph:
    g = Graph()
    x, y = _rows(g, n, d, dtype, "X", "Y")
    w = g.input((d, d), dtype, "W")
    g.output(g.sum(g.mul(g.matmul(x, w), y), -1), "O")
    return g


def gelu_mlp_bias(n: int, d: int, f: int, dtype: str = "float16") -> Graph:
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    w1, b1 = g.input((d, f), dtype, "W1"), g.input((1, f), dtype, "B1")
    w2 = g.input((f, d), dtype, "W2")
    g.output(g.matmul(g.gelu(g.add(g.matmul(x, w1), b1)), w2), "O")
    return g


def norm_two_proj(n: int, d: int, f: int, k: int, dtype: str = "float16") -> Graph:
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    w = g.input((1, d), dtype, "G")
    wq, wk = g.input((d, f), dtype, "Wq"), g.input((d, k), dtype, "Wk")
    a = g.mul(g.rms_norm(x, EPS), w)
    g.output(g.matmul(a, wq), "O")
    g.output(g.matmul(a, wk), "K")
    return g


def dual_input_gate(n: int, d: int, dtype: str = "float16") -> Graph:
    g = Graph()
    x, y = _rows(g, n, d, dtype, "X", "Y")
    wa, wb = g.input((d, d), dtype, "Wa"), g.input((d, d), dtype, "Wb")
    g.output(g.div(g.matmul(x, wa), g.add_scalar(g.exp(g.neg(g.matmul(y, wb))), 1.0)), "O")
    return g


def classifier_softmax(n: int, d: int, f: int, dtype: str = "float16") -> Graph:
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    w, b = g.input((d, f), dtype, "W"), g.input((1, f), dtype, "B")
    g.output(g.softmax(g.add(g.matmul(x, w), b), -1), "O")
    return g


def attention_hd64(batch: int, group: int, kv_len: int, head_dim: int, dtype: str = "float16") -> Graph:
    return _softmax_attention(batch, group, kv_len, head_dim, dtype, 64**-0.5)


# ---------------------------------------------------------------------- 9. held out, second set (2026-12-04)
def router_softmax(n: int, d: int, f: int, dtype: str = "float16") -> Graph:
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    g.output(g.softmax(g.matmul(x, g.input((d, f), dtype, "Wr")), -1), "O")
    return g


def layer_scale_residual(n: int, d: int, dtype: str = "float16") -> Graph:
    g = Graph()
    x, r = _rows(g, n, d, dtype, "X", "R")
    w, gamma = g.input((d, d), dtype, "W"), g.input((1, d), dtype, "L")
    g.output(g.add(r, g.mul(g.matmul(x, w), gamma)), "O")
    return g


def softcap_attention(batch: int, group: int, kv_len: int, head_dim: int, dtype: str = "float16") -> Graph:
    """Gemma-2's logit soft cap, 50 tanh(s / 50), written with exp: 50 (e - 1) / (e + 1), e = exp(s / 25)."""
    g = Graph()
    q, kt, v = _attn_inputs(g, batch, group, kv_len, head_dim, dtype)
    e = g.exp(g.scale(g.matmul(q, kt), 256**-0.5 / 25))
    capped = g.scale(g.div(g.add_scalar(e, -1.0), g.add_scalar(e, 1.0)), 50.0)
    g.output(g.matmul(g.softmax(capped, -1), v), "O")
    return g


def pairwise_sq_dist(n: int, m: int, d: int, dtype: str = "float16") -> Graph:
    g = Graph()
    a, b = g.input((n, d), dtype, "A"), g.input((m, d), dtype, "B")
    cross = g.matmul(a, g.transpose(b))
    norms = g.add(g.sum(g.square(a), -1), g.transpose(g.sum(g.square(b), -1)))
    g.output(g.sub(norms, g.scale(cross, 2.0)), "O")
    return g


def gram_matrix(n: int, d: int, dtype: str = "float16") -> Graph:
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    g.output(g.scale(g.matmul(g.transpose(x), x), 1.0 / 64), "O")
    return g


def row_variance(n: int, d: int, dtype: str = "float16") -> Graph:
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    g.output(g.sub(g.mean(g.square(x), -1), g.square(g.mean(x, -1))), "O")
    return g


def temperature_softmax(n: int, d: int, dtype: str = "float16") -> Graph:
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    g.output(g.softmax(g.div(x, g.input((n, 1), dtype, "T")), -1), "O")
    return g


def sandwich_norm(n: int, d: int, dtype: str = "float16") -> Graph:
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    w, gain = g.input((d, d), dtype, "W"), g.input((1, d), dtype, "G")
    g.output(g.add(x, g.mul(g.rms_norm(g.matmul(x, w), EPS), gain)), "O")
    return g


def bert_ffn_out(n: int, d: int, f: int, dtype: str = "float16") -> Graph:
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    h = g.input((n, f), dtype, "H")
    w2, b2 = g.input((f, d), dtype, "W2"), g.input((1, d), dtype, "B2")
    gain, bias = g.input((1, d), dtype, "G"), g.input((1, d), dtype, "B")
    y = g.add(g.add(x, g.matmul(h, w2)), b2)
    g.output(g.add(g.mul(_layer_norm(g, y), gain), bias), "O")
    return g


def linear_attention(batch: int, group: int, kv_len: int, head_dim: int, dtype: str = "float16") -> Graph:
    g = Graph()
    q, kt, v = _attn_inputs(g, batch, group, kv_len, head_dim, dtype)
    g.output(g.matmul(g.scale(g.matmul(q, kt), ATTN_SCALE), v), "O")
    return g


# ---------------------------------------------------------------------- 10. held out, third set (2026-12-04)
def sigmoid_attention(batch: int, group: int, kv_len: int, head_dim: int, dtype: str = "float16") -> Graph:
    """Sigmoid attention with the bias -log(kv_len) fixed at -8 (Ramapuram et al.): no softmax."""
    g = Graph()
    q, kt, v = _attn_inputs(g, batch, group, kv_len, head_dim, dtype)
    s = g.add_scalar(g.scale(g.matmul(q, kt), ATTN_SCALE), -8.0)
    e = g.exp(s)
    p = g.div(e, g.add_scalar(e, 1.0))
    g.output(g.matmul(p, v), "O")
    return g


def cosine_attention(batch: int, group: int, kv_len: int, head_dim: int, dtype: str = "float16") -> Graph:
    """Attention over L2-normalised queries and keys, K stored [positions, d], a fixed temperature of 10."""
    g = Graph()
    q = g.input((batch, group, head_dim), dtype, "Q")
    k = g.input((batch, kv_len, head_dim), dtype, "K")
    v = g.input((batch, kv_len, head_dim), dtype, "V")
    s = g.matmul(_l2_rows(g, q), g.transpose(_l2_rows(g, k)))
    g.output(g.matmul(g.softmax(g.scale(s, 10.0), -1), v), "O")
    return g


def alibi_attention(batch: int, group: int, kv_len: int, head_dim: int, dtype: str = "float16") -> Graph:
    """Attention with a per-head additive position bias B (batch, group, kv_len), as ALiBi or T5 add."""
    g = Graph()
    q, kt, v = _attn_inputs(g, batch, group, kv_len, head_dim, dtype)
    b = g.input((batch, group, kv_len), dtype, "B")
    g.output(g.matmul(g.softmax(g.add(g.scale(g.matmul(q, kt), ATTN_SCALE), b), -1), v), "O")
    return g


def soft_moe_mix(n: int, d: int, f: int, dtype: str = "float16") -> Graph:
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    wr, e = g.input((d, f), dtype, "Wr"), g.input((f, d), dtype, "E")
    g.output(g.matmul(g.softmax(g.matmul(x, wr), -1), e), "O")
    return g


def final_logit_softcap(n: int, d: int, f: int, dtype: str = "float16") -> Graph:
    """Gemma-2's final logits, 30 tanh(h @ W / 30), tanh written with exp."""
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    e = g.exp(g.scale(g.matmul(x, g.input((d, f), dtype, "W")), 1.0 / 15))
    g.output(g.scale(g.div(g.add_scalar(e, -1.0), g.add_scalar(e, 1.0)), 30.0), "O")
    return g


def attention_out_proj(batch: int, group: int, kv_len: int, head_dim: int, dtype: str = "float16") -> Graph:
    """Decode attention and its output projection: (softmax(Q Kt / sqrt(128)) V) @ Wo, Wo (head_dim, head_dim)."""
    g = Graph()
    q, kt, v = _attn_inputs(g, batch, group, kv_len, head_dim, dtype)
    wo = g.input((head_dim, head_dim), dtype, "Wo")
    o = g.matmul(g.softmax(g.scale(g.matmul(q, kt), ATTN_SCALE), -1), v)
    g.output(g.matmul(o, wo), "O")
    return g


def row_dequant_linear(n: int, d: int, f: int, dtype: str = "float16") -> Graph:
    """X @ (W * S) with S (d, 1): a weight stored with one scale per input channel (row of W)."""
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    w, sc = g.input((d, f), dtype, "W"), g.input((d, 1), dtype, "S")
    g.output(g.matmul(x, g.mul(w, sc)), "O")
    return g


# ----------------------------------------------- 11. relu, abs, tanh, sigmoid, log, exact gelu, max, min (2026-12-04)
def relu_mlp_bias(n: int, d: int, f: int, dtype: str = "float16") -> Graph:
    """OPT's FFN: relu(X @ W1 + B1) @ W2 + B2."""
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    w1, b1 = g.input((d, f), dtype, "W1"), g.input((1, f), dtype, "B1")
    w2, b2 = g.input((f, d), dtype, "W2"), g.input((1, d), dtype, "B2")
    g.output(g.add(g.matmul(g.relu(g.add(g.matmul(x, w1), b1)), w2), b2), "O")
    return g


def relu2_mlp(n: int, d: int, f: int, dtype: str = "float16") -> Graph:
    """Primer's squared-ReLU FFN: relu(X @ W1)^2 @ W2."""
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    w1, w2 = g.input((d, f), dtype, "W1"), g.input((f, d), dtype, "W2")
    g.output(g.matmul(g.square(g.relu(g.matmul(x, w1))), w2), "O")
    return g


def tanh_logit_softcap(n: int, d: int, f: int, dtype: str = "float16") -> Graph:
    """Gemma-2's final logits with tanh itself: 30 tanh(X @ W / 30)."""
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    g.output(g.scale(g.tanh(g.scale(g.matmul(x, g.input((d, f), dtype, "W")), 1.0 / 30)), 30.0), "O")
    return g


def tanh_softcap_attention(batch: int, group: int, kv_len: int, head_dim: int, dtype: str = "float16") -> Graph:
    """Gemma-2's soft-capped attention with tanh itself: softmax(50 tanh(Q @ Kt / 16 / 50)) @ V."""
    g = Graph()
    q, kt, v = _attn_inputs(g, batch, group, kv_len, head_dim, dtype)
    capped = g.scale(g.tanh(g.scale(g.matmul(q, kt), 256**-0.5 / 50)), 50.0)
    g.output(g.matmul(g.softmax(capped, -1), v), "O")
    return g


def sigmoid_output_gate(n: int, d: int, dtype: str = "float16") -> Graph:
    """A gated attention output: A * sigmoid(X @ Wg), the gate computed from the hidden states X."""
    g = Graph()
    a, x = _rows(g, n, d, dtype, "A", "X")
    g.output(g.mul(a, g.sigmoid(g.matmul(x, g.input((d, d), dtype, "Wg")))), "O")
    return g


def log_softmax(n: int, d: int, dtype: str = "float16") -> Graph:
    """x - max - log(sum(exp(x - max))) over the last dim."""
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    g.output(g.log_softmax(x, -1), "O")
    return g


def logsumexp(n: int, d: int, dtype: str = "float16") -> Graph:
    """log(sum(exp(x - m))) + m, m the row max: a cross-entropy's normaliser, a column (n, 1)."""
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    g.output(g.logsumexp(x, -1), "O")
    return g


def softplus_proj(n: int, d: int, f: int, dtype: str = "float16") -> Graph:
    """softplus(X @ W + B) = log(1 + exp(X @ W + B)): Mamba's step sizes from a projection."""
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    w, b = g.input((d, f), dtype, "W"), g.input((1, f), dtype, "B")
    g.output(g.log(g.add_scalar(g.exp(g.add(g.matmul(x, w), b)), 1.0)), "O")
    return g


def mish(n: int, d: int, dtype: str = "float16") -> Graph:
    """x tanh(log(1 + exp(x)))."""
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    g.output(g.mul(x, g.tanh(g.log(g.add_scalar(g.exp(x), 1.0)))), "O")
    return g


def leaky_relu_residual(n: int, d: int, dtype: str = "float16") -> Graph:
    """R + leaky_relu(X, 0.01), written relu(x) - 0.01 relu(-x)."""
    g = Graph()
    x, r = _rows(g, n, d, dtype, "X", "R")
    g.output(g.add(r, g.sub(g.relu(x), g.scale(g.relu(g.neg(x)), 0.01))), "O")
    return g


def bert_mlp(n: int, d: int, f: int, dtype: str = "float16") -> Graph:
    """BERT's FFN with the exact GELU (PyTorch's default): gelu(X @ W1 + B1) @ W2 + B2."""
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    w1, b1 = g.input((d, f), dtype, "W1"), g.input((1, f), dtype, "B1")
    w2, b2 = g.input((f, d), dtype, "W2"), g.input((1, d), dtype, "B2")
    h = g.gelu(g.add(g.matmul(x, w1), b1), approximate="none")
    g.output(g.add(g.matmul(h, w2), b2), "O")
    return g


def gelu_exact_bias(n: int, d: int, dtype: str = "float16") -> Graph:
    """gelu(X + B), the exact form, B a bias row (1, d)."""
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    g.output(g.gelu(g.add(x, g.input((1, d), dtype, "B")), approximate="none"), "O")
    return g


def clamped_glu(n: int, d: int, f: int, dtype: str = "float16") -> Graph:
    """gpt-oss's expert activation: g = min(X @ Wg, 7), u = clamp(X @ Wu, -7, 7); g sigmoid(1.702 g) (u + 1)."""
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    gate = g.minimum(g.matmul(x, g.input((d, f), dtype, "Wg")), 7.0)
    up = g.clamp(g.matmul(x, g.input((d, f), dtype, "Wu")), -7.0, 7.0)
    g.output(g.mul(g.mul(gate, g.sigmoid(g.scale(gate, 1.702))), g.add_scalar(up, 1.0)), "O")
    return g


def normalize_embeddings(n: int, d: int, dtype: str = "float16") -> Graph:
    """F.normalize: x / max(|x|_2, 1e-6) over the last dim."""
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    g.output(g.div(x, g.maximum(g.sqrt(g.sum(g.square(x), -1)), 1e-6)), "O")
    return g


def maxout_proj(n: int, d: int, f: int, dtype: str = "float16") -> Graph:
    """A maxout unit of two pieces: maximum(X @ W1, X @ W2)."""
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    g.output(g.maximum(g.matmul(x, g.input((d, f), dtype, "W1")), g.matmul(x, g.input((d, f), dtype, "W2"))), "O")
    return g


def clipped_double_q(n: int, d: int, f: int, dtype: str = "float16") -> Graph:
    """Twin critics' clipped estimate (TD3, SAC): minimum(X @ W1, X @ W2)."""
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    g.output(g.minimum(g.matmul(x, g.input((d, f), dtype, "W1")), g.matmul(x, g.input((d, f), dtype, "W2"))), "O")
    return g


def erf_gelu_bias(n: int, d: int, dtype: str = "float16") -> Graph:
    """GELU written out with erf, as older BERT code does: h = X + B; 0.5 h (1 + erf(h / sqrt(2)))."""
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    h = g.add(x, g.input((1, d), dtype, "B"))
    g.output(g.mul(g.scale(h, 0.5), g.add_scalar(g.erf(g.scale(h, 2**-0.5)), 1.0)), "O")
    return g


def l1_normalize(n: int, d: int, dtype: str = "float16") -> Graph:
    """x / (sum(|x|) + eps) over the last dim."""
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    g.output(g.div(x, g.add_scalar(g.sum(g.abs(x), -1), EPS)), "O")
    return g



# ----------------------------------------------- 12. outputs read channels-first (2026-12-06, thirty-second session)
def channels_first_proj(n: int, d: int, f: int, dtype: str = "float16") -> Graph:
    """Mamba's input projection, read channels-first by its causal convolution: transpose(X @ W)."""
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    g.output(g.transpose(g.matmul(x, g.input((d, f), dtype, "W"))), "O")
    return g


def channels_first_norm(n: int, d: int, dtype: str = "float16") -> Graph:
    """A layer norm whose output a 1-D convolution reads channels-first (a Conformer's convolution
    module): transpose(layer_norm(X) * G + B)."""
    g = Graph()
    (x,) = _rows(g, n, d, dtype, "X")
    gain, bias = g.input((1, d), dtype, "G"), g.input((1, d), dtype, "B")
    g.output(g.transpose(g.add(g.mul(_layer_norm(g, x), gain), bias)), "O")
    return g

# ---------------------------------------------------------------------- the zoo
def _nd(n: int, d: int) -> dict[str, int]:
    return {"n": n, "d": d}


def _ndf(n: int, d: int, f: int) -> dict[str, int]:
    return {"n": n, "d": d, "f": f}


def _attn(batch: int, group: int, kv_len: int, head_dim: int) -> dict[str, int]:
    return {"batch": batch, "group": group, "kv_len": kv_len, "head_dim": head_dim}


_SMALL_ATTN = _attn(2, 4, 8, 8)

_PROGRAMS: list[ZooProgram] = [
    # 1. elementwise chains
    ZooProgram("silu_mul", "elementwise", silu_mul, _nd(4, 8), _nd(8, 4096), _nd(1024, 4096),
               "O = silu(X) * Y: the gate of a SwiGLU MLP on precomputed projections."),
    ZooProgram("bias_gelu", "elementwise", bias_gelu, _nd(4, 8), _nd(16, 4096), _nd(512, 4096),
               "O = gelu(X + B) with a bias row B (1, d) broadcast over the rows."),
    ZooProgram("exp_scale", "elementwise", exp_scale, _nd(2, 8), _nd(4, 2048), _nd(2048, 2048),
               "O = exp(X) * 0.5: an exponential scaled by a constant."),
    ZooProgram("sigmoid_gate", "elementwise", sigmoid_gate, _nd(4, 4), _nd(8, 2048), _nd(1024, 2048),
               "O = Y / (exp(-X) + 1): Y gated by sigmoid(X), written out by hand."),
    ZooProgram("isru", "elementwise", isru, _nd(4, 8), _nd(1, 4096), _nd(2048, 4096),
               "O = X * rsqrt(X^2 + 1): the inverse square root unit, a smooth clamp."),
    ZooProgram("hypot", "elementwise", hypot, _nd(2, 4), _nd(16, 1024), _nd(256, 1024),
               "O = sqrt(X^2 + Y^2): elementwise magnitude of a pair of tensors."),
    ZooProgram("residual_scale", "elementwise", residual_scale, _nd(4, 8), _nd(8, 4096), _nd(512, 4096),
               "O = (X + R) * 0.5: a residual add followed by a constant scale."),
    # 2. reductions over one dim
    ZooProgram("rms_norm", "reduction", rms_norm, _nd(4, 8), _nd(8, 4096), _nd(1024, 4096),
               "O = rms_norm(X): RMS normalization over the last dim, no weight."),
    ZooProgram("rms_norm_weight", "reduction", rms_norm_weight, _nd(4, 8), _nd(16, 4096), _nd(2048, 4096),
               "O = rms_norm(X) * G with a weight row G (1, d), as in Llama."),
    ZooProgram("double_rms_norm", "reduction", double_rms_norm, _nd(2, 8), _nd(8, 2048), _nd(512, 2048),
               "O = rms_norm(rms_norm(X)): two RMS norms in a row (a redundant norm to simplify)."),
    ZooProgram("layer_norm", "reduction", layer_norm, _nd(4, 8), _nd(8, 4096), _nd(1024, 4096),
               "O = (X - mean(X)) * rsqrt(mean((X - mean(X))^2) + eps): layer norm without weight or bias."),
    ZooProgram("l2_normalize", "reduction", l2_normalize, _nd(4, 8), _nd(4, 1024), _nd(2048, 1024),
               "O = X * rsqrt(sum(X^2) + eps): L2 normalization of each row."),
    ZooProgram("softmax", "reduction", softmax, _nd(4, 8), _nd(8, 1024), _nd(512, 1024),
               "O = softmax(X) along the last dim (no max subtraction)."),
    ZooProgram("scaled_softmax", "reduction", scaled_softmax, _nd(4, 8), _nd(16, 2048), _nd(1024, 2048),
               "O = softmax(X * 0.125): softmax of scaled logits."),
    ZooProgram("stable_softmax", "reduction", stable_softmax, _nd(4, 8), _nd(8, 4096), _nd(256, 4096),
               "O = exp(X - max(X)) / sum(exp(X - max(X))): the numerically safe softmax written by hand."),
    ZooProgram("row_max", "reduction", row_max, _nd(4, 8), _nd(16, 4096), _nd(2048, 4096),
               "O = max(X) over the last dim, kept as a column (n, 1)."),
    # 3. residual adds and broadcasts
    ZooProgram("matmul_residual", "residual", matmul_residual, _nd(4, 8), _nd(8, 4096), _nd(512, 4096),
               "O = X @ W + R: an output projection with its residual add."),
    ZooProgram("matmul_bias_gelu", "residual", matmul_bias_gelu, _ndf(4, 8, 8), _ndf(16, 1024, 4096),
               _ndf(1024, 1024, 4096), "O = gelu(X @ W + B): a linear layer with a bias row, then GELU."),
    ZooProgram("matmul_col_scale", "residual", matmul_col_scale, _ndf(4, 8, 4), _ndf(8, 4096, 4096),
               _ndf(512, 4096, 4096), "O = (X @ W) * S with S (1, f): per-output-channel (dequantization) scale."),
    ZooProgram("row_scale", "residual", row_scale, _nd(4, 8), _nd(16, 4096), _nd(2048, 4096),
               "O = X * S with S (n, 1): a per-row scale broadcast over the columns."),
    ZooProgram("add_rms_norm", "residual", add_rms_norm, _nd(4, 8), _nd(8, 4096), _nd(1024, 4096),
               "O = rms_norm(X + R): residual add then RMS norm."),
    ZooProgram("add_rms_norm_weight", "residual", add_rms_norm_weight, _nd(2, 8), _nd(4, 2048), _nd(512, 2048),
               "O = rms_norm(X + R) * G: residual add then weighted RMS norm (fused add-norm)."),
    # 4. matmul chains, sums of matmuls and gated MLPs
    ZooProgram("mlp_silu", "matmul", mlp_silu, _ndf(4, 8, 8), _ndf(8, 2048, 8192), _ndf(512, 2048, 8192),
               "O = silu(X @ W1) @ W2: a two-layer MLP with SiLU in between."),
    ZooProgram("sum_of_matmuls", "matmul", sum_of_matmuls, _nd(4, 8), _nd(8, 4096), _nd(1024, 4096),
               "O = X @ W1 + Y @ W2: the sum of two projections of two inputs."),
    ZooProgram("geglu", "matmul", geglu, _ndf(4, 8, 8), _ndf(16, 2048, 8192), _ndf(512, 2048, 8192),
               "O = gelu(X @ Wg) * (X @ Wu): the GeGLU gated projection."),
    ZooProgram("swiglu_mlp", "matmul", swiglu_mlp, _ndf(2, 4, 8), _ndf(8, 2048, 8192), _ndf(256, 2048, 8192),
               "O = (silu(X @ Wg) * (X @ Wu)) @ Wd: a whole SwiGLU MLP block."),
    ZooProgram("llama_mlp_block", "matmul", llama_mlp_block, _ndf(4, 8, 8), _ndf(8, 2048, 8192),
               _ndf(256, 2048, 8192), "H = X + R; O = H + (silu(rms_norm(H) * G @ Wg^T) * (rms_norm(H) * G @ Wu^T)) "
               "@ Wd^T: a decoder layer's MLP half, residuals and norm included (too large to search whole)."),
    ZooProgram("decoder_norm_linear", "matmul", decoder_norm_linear, {"b": 2, "s": 2, "d": 8, "f": 8},
               {"b": 16, "s": 1, "d": 2048, "f": 8192}, {"b": 4, "s": 128, "d": 2048, "f": 8192},
               "O = (rms_norm(X) * G) @ W^T on X (batch, tokens, d), W (f, d): a decoder's gate projection."),
    ZooProgram("norm_matmul_silu", "matmul", norm_matmul_silu, _ndf(4, 8, 8), _ndf(4, 4096, 4096),
               _ndf(1024, 4096, 4096), "O = silu(rms_norm(X) @ W): norm, then matmul, then activation."),
    ZooProgram("norm_matmul_residual", "matmul", norm_matmul_residual, _nd(4, 8), _nd(16, 2048), _nd(2048, 2048),
               "O = rms_norm(X) @ W + R: a pre-norm projection with its residual add."),
    ZooProgram("lora_linear", "matmul", lora_linear, {"n": 4, "d": 8, "r": 2}, {"n": 8, "d": 4096, "r": 16},
               {"n": 512, "d": 4096, "r": 16}, "O = X @ W + 2 * ((X @ La) @ Lb): linear layer plus a rank-r LoRA adapter."),
    # 5. attention (3-D batched, decode)
    ZooProgram("scaled_attention", "attention", scaled_attention, _SMALL_ATTN, _attn(2, 8, 4096, 128), None,
               "O = softmax((Q @ Kt) / sqrt(128)) @ V: scaled decode GQA attention."),
    ZooProgram("qnorm_attention", "attention", qnorm_attention, _SMALL_ATTN, _attn(4, 8, 2048, 128), None,
               "O = softmax((rms_norm(Q) @ Kt) / sqrt(128)) @ V: attention with an RMS-normed query."),
    ZooProgram("qknorm_attention", "attention", qknorm_attention, _SMALL_ATTN, _attn(8, 4, 1024, 128), None,
               "O = softmax((rms_norm(Q) @ rms_norm_dim1(Kt)) / sqrt(128)) @ V: QK-norm attention, K given transposed."),
    ZooProgram("attention_k_transpose", "attention", attention_k_transpose, _SMALL_ATTN, _attn(2, 4, 8192, 128), None,
               "O = softmax((Q @ transpose(K)) / sqrt(128)) @ V: attention with K stored (batch, kv_len, head_dim)."),
    ZooProgram("attention_scores", "attention", attention_scores, _SMALL_ATTN, _attn(8, 8, 4096, 128), None,
               "O = Q @ Kt: the batched attention scores only."),
    ZooProgram("attention_probs", "attention", attention_probs, _SMALL_ATTN, _attn(4, 4, 8192, 128), None,
               "O = softmax((Q @ Kt) / sqrt(128)): attention probabilities, no V."),
    # 6. written after the search, the code generator and the tuner's defaults were settled, to check they
    #    serve programs nobody tuned them to (docs/off-the-suite.md, "Programs added after the defaults")
    ZooProgram("mid_broadcast", "elementwise", mid_broadcast, {"b": 2, "s": 4, "d": 8}, {"b": 4, "s": 4, "d": 2048},
               {"b": 8, "s": 128, "d": 2048}, "O = silu(X) * Y, X (batch, tokens, d), Y (batch, 1, d): a sequence gate."),
    ZooProgram("rational", "elementwise", rational, _nd(4, 8), _nd(16, 4096), _nd(1024, 4096),
               "O = 0.5 * gelu(X) + X^2 / (X^2 + 3): a rational activation mixed with GELU."),
    ZooProgram("col_sum", "reduction", col_sum, _nd(4, 8), _nd(16, 4096), _nd(2048, 4096),
               "O = sum(X) over the rows (dim 0), a row (1, d): a bias gradient."),
    ZooProgram("col_softmax", "reduction", col_softmax, _nd(4, 8), _nd(16, 2048), _nd(1024, 2048),
               "O = softmax(X) along dim 0: each column normalised over the rows."),
    ZooProgram("row_mse", "reduction", row_mse, _nd(4, 8), _nd(16, 4096), _nd(2048, 4096),
               "O = mean((X - Y)^2) over the last dim: a per-row squared error."),
    ZooProgram("add_norm_two_out", "residual", add_norm_two_out, _nd(4, 8), _nd(8, 4096), _nd(1024, 4096),
               "H = X + R; O = rms_norm(H) * G: the fused add-norm that also returns the residual stream."),
    ZooProgram("logits_softmax", "matmul", logits_softmax, _ndf(4, 8, 8), _ndf(4, 2048, 8192), _ndf(256, 2048, 8192),
               "O = softmax(rms_norm(X) @ W): a final norm, the vocabulary projection and its softmax."),
    ZooProgram("cosine_sim", "matmul", cosine_sim, {"n": 4, "m": 8, "d": 8}, {"n": 8, "m": 4096, "d": 1024},
               {"n": 512, "m": 4096, "d": 1024}, "O = l2n(A) @ l2n(B)^T: cosine similarities of queries against a bank."),
    ZooProgram("ln_affine_linear", "matmul", ln_affine_linear, _ndf(4, 8, 8), _ndf(8, 2048, 2048),
               _ndf(512, 2048, 2048), "O = (layer_norm(X) * G + B) @ W: a pre-LN projection with gain and bias."),
    ZooProgram("sigmoid_proj_gate", "matmul", sigmoid_proj_gate, _nd(4, 8), _nd(8, 2048), _nd(512, 2048),
               "O = X * sigmoid(X @ W), sigmoid written as 1 / (exp(-h) + 1): a self-gating projection."),
    ZooProgram("mean_pool_linear", "matmul", mean_pool_linear, _ndf(4, 8, 8), _ndf(16, 2048, 2048),
               _ndf(2048, 2048, 2048), "O = mean(X, dim 0) @ W: mean pooling over the rows, then a classifier head."),
    ZooProgram("post_norm", "matmul", post_norm, _nd(4, 8), _nd(8, 2048), _nd(512, 2048),
               "O = rms_norm(X @ W): a projection followed by its norm (post-norm)."),
    ZooProgram("matmul_chain3", "matmul", matmul_chain3, {"n": 4, "d": 8, "r": 4}, {"n": 8, "d": 2048, "r": 64},
               {"n": 512, "d": 2048, "r": 64}, "O = ((X @ A) @ B) @ C: a low-rank chain of three matmuls."),
    ZooProgram("masked_attention", "attention", masked_attention, _SMALL_ATTN, _attn(2, 8, 4096, 128), None,
               "O = softmax((Q @ Kt) / sqrt(128) + M) @ V with an additive mask M (batch, 1, kv_len)."),
    # 7. shapes past a block's shared memory (docs/off-the-suite.md, "Reductions longer than a tile")
    ZooProgram("vocab_softmax", "reduction", softmax, _nd(4, 8), _nd(4, 131072), _nd(32, 131072),
               "O = softmax(logits) over a 128K vocabulary: sampling probabilities; a row does not fit a tile."),
    # 8. held out: written 2026-12-04, after twelve sessions tuned the defaults to sections 1-7, and run
    #    before anything was changed for them (docs/off-the-suite.md, "Held-out programs")
    ZooProgram("gated_rms_norm", "reduction", gated_rms_norm, _nd(4, 8), _nd(8, 5120), _nd(1024, 5120),
               "O = rms_norm(X) * G * silu(Z): the gated RMS norm of a Mamba-2 block."),
    ZooProgram("softmax_bias", "reduction", softmax_bias, _nd(4, 8), _nd(32, 1024), _nd(4096, 1024),
               "O = softmax(0.5 * X + B) with a bias row B (1, d): logits with a positional bias."),
    ZooProgram("layer_norm_affine", "reduction", layer_norm_affine, _nd(4, 8), _nd(16, 768), _nd(2048, 768),
               "O = layer_norm(X) * G + B: a GPT-2 / BERT layer norm with gain and bias."),
    ZooProgram("col_rms_scale", "reduction", col_rms_scale, _nd(4, 8), _nd(64, 2048), _nd(4096, 2048),
               "O = X * rsqrt(mean(X^2, dim 0) + eps): each column scaled by its RMS over the rows."),
    ZooProgram("bilinear_score", "matmul", bilinear_score, _nd(4, 8), _nd(8, 1024), _nd(512, 1024),
               "O = sum((X @ W) * Y, -1): a bilinear score per row, a column (n, 1)."),
    ZooProgram("gelu_mlp_bias", "matmul", gelu_mlp_bias, _ndf(4, 8, 8), _ndf(8, 768, 3072), _ndf(512, 768, 3072),
               "O = gelu(X @ W1 + B1) @ W2: a GPT-2 MLP with its first bias."),
    ZooProgram("norm_two_proj", "matmul", norm_two_proj, {"n": 4, "d": 8, "f": 8, "k": 4},
               {"n": 4, "d": 4096, "f": 4096, "k": 1024}, {"n": 512, "d": 4096, "f": 4096, "k": 1024},
               "A = rms_norm(X) * G; O = A @ Wq; K = A @ Wk: query and key projections of one normed input."),
    ZooProgram("dual_input_gate", "matmul", dual_input_gate, _nd(4, 8), _nd(8, 2048), _nd(512, 2048),
               "O = (X @ Wa) * sigmoid(Y @ Wb), sigmoid written out: one input gated by another's projection."),
    ZooProgram("classifier_softmax", "matmul", classifier_softmax, _ndf(4, 8, 8), _ndf(16, 2048, 1000),
               _ndf(256, 2048, 1000), "O = softmax(X @ W + B) over 1000 classes: a classifier head."),
    ZooProgram("attention_hd64", "attention", attention_hd64, _SMALL_ATTN, _attn(8, 4, 2048, 64), None,
               "O = softmax((Q @ Kt) / 8) @ V at head_dim 64: decode GQA attention of a smaller model."),
    ZooProgram("mha_attention", "attention", scaled_attention, _attn(2, 1, 8, 8), _attn(32, 1, 1024, 128), None,
               "O = softmax((Q @ Kt) / sqrt(128)) @ V with one query per KV head: multi-head decode attention."),
    # 9. held out, second set: written 2026-12-04 (fifteenth session) and run before anything was changed
    #    for them (docs/off-the-suite.md, "Held-out programs, second set")
    ZooProgram("router_softmax", "matmul", router_softmax, _ndf(4, 8, 6), _ndf(8, 2048, 60), _ndf(1024, 2048, 60),
               "O = softmax(X @ Wr) over 60 experts: a mixture-of-experts router (Qwen1.5-MoE's width and count)."),
    ZooProgram("layer_scale_residual", "residual", layer_scale_residual, _nd(4, 8), _nd(16, 1024), _nd(2056, 1024),
               "O = R + (X @ W) * L with L (1, d): a ViT-L block's LayerScale residual (8 images of 257 tokens)."),
    ZooProgram("softcap_attention", "attention", softcap_attention, _SMALL_ATTN, _attn(8, 2, 4096, 256), None,
               "O = softmax(50 tanh(Q @ Kt / 16 / 50)) @ V, tanh written with exp: Gemma-2's soft-capped attention."),
    ZooProgram("pairwise_sq_dist", "matmul", pairwise_sq_dist, {"n": 4, "m": 8, "d": 8}, {"n": 8, "m": 4096, "d": 768},
               {"n": 1024, "m": 4096, "d": 768}, "O = |a|^2 + |b|^2 - 2 A @ B^T: squared distances to a bank of vectors."),
    ZooProgram("gram_matrix", "matmul", gram_matrix, _nd(8, 4), _nd(64, 768), _nd(4096, 768),
               "O = X^T @ X / 64: a Gram (covariance) matrix, contracting over the rows."),
    ZooProgram("row_variance", "reduction", row_variance, _nd(4, 8), _nd(16, 4096), _nd(4096, 4096),
               "O = mean(X^2) - mean(X)^2 over the last dim, a column (n, 1)."),
    ZooProgram("temperature_softmax", "reduction", temperature_softmax, _nd(4, 8), _nd(8, 32000), _nd(256, 32000),
               "O = softmax(X / T) with a temperature per row T (n, 1), over Llama-2's 32,000-entry vocabulary."),
    ZooProgram("sandwich_norm", "matmul", sandwich_norm, _nd(4, 8), _nd(8, 2304), _nd(1024, 2304),
               "O = X + rms_norm(X @ W) * G: a projection with Gemma-2's post-norm and residual (width 2304)."),
    ZooProgram("bert_ffn_out", "matmul", bert_ffn_out, _ndf(4, 8, 8), _ndf(16, 768, 3072), _ndf(2048, 768, 3072),
               "O = layer_norm(X + H @ W2 + B2) * G + B: BERT's FFN output with residual and post-LN."),
    ZooProgram("linear_attention", "attention", linear_attention, _SMALL_ATTN, _attn(16, 4, 2048, 128), None,
               "O = ((Q @ Kt) / sqrt(128)) @ V: attention without a softmax (linear attention's decode step)."),
    # 10. held out, third set: written 2026-12-04 (fifteenth session, after section 9's changes) and run before
    #     anything was changed for them (docs/off-the-suite.md, "Held-out programs, third set")
    ZooProgram("sigmoid_attention", "attention", sigmoid_attention, _SMALL_ATTN, _attn(8, 4, 2048, 128), None,
               "O = sigmoid(Q @ Kt / sqrt(128) - 8) @ V, sigmoid as e / (e + 1): sigmoid attention, no softmax."),
    ZooProgram("cosine_attention", "attention", cosine_attention, _SMALL_ATTN, _attn(8, 4, 2048, 128), None,
               "O = softmax(10 l2n(Q) @ l2n(K)^T) @ V with K stored (batch, kv_len, head_dim): cosine attention."),
    ZooProgram("alibi_attention", "attention", alibi_attention, _SMALL_ATTN, _attn(8, 4, 2048, 128), None,
               "O = softmax(Q @ Kt / sqrt(128) + B) @ V with a bias per head and position (ALiBi, T5)."),
    ZooProgram("soft_moe_mix", "matmul", soft_moe_mix, _ndf(4, 8, 8), _ndf(8, 2048, 64), _ndf(1024, 2048, 64),
               "O = softmax(X @ Wr) @ E: a soft mixture of 64 expert embeddings."),
    ZooProgram("final_logit_softcap", "matmul", final_logit_softcap, _ndf(4, 8, 8), _ndf(8, 2304, 8192),
               _ndf(256, 2304, 8192), "O = 30 tanh(X @ W / 30), tanh written with exp: Gemma-2's capped final logits."),
    ZooProgram("attention_out_proj", "attention", attention_out_proj, _SMALL_ATTN, _attn(8, 4, 2048, 128), None,
               "O = (softmax(Q @ Kt / sqrt(128)) @ V) @ Wo: decode attention and a per-head output projection."),
    ZooProgram("row_dequant_linear", "matmul", row_dequant_linear, _ndf(4, 8, 8), _ndf(8, 4096, 4096),
               _ndf(512, 4096, 4096), "O = X @ (W * S) with S (d, 1): a weight with one scale per input channel."),
    # 11. programs of the ops added on 2026-12-04 (sixteenth session: relu, abs, tanh, sigmoid, log, the exact
    #     gelu), written before any search or run of them (docs/off-the-suite.md, "relu, abs, tanh, sigmoid,
    #     log and the exact gelu")
    ZooProgram("relu_mlp_bias", "matmul", relu_mlp_bias, _ndf(4, 8, 8), _ndf(8, 2048, 8192), _ndf(512, 2048, 8192),
               "O = relu(X @ W1 + B1) @ W2 + B2: OPT-1.3B's FFN."),
    ZooProgram("relu2_mlp", "matmul", relu2_mlp, _ndf(4, 8, 8), _ndf(8, 1024, 4096), _ndf(1024, 1024, 4096),
               "O = relu(X @ W1)^2 @ W2: Primer's squared-ReLU FFN."),
    ZooProgram("tanh_logit_softcap", "matmul", tanh_logit_softcap, _ndf(4, 8, 8), _ndf(8, 2304, 8192),
               _ndf(256, 2304, 8192), "O = 30 tanh(X @ W / 30): Gemma-2's capped final logits, with tanh."),
    ZooProgram("tanh_softcap_attention", "attention", tanh_softcap_attention, _SMALL_ATTN, _attn(8, 2, 4096, 256),
               None, "O = softmax(50 tanh(Q @ Kt / 16 / 50)) @ V: Gemma-2's soft-capped attention, with tanh."),
    ZooProgram("sigmoid_output_gate", "matmul", sigmoid_output_gate, _nd(4, 8), _nd(8, 2048), _nd(1024, 2048),
               "O = A * sigmoid(X @ Wg): an attention output gated by a projection of the hidden states."),
    ZooProgram("log_softmax", "reduction", log_softmax, _nd(4, 8), _nd(8, 32000), _nd(256, 32000),
               "O = x - max - log(sum(exp(x - max))) over a 32,000-entry vocabulary."),
    ZooProgram("logsumexp", "reduction", logsumexp, _nd(4, 8), _nd(8, 32000), _nd(256, 32000),
               "O = log(sum(exp(x - max))) + max, a column (n, 1): a cross-entropy's normaliser."),
    ZooProgram("softplus_proj", "matmul", softplus_proj, _ndf(4, 8, 8), _ndf(8, 2048, 4096), _ndf(512, 2048, 4096),
               "O = log(1 + exp(X @ W + B)): step sizes from a projection, as Mamba computes them."),
    ZooProgram("mish", "elementwise", mish, _nd(4, 8), _nd(16, 4096), _nd(4096, 4096),
               "O = x tanh(log(1 + exp(x))): the Mish activation."),
    ZooProgram("leaky_relu_residual", "residual", leaky_relu_residual, _nd(4, 8), _nd(16, 4096), _nd(4096, 4096),
               "O = R + relu(X) - 0.01 relu(-X): a leaky ReLU and a residual add."),
    ZooProgram("l1_normalize", "reduction", l1_normalize, _nd(4, 8), _nd(16, 4096), _nd(4096, 4096),
               "O = x / (sum(|x|) + 1e-6) over the last dim."),
    ZooProgram("bert_mlp", "matmul", bert_mlp, _ndf(4, 8, 8), _ndf(16, 768, 3072), _ndf(2048, 768, 3072),
               "O = gelu(X @ W1 + B1) @ W2 + B2 with the exact (erf) GELU: BERT-base's FFN."),
    ZooProgram("gelu_exact_bias", "elementwise", gelu_exact_bias, _nd(4, 8), _nd(16, 3072), _nd(2048, 3072),
               "O = gelu(X + B) with the exact (erf) GELU, B a bias row."),
    ZooProgram("clamped_glu", "matmul", clamped_glu, _ndf(4, 8, 8), _ndf(8, 2880, 2880), _ndf(512, 2880, 2880),
               "O = g sigmoid(1.702 g) (u + 1), g = min(X @ Wg, 7), u = clamp(X @ Wu, -7, 7): gpt-oss's experts."),
    ZooProgram("normalize_embeddings", "reduction", normalize_embeddings, _nd(4, 8), _nd(16, 1024), _nd(4096, 1024),
               "O = x / max(|x|_2, 1e-6): F.normalize over the last dim."),
    ZooProgram("erf_gelu_bias", "elementwise", erf_gelu_bias, _nd(4, 8), _nd(16, 3072), _nd(2048, 3072),
               "O = 0.5 h (1 + erf(h / sqrt(2))), h = X + B: a GELU written out with erf."),
    ZooProgram("maxout_proj", "matmul", maxout_proj, _ndf(4, 8, 8), _ndf(8, 1024, 4096), _ndf(1024, 1024, 4096),
               "O = maximum(X @ W1, X @ W2): a maxout unit of two pieces."),
    ZooProgram("clipped_double_q", "matmul", clipped_double_q, _ndf(4, 8, 8), _ndf(16, 1024, 256),
               _ndf(2048, 1024, 256), "O = minimum(X @ W1, X @ W2): twin critics' clipped estimate."),
    # 12. outputs that are transposes of computed values (2026-12-06, thirty-second session;
    #     docs/off-the-suite.md, "Outputs returned as views of their transposes")
    ZooProgram("channels_first_proj", "matmul", channels_first_proj, _ndf(4, 8, 8), _ndf(8, 768, 3072),
               _ndf(1024, 768, 3072), "O = transpose(X @ W): Mamba's input projection, read channels-first."),
    ZooProgram("channels_first_norm", "reduction", channels_first_norm, _nd(4, 8), _nd(16, 1024), _nd(2048, 1024),
               "O = transpose(layer_norm(X) * G + B): a Conformer convolution module's norm, read channels-first."),
]

ZOO: dict[str, ZooProgram] = {p.name: p for p in _PROGRAMS}
# section 8: run on the H200 before any change was made for them (docs/off-the-suite.md, "Held-out programs")
HELD_OUT: frozenset[str] = frozenset(("gated_rms_norm", "softmax_bias", "layer_norm_affine", "col_rms_scale",
                                      "bilinear_score", "gelu_mlp_bias", "norm_two_proj", "dual_input_gate",
                                      "classifier_softmax", "attention_hd64", "mha_attention"))
# section 9: a second held-out set, run the same way (docs/off-the-suite.md, "Held-out programs, second set")
HELD_OUT_2: frozenset[str] = frozenset(("router_softmax", "layer_scale_residual", "softcap_attention",
                                        "pairwise_sq_dist", "gram_matrix", "row_variance", "temperature_softmax",
                                        "sandwich_norm", "bert_ffn_out", "linear_attention"))
# section 10: a third held-out set, run the same way (docs/off-the-suite.md, "Held-out programs, third set")
HELD_OUT_3: frozenset[str] = frozenset(("sigmoid_attention", "cosine_attention", "alibi_attention", "soft_moe_mix",
                                        "final_logit_softcap", "attention_out_proj", "row_dequant_linear"))
# section 11: programs of the ops added on 2026-12-04 (relu, abs, tanh, sigmoid, log, the exact gelu)
NEW_OPS: frozenset[str] = frozenset(("relu_mlp_bias", "relu2_mlp", "tanh_logit_softcap", "tanh_softcap_attention",
                                     "sigmoid_output_gate", "log_softmax", "logsumexp", "softplus_proj", "mish",
                                     "leaky_relu_residual", "l1_normalize", "bert_mlp", "gelu_exact_bias",
                                     "clamped_glu", "normalize_embeddings", "maxout_proj", "clipped_double_q",
                                     "erf_gelu_bias"))
# section 12: outputs that are transposes of computed values (2026-12-06)
CHANNELS_FIRST: frozenset[str] = frozenset(("channels_first_proj", "channels_first_norm"))
assert len(ZOO) == len(_PROGRAMS), "duplicate zoo program names"


SETS: dict[str, frozenset[str]] = {"held_out": HELD_OUT, "held_out_2": HELD_OUT_2, "held_out_3": HELD_OUT_3,
                                   "new_ops": NEW_OPS, "channels_first": CHANNELS_FIRST}


def expand_names(tokens: list[str]) -> list[str]:
    """Program names, with ``@set`` (a key of ``SETS``, e.g. ``@new_ops``) standing for its programs in zoo
    order; ValueError naming the token for an unknown program or set."""
    out: list[str] = []
    for tok in tokens:
        if tok.startswith("@"):
            if tok[1:] not in SETS:
                raise ValueError(f"unknown zoo set {tok!r}; known: {', '.join('@' + s for s in SETS)}")
            out += [n for n in ZOO if n in SETS[tok[1:]] and n not in out]
        elif tok not in ZOO:
            raise ValueError(f"unknown zoo program {tok!r}")
        elif tok not in out:
            out.append(tok)
    return out


def zoo_graph(name: str, which: str = "small", dtype: str = "float16") -> Graph:
    """Build zoo program ``name`` at its ``which`` sizes ("small", "decode" or "prefill")."""
    if name not in ZOO:
        raise KeyError(f"unknown zoo program {name!r}; known: {', '.join(ZOO)}")
    return ZOO[name].graph(which, dtype)
