"""Stress inputs for the reference check of programs with a max (a safe softmax): large logits, and
logits masked with −inf.

A kernel that computes a safe softmax in the paper's form (``exp(x) / Σ exp(x)``, equal in real
arithmetic, so the proof accepts it) or keeps a running max in a narrow type is right on O(1)
logits and inf or NaN on large ones. So for a program with a max reduction the tuner also checks
the winner on inputs scaled until the values entering a max reach ±``TARGET``: 100, beyond
float32's ``exp`` range (88.7), where ±50 would still pass a float32 kernel without the shift.

An online softmax that shifts each chunk by its own max turns a chunk masked with −inf into
−inf − −inf = NaN unless it guards the shift (``ir.shift_by_max``), again equal in real arithmetic. So the
winner is also checked on inputs whose mask-like operands (an input entering a max, or added to what
enters one: a padding mask, an ALiBi bias) are −inf along the max's dim but for its middle entry, so
chunks before and after the one holding it are wholly masked (left and right padding) however the plan
splits the dim.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from prism.graph import Graph, OpKind
from prism.ops import Binary, Reduce
from prism.reference import node_values, round_to_dtype

TARGET = 100.0
STEPS = 8


def max_operands(graph: Graph) -> list[int]:
    """Nodes whose values a max reduction takes."""
    return [n.args[0] for n in graph.nodes if n.kind is OpKind.REDUCE and n.fn is Reduce.MAX]


def stress_inputs(graph: Graph, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray] | None:
    """``inputs`` scaled by one common factor so that the largest value entering a max is within
    [TARGET, 1.25·TARGET] in magnitude (None when the program has no max, or no factor gets there).
    The factor is found in log space: a first square-root step, then secant steps on the observed
    power law (logits are quadratic in the inputs for ``q @ k``, linear after a norm)."""
    watch = max_operands(graph)
    if not watch:
        return None
    goal = math.log(TARGET * 1.1)
    log_f, prev = 0.0, None
    for _ in range(STEPS):
        scaled = {t.name: round_to_dtype(np.asarray(inputs[t.name]) * math.exp(log_f), t.dtype) for t in graph.inputs}
        vals = node_values(graph, scaled)
        peak = max(float(np.max(np.abs(vals[i]))) for i in watch)
        if not math.isfinite(peak) or peak == 0.0:
            return None
        if TARGET <= peak <= 1.25 * TARGET:
            return scaled if _outputs_fit(graph, vals) else None
        log_p = math.log(peak)
        slope = 2.0
        if prev is not None and log_f != prev[0]:
            slope = min(4.0, max(0.25, (log_p - prev[1]) / (log_f - prev[0])))
        prev = (log_f, log_p)
        log_f += (goal - log_p) / slope
    return None


def _outputs_fit(graph: Graph, vals: list[np.ndarray]) -> bool:
    """Whether every output of the program on these inputs is within its dtype's range: where one is
    not (a sum of squares of logits of 100 in float16), no kernel can write it, so such inputs test
    nothing of the softmax (found by ``bench.fuzz``: a max feeding two matmuls had no passing plan)."""
    return all(np.isfinite(round_to_dtype(vals[i], graph.nodes[i].dtype)).all() for _, i in graph.output_indices)


def mask_operands(graph: Graph) -> dict[str, int]:
    """Program inputs that enter a max or are added to a value entering one (a mask, a bias), with the
    dim the max reduces (where the input is not broadcast along it)."""
    nodes = graph.nodes
    found: dict[str, int] = {}
    for r in nodes:
        if r.kind is not OpKind.REDUCE or r.fn is not Reduce.MAX or r.dim is None:
            continue
        dim, m = r.dim, nodes[r.args[0]]
        cands = [r.args[0]] if m.kind is OpKind.INPUT else list(m.args) if m.kind is OpKind.BINARY and \
            m.fn is Binary.ADD else []
        for c in cands:
            x = nodes[c]
            if x.kind is OpKind.INPUT and x.shape[dim] > 1:
                found.setdefault(x.name or "", dim)
    return found


def masked_inputs(graph: Graph, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray] | None:
    """``inputs`` with each ``mask_operands`` input −inf along the dim its max reduces but for its middle
    entry, or None (no such input, or a reference with NaN on them: the program does not take masks)."""
    names = mask_operands(graph)
    if not names:
        return None
    out = {k: np.asarray(v) for k, v in inputs.items()}
    for name, dim in names.items():
        a = np.array(out[name], dtype=np.float64)
        keep = a.shape[dim] // 2
        for part in (slice(0, keep), slice(keep + 1, None)):
            a[(slice(None),) * dim + (part,)] = -np.inf
        out[name] = a
    vals = node_values(graph, out)
    if any(np.isnan(vals[i]).any() for _, i in graph.output_indices):
        return None
    return out
