"""Row-wise kernels of the zoo's element-wise and reduction programs on the GPU, at decode sizes, against
the float64 reference: most have no main loop (one wait and one barrier, docs/codegen.md, "A loop that
would do nothing is not emitted"); the CPU half of the check is tests/test_codegen.py."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from bench.zoo import ZOO, zoo_graph
from prism.codegen import generate
from prism.codegen.arch import arch
from prism.codegen.sizes import generated_sizes
from prism.graph import Graph
from prism.ir import KernelGraph
from prism.reference import relative_error
from prism.rowwise import row_plan

NAMES = [n for n in ZOO if ZOO[n].family in ("elementwise", "reduction")]


@pytest.mark.gpu
@pytest.mark.parametrize("name", NAMES)
def test_row_kernels_compute_their_program_on_the_gpu(name: str) -> None:
    torch = pytest.importorskip("torch")

    g = zoo_graph(name, "decode")
    template = row_plan(g, name)
    if template is None:
        pytest.skip(f"{name} has no row-wise plan")
    legal = [s for s, _ in generated_sizes(template, "sm_90")]
    if not legal:  # only where a row cannot fit one block (vocab_softmax: 131,072 halves, 256 KB)
        assert max(math.prod(t.shape[1:]) * 2 for t in g.inputs) > arch("sm_90").smem_max, name
        pytest.skip(f"{name}: a row of its row-wise plan exceeds a block's shared memory")
    for sizes in legal[:: max(1, len(legal) // 2)][:2]:
        rng = torch.Generator().manual_seed(0)
        xs = {t.name: torch.randn(t.shape, generator=rng, dtype=torch.float64) for t in g.inputs}
        want = g.evaluate({k: v.numpy() for k, v in xs.items()})
        got = _outputs(g, template, sizes, {k: v.to(torch.float16) for k, v in xs.items()})
        for t, o in zip(g.outputs, got, strict=True):
            err = relative_error(o, want[t.name])
            assert err < 2e-2, f"{name} sizes {sizes} output {t.name}: relative error {err:.3e}"


def _outputs(g: Graph, template: KernelGraph, sizes: dict[str, int], xs: dict[str, Any]) -> list[np.ndarray]:
    """The outputs of ``template`` at ``sizes``, generated and run on the GPU on the half tensors ``xs``
    (by input name), as float64 arrays in the graph's output order."""
    import torch

    from prism.runtime import compile_plan

    fn = compile_plan(generate(template.instantiate(sizes), arch="sm_90"))
    out = fn(*[xs[t.name].cuda() for t in g.inputs])
    torch.cuda.synchronize()
    return [o.double().cpu().numpy() for o in (out if isinstance(out, tuple) else (out,))]


# inputs at the ends of float16's range whose outputs float16 still holds: exp(-x) overflowing float32
# (x < -88) under a quotient, subnormal rows into a norm, large rows into sums of squares
EXTREMES = [("silu_mul", {"X": 100.0}), ("sigmoid_gate", {"X": 100.0}), ("softmax", {"X": 8e3}),
            ("hypot", {"X": 8e3, "Y": 8e3}), ("isru", {"X": 8e3}), ("rms_norm", {"X": 1e-6}),
            ("rms_norm", {"X": 8e3}), ("l2_normalize", {"X": 1e-6}), ("l2_normalize", {"X": 8e3})]


@pytest.mark.gpu
@pytest.mark.parametrize(("name", "scales"), EXTREMES)
def test_approximate_division_and_sqrt_keep_extreme_inputs(name: str, scales: dict[str, float]) -> None:
    """Kernels compile with approximate float32 division and square root (``arch.COMPILE_FLAGS``):
    a quotient by an overflowed ``1 + exp(-x)`` is 0, not NaN, and subnormal inputs are not flushed."""
    torch = pytest.importorskip("torch")

    g = zoo_graph(name, "decode")
    template = row_plan(g, name)
    assert template is not None, name
    sizes = next(s for s, _ in generated_sizes(template, "sm_90"))
    rng = torch.Generator().manual_seed(1)
    xs = {t.name: (torch.randn(t.shape, generator=rng, dtype=torch.float64) * scales.get(t.name, 1.0))
          .to(torch.float16) for t in g.inputs}
    want = g.evaluate({k: v.double().numpy() for k, v in xs.items()})
    for t, got in zip(g.outputs, _outputs(g, template, sizes, xs), strict=True):
        assert not np.isnan(got).any(), f"{name} at {scales}: NaN in {t.name}"
        err = relative_error(got, want[t.name])
        assert err < 2e-2, f"{name} at {scales}, output {t.name}: relative error {err:.3e}"
