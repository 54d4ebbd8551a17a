"""Where tuning inputs come from: the user's examples, the documented default, or for a part of a
partitioned program, the program's own float64 reference at the part's cut tensors."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from prism.errors import TuningError
from prism.graph import Graph, OpKind
from prism.ops import Unary
from prism.partition import Part, tensor_names
from prism.reference import bind_inputs, node_values, round_to_dtype, values_of
from prism.tune.tolerance import tolerance
from prism.tune.tuner import default_scales, random_inputs, reference_error

InputSampler = Callable[[int], dict[str, np.ndarray]]


def input_sampler(graph: Graph, example_inputs: Mapping[str, Any] | Sequence[Any] | None = None,
                  scales: Mapping[str, float] | None = None) -> InputSampler:
    """Fresh random inputs per seed (float64 arrays holding values of each input's dtype).

    With ``example_inputs`` (arrays or tensors, by name or in order), each input is drawn from a
    normal distribution with the example's mean and standard deviation, clipped to the example's range
    (its finite values: a mask of −inf in an example is not drawn). Otherwise from the
    documented default (``prism.tune.tuner.default_scales``): N(0, 1), except an input that is the
    right operand of a matmul, N(0, 1/K) (K: the contraction length), so that products stay O(1)
    as with the usual weight initialisation. ``scales`` overrides the standard deviation per input.
    """
    if example_inputs is None:
        sd = {**default_scales(graph), **dict(scales or {})}
        return lambda seed: random_inputs(graph, sd, seed)
    values = {n: v[np.isfinite(v)] for n, v in example_values(graph, example_inputs).items()}  # (−inf masks out)
    stats = {n: (float(np.mean(v)), float(np.std(v)) or 1.0, float(np.min(v)), float(np.max(v))) if v.size
             else (0.0, 1.0, -np.inf, np.inf) for n, v in values.items()}

    def sample(seed: int) -> dict[str, np.ndarray]:
        rng = np.random.default_rng(seed)
        return {t.name: round_to_dtype(_drawn(rng, t.shape, *stats[t.name]), t.dtype) for t in graph.inputs}

    return sample


def _drawn(rng: np.random.Generator, shape: tuple[int, ...], mean: float, sd: float, lo: float,
           hi: float) -> np.ndarray:
    """Normal with an example's mean and spread, kept within the example's range (an input the examples
    keep positive, the argument of a log or a square root, stays positive)."""
    return np.clip(rng.standard_normal(shape) * sd + mean, lo, hi) if lo < hi else np.full(shape, mean)


# ops defined on part of the real line: (what must hold of the argument, the test of it)
DOMAINS: dict[Unary, tuple[str, Callable[[np.ndarray], np.ndarray]]] = {
    Unary.LOG: ("> 0", lambda x: x > 0),
    Unary.SQRT: (">= 0", lambda x: x >= 0),
    Unary.RSQRT: ("> 0", lambda x: x > 0),
}


def check_domain(graph: Graph, sampler: InputSampler, seed: int, program: str) -> None:
    """Every plan is checked against the float64 reference on the tuning inputs, so each op of
    ``DOMAINS`` must get arguments in its domain there (a log of an input drawn from N(0, 1) is NaN for
    half of it, and every plan, the predefined one too, would fail the check). Evaluates only what the
    arguments of such ops need; raises TuningError naming the op, its operand and how many values fall
    outside (the inputs of ``sampler(seed)`` are drawn only where the program has such an op)."""
    nodes = graph.nodes
    checked = [i for i, n in enumerate(nodes) if n.kind is OpKind.UNARY and n.fn in DOMAINS]
    if not checked:
        return
    values = values_of(graph, sampler(seed), [nodes[i].args[0] for i in checked])
    for i in checked:
        fn, a = nodes[i].fn, nodes[i].args[0]
        assert isinstance(fn, Unary)
        cond, ok = DOMAINS[fn]
        if bad := int(np.count_nonzero(~ok(values[a]))):
            raise TuningError(f"{program}: {fn.value} of {_operand(graph, a)} needs values {cond}, but {bad} of "
                              f"{values[a].size} are not on the tuning inputs, so no plan could pass the check against "
                              "the float64 reference; pass example_inputs whose values keep it in its domain (samples "
                              "stay within their range)")


def _operand(graph: Graph, a: int) -> str:
    """An op's operand for people: an input by name, a computed value by node, op and shape."""
    n = graph.nodes[a]
    if n.kind is OpKind.INPUT:
        return f"input {n.name!r}"
    return f"node {a} ({n.fn.value if n.fn is not None else n.kind.value}, shape {list(n.shape)})"


def example_values(graph: Graph, example_inputs: Mapping[str, Any] | Sequence[Any]) -> dict[str, np.ndarray]:
    """The user's example inputs (by name or in order; NumPy, torch or CuPy) as float64 arrays."""
    if isinstance(example_inputs, Mapping):
        return bind_inputs(graph, {k: _to_numpy(v) for k, v in example_inputs.items()})
    return bind_inputs(graph, [_to_numpy(v) for v in example_inputs])


def _to_numpy(v: Any) -> np.ndarray:
    if hasattr(v, "detach"):  # torch
        return np.asarray(v.detach().double().cpu().numpy())
    if hasattr(v, "get") and hasattr(v, "__cuda_array_interface__"):  # CuPy
        return np.asarray(v.get(), dtype=np.float64)
    return np.asarray(v, dtype=np.float64)


def part_sampler(graph: Graph, part: Part, program_inputs: InputSampler) -> InputSampler:
    """Inputs of a part as the program produces them: the program's reference on its own random
    inputs, read at the part's cut tensors (so a part sees realistic magnitudes and signs)."""
    names = tensor_names(graph)
    wanted = {t.name for t in part.graph.inputs}
    dtypes = {t.name: t.dtype for t in part.graph.inputs}

    def sample(seed: int) -> dict[str, np.ndarray]:
        values = node_values(graph, program_inputs(seed))
        return {names[i]: round_to_dtype(v, dtypes[names[i]]) for i, v in enumerate(values) if names[i] in wanted}

    return sample


def check_examples(graph: Graph, backend: Any, kernel: Any, example_inputs: Any, program: str) -> None:
    values = example_values(graph, example_inputs)
    values = {t.name: round_to_dtype(values[t.name], t.dtype) for t in graph.inputs}
    err = reference_error(backend, kernel, graph, values)
    tol = tolerance(graph, stressed=True)  # the user's inputs may carry large values into exp
    if not err < tol:
        raise TuningError(f"{program}: the tuned plan's relative error on example_inputs is {err:.3g} (≥ {tol:g}) "
                          "against the float64 reference; the inputs may overflow the program's dtype")
