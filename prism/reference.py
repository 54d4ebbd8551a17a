"""Float64 NumPy evaluation of a Graph: the ground truth for every test and every kernel check."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, assert_never

import numpy as np

from prism.errors import InputError
from prism.ops import BINARY_NUMPY, REDUCE_NUMPY, UNARY_NUMPY, Binary, OpKind, Reduce, Unary

if TYPE_CHECKING:
    from prism.graph import Graph, Node


def input_shapes(graph: Graph) -> dict[str, tuple[int, ...]]:
    return {t.name: t.shape for t in graph.inputs}


def eval_node(node: Node, args: list[np.ndarray], shapes: dict[str, tuple[int, ...]]) -> np.ndarray:
    assert node.kind is not OpKind.INPUT, "inputs are bound, not evaluated"
    match node.kind:
        case OpKind.UNARY:
            assert isinstance(node.fn, Unary)
            c = node.scalar.resolve(shapes) if node.scalar is not None else 0.0
            return UNARY_NUMPY[node.fn](args[0], c)
        case OpKind.BINARY:
            assert isinstance(node.fn, Binary)
            return BINARY_NUMPY[node.fn](args[0], args[1])
        case OpKind.REDUCE:
            assert isinstance(node.fn, Reduce) and node.dim is not None
            return REDUCE_NUMPY[node.fn](args[0], node.dim)
        case OpKind.MATMUL:
            return np.matmul(args[0], args[1])
        case OpKind.TRANSPOSE:
            return np.swapaxes(args[0], -1, -2)
        case _:
            assert_never(node.kind)


def bind_inputs(graph: Graph, inputs: Mapping[str, np.ndarray] | Sequence[np.ndarray]) -> dict[str, np.ndarray]:
    """Match user values to the graph's inputs by name or position, checking shapes."""
    infos = graph.inputs
    if not isinstance(inputs, Mapping) and (isinstance(inputs, str | bytes) or not isinstance(inputs, Sequence)):
        raise InputError(f"inputs: expected a mapping of input names to arrays or a sequence of arrays, "
                         f"got {type(inputs).__name__}")
    if isinstance(inputs, Mapping):
        missing = [t.name for t in infos if t.name not in inputs]
        extra = [k for k in inputs if k not in {t.name for t in infos}]
        if missing or extra:
            raise InputError(f"inputs: missing {missing}, unexpected {extra}; expected {[t.name for t in infos]}")
        values = {t.name: inputs[t.name] for t in infos}
    else:
        if len(inputs) != len(infos):
            raise InputError(f"inputs: got {len(inputs)} arrays, the program has {len(infos)} inputs")
        values = {t.name: v for t, v in zip(infos, inputs, strict=True)}
    out = {}
    for t in infos:
        try:
            arr = np.asarray(values[t.name])
        except (ValueError, TypeError) as e:  # ragged nested lists, objects that refuse conversion
            raise InputError(f"input {t.name!r}: not an array of numbers ({e})") from None
        if arr.dtype.kind not in "biuf":
            raise InputError(f"input {t.name!r}: values of dtype {arr.dtype} are not real numbers")
        if tuple(arr.shape) != t.shape:
            raise InputError(f"input {t.name!r}: shape {tuple(arr.shape)} does not match the declared {t.shape}")
        out[t.name] = arr.astype(np.float64)
    return out


def evaluate(graph: Graph, inputs: Mapping[str, np.ndarray] | Sequence[np.ndarray]) -> dict[str, np.ndarray]:
    """Compute every output of ``graph`` in float64. Inputs by name or in declaration order."""
    graph.check_complete()
    values = node_values(graph, inputs)
    return {name: values[i] for name, i in graph.output_indices}


def node_values(graph: Graph, inputs: Mapping[str, np.ndarray] | Sequence[np.ndarray]) -> list[np.ndarray]:
    """The float64 value of every node of ``graph`` (inputs included), in node order."""
    values = values_of(graph, inputs, range(len(graph.nodes)))
    return [values[i] for i in range(len(graph.nodes))]


def values_of(graph: Graph, inputs: Mapping[str, np.ndarray] | Sequence[np.ndarray],
              roots: Iterable[int], *, stored: bool = False) -> dict[int, np.ndarray]:
    """The float64 values of the nodes ``roots`` and of every node they are computed from, by node;
    with ``stored``, each value rounded to its node's dtype before the ops that read it (eager PyTorch)."""
    need: set[int] = set()
    todo = list(roots)
    while todo:
        if (j := todo.pop()) not in need:
            need.add(j)
            todo += graph.nodes[j].args
    bound, shapes = bind_inputs(graph, inputs), input_shapes(graph)
    values: dict[int, np.ndarray] = {}
    with np.errstate(all="ignore"):
        for j in sorted(need):
            n = graph.nodes[j]
            v = bound[n.name or ""] if n.kind is OpKind.INPUT else eval_node(n, [values[a] for a in n.args], shapes)
            values[j] = round_to_dtype(v, n.dtype) if stored else v
    return values


def stored_error(graph: Graph, inputs: Mapping[str, np.ndarray] | Sequence[np.ndarray]) -> float:
    """The largest relative error over the outputs of ``graph`` run op by op with every value stored in
    its dtype (what eager PyTorch does), against the float64 reference: the cost of storage alone on
    these inputs, which an ill-conditioned op makes large (an exp of large logits, ``e - 1`` for
    ``e`` near 1, a division by values near 0)."""
    outs = [i for _, i in graph.output_indices]
    exact, stored = values_of(graph, inputs, outs), values_of(graph, inputs, outs, stored=True)
    return max(relative_error(stored[i], exact[i]) for i in outs)


def round_to_dtype(x: np.ndarray, dtype: str) -> np.ndarray:
    """Round float64 values to what ``dtype`` can hold, returned as float64 (beyond its range: inf, as
    a store in that dtype gives, without NumPy's overflow warning)."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(over="ignore"):
        if dtype == "float16":
            return x.astype(np.float16).astype(np.float64)
        if dtype == "float32":
            return x.astype(np.float32).astype(np.float64)
    if dtype == "bfloat16":
        bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
        rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
        return rounded.astype(np.uint32).view(np.float32).astype(np.float64)
    raise ValueError(f"unknown dtype {dtype!r}")


def relative_error(out: np.ndarray, ref: np.ndarray) -> float:
    """‖out − ref‖ / ‖ref‖ over the entries where the reference is finite. Where it is not (a log-softmax
    of logits masked with −inf), ``out`` must hold the same value (the same infinity, or NaN): anything
    else, or a non-finite ``out`` where the reference is finite, gives inf."""
    out = np.asarray(out, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if out.shape != ref.shape:
        return float("inf")
    finite = np.isfinite(ref)
    if not finite.all():
        o, r = out[~finite], ref[~finite]
        if not np.all((o == r) | (np.isnan(o) & np.isnan(r))):
            return float("inf")
        out, ref = out[finite], ref[finite]
    if not np.all(np.isfinite(out)):
        return float("inf")
    denom = float(np.linalg.norm(ref))
    return float(np.linalg.norm(out - ref)) / (denom if denom > 0 else 1.0)
