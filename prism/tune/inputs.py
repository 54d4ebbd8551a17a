"""Where tuning inputs come from: the user's examples, the documented default, or for a part of a
partitioned program, the program's own float64 reference at the part's cut tensors."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from prism.errors import TuningError
from prism.graph import Graph
from prism.partition import Part, tensor_names
from prism.reference import bind_inputs, node_values, round_to_dtype
from prism.tune.tolerance import tolerance
from prism.tune.tuner import default_scales, random_inputs, reference_error

InputSampler = Callable[[int], dict[str, np.ndarray]]


def input_sampler(graph: Graph, example_inputs: Mapping[str, Any] | Sequence[Any] | None = None,
                  scales: Mapping[str, float] | None = None) -> InputSampler:
    """Fresh random inputs per seed (float64 arrays holding values of each input's dtype).

    With ``example_inputs`` (arrays or tensors, by name or in order), each input is drawn from a
    normal distribution with the example's mean and standard deviation. Otherwise from the
    documented default (``prism.tune.tuner.default_scales``): N(0, 1), except an input that is the
    right operand of a matmul, N(0, 1/K) (K: the contraction length), so that products stay O(1)
    as with the usual weight initialisation. ``scales`` overrides the standard deviation per input.
    """
    if example_inputs is None:
        sd = {**default_scales(graph), **dict(scales or {})}
        return lambda seed: random_inputs(graph, sd, seed)
    values = example_values(graph, example_inputs)
    stats = {n: (float(np.mean(v)), float(np.std(v)) or 1.0) for n, v in values.items()}

    def sample(seed: int) -> dict[str, np.ndarray]:
        rng = np.random.default_rng(seed)
        return {t.name: round_to_dtype(rng.standard_normal(t.shape) * stats[t.name][1] + stats[t.name][0], t.dtype)
                for t in graph.inputs}

    return sample


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
