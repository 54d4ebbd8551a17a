"""How close a kernel's output must be to the float64 reference: set from the program's dtype, its
depth and its longest reduction (derivation and measurements: docs/tolerance.md).

The check compares ``relative_error`` (‖out − ref‖ / ‖ref‖ over the whole output) on inputs already
rounded to the dtype, so only the kernel's own roundings count. Each op may round its result to
the program's dtype (a predefined op stores it so; a generated kernel's output is stored so), and
roundings along a path of ``D`` ops add up like independent errors, about ``u·√D`` in the L2 norm;
an fp32 accumulation over ``K`` terms adds about ``u32·√K``. The bound is ``SAFETY`` times that;
an fp32 op counts at least ``FP32_OP`` (fast intrinsics such as ``__expf`` are a few ulp).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from prism.graph import Graph, OpKind
from prism.reference import stored_error

UNIT_ROUNDOFF = {"float16": 2.0**-11, "bfloat16": 2.0**-8, "float32": 2.0**-24}
FP32_OP = 2.0**-21  # one fp32 op through a fast intrinsic (__expf, rsqrtf): a few ulp
SAFETY = 4.0  # the largest error measured on the H200 is 0.65·u·√D (docs/tolerance.md): 6× headroom
STRESSED = {"float16": 2e-2, "bfloat16": 2e-2, "float32": 1e-4}  # large-logit inputs (tune/stress.py)
FP16 = np.finfo(np.float16)  # its smallest normal (tiny, 2⁻¹⁴) and its subnormals' step (2⁻²⁴)


def depth_and_reduction(graph: Graph) -> tuple[int, int]:
    """The longest path of ops from an input to an output, and the longest reduction (a sum or
    max over a dim, a matmul's contraction)."""
    depth = [0] * len(graph.nodes)
    longest = 1
    for i, n in enumerate(graph.nodes):
        if n.kind is OpKind.INPUT:
            continue
        depth[i] = 1 + max(depth[a] for a in n.args)
        if n.kind is OpKind.REDUCE and n.dim is not None:
            longest = max(longest, graph.nodes[n.args[0]].shape[n.dim])
        elif n.kind is OpKind.MATMUL:
            longest = max(longest, graph.nodes[n.args[0]].shape[-1])
    return max([depth[i] for _, i in graph.output_indices], default=0), longest


def tolerance(graph: Graph, *, stressed: bool = False, inputs: Mapping[str, np.ndarray] | None = None) -> float:
    """The largest relative error a correct kernel of ``graph`` may show against the reference.

    ``stressed``: on the large-logit inputs of ``prism.tune.stress``, where a logit ``x`` stored in
    the dtype carries an absolute error ``|x|·u`` into ``exp``, the old flat bound per dtype, which
    that check was tuned for (it catches inf and NaN, not rounding). ``inputs``: the check's inputs;
    the bound is then at least ``SAFETY`` times the error of the program run op by op in its dtype on
    them (``reference.stored_error``), where the rounding model above does not hold: an ill-conditioned
    op amplifies one rounding (docs/tolerance.md, "Ill-conditioned programs")."""
    dtype = max((t.dtype for t in graph.outputs), key=lambda d: UNIT_ROUNDOFF.get(d, 2.0**-8), default="float32")
    depth, longest = depth_and_reduction(graph)
    per_op = max(UNIT_ROUNDOFF.get(dtype, 2.0**-8), FP32_OP)
    bound = SAFETY * (per_op * math.sqrt(max(depth, 1)) + UNIT_ROUNDOFF["float32"] * math.sqrt(longest))
    bound += subnormal_storage(dtype, longest)
    if inputs is not None:
        bound = max(bound, SAFETY * stored_error(graph, inputs))
    return max(bound, STRESSED.get(dtype, 2e-2)) if stressed else bound


def bound_for(graph: Graph, err: float, inputs: Mapping[str, np.ndarray]) -> float:
    """The bound a check's error ``err`` on ``inputs`` is held to: the model's, or where ``err`` passes it,
    the one on those inputs (never lower; it costs running the program op by op: seconds at prefill)."""
    bound = tolerance(graph)
    return bound if err < bound or not math.isfinite(err) else tolerance(graph, inputs=inputs)


def subnormal_storage(dtype: str, longest: int) -> float:
    """What storing the output alone may cost where a reduction over ``longest`` terms normalises it
    below ``dtype``'s smallest normal: a softmax over K entries has outputs about 1/K, which float16
    stores with an absolute step 2⁻²⁴ from K > 2¹⁴ on, not to ``u`` relative; for an output that sums
    to one (‖ref‖ ≥ 1/√K) the K roundings of at most half a step give at most ½·2⁻²⁴·K relative. A
    worst case, not an estimate, so no ``SAFETY`` factor (docs/tolerance.md, "Subnormal outputs")."""
    if dtype != "float16" or longest * float(FP16.tiny) <= 1:  # bfloat16, float32: float32's exponent range
        return 0.0
    return 0.5 * float(FP16.smallest_subnormal) * longest
