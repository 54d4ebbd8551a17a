"""The runtime: importable without CuPy, clear DeviceError without a GPU; on a GPU (marked ``gpu``)
every configuration at several legal sizes against the float64 reference, CUDA-graph capture,
and the argument checks."""

from __future__ import annotations

import importlib
import sys

import numpy as np
import pytest

from prism import plans, workloads
from prism.codegen import generate
from prism.codegen.sizes import generated_sizes
from prism.errors import DeviceError, InputError
from prism.reference import relative_error


def _small_plan() -> object:
    cfg = workloads.config("rmsnorm_linear_d1024")
    return generate(plans.hand_plans(cfg.program, cfg.build())[0].instantiate({"x": 32, "i": 8}))


def test_runtime_imports_and_fails_clearly_without_cupy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cupy", None)  # makes `import cupy` raise ImportError
    import prism.runtime as rt

    rt = importlib.reload(rt)
    with pytest.raises(DeviceError, match="CuPy"):
        rt.compile_plan(_small_plan())  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------- GPU

GPU_SIZES = 3


def _gpu_variants(cfg: workloads.Config) -> list[tuple[int, dict[str, int]]]:
    """A few legal sizes per plan with enough blocks to matter (deterministic)."""
    out = []
    for pi, template in enumerate(plans.hand_plans(cfg.program, cfg.build())):
        legal = [(r.kernels[0].blocks, s) for s, r in generated_sizes(template, "sm_90")]
        big = [s for b, s in legal if b >= 16] or [s for _, s in legal]
        idx = sorted({0, len(big) // 2, len(big) - 1})[:GPU_SIZES]
        out += [(pi, big[i]) for i in idx]
    return out


@pytest.mark.gpu
@pytest.mark.parametrize("config_id", list(workloads.CONFIGS))
def test_gpu_matches_reference(config_id: str) -> None:
    torch = pytest.importorskip("torch")
    from prism.runtime import compile_plan

    cfg = workloads.config(config_id)
    g = cfg.build()
    templates = plans.hand_plans(cfg.program, g)
    out_spec = g.outputs[0]
    for seed, (pi, sizes) in enumerate(_gpu_variants(cfg)):
        fn = compile_plan(generate(templates[pi].instantiate(sizes), arch="sm_90"))
        inputs = cfg.random_inputs(1000 + seed, g)  # fresh inputs for every variant
        ref = g.evaluate(inputs)[out_spec.name]
        xs = [torch.from_numpy(inputs[t.name]).to("cuda", torch.float16) for t in g.inputs]
        out = torch.full(out_spec.shape, float("nan"), dtype=torch.float16, device="cuda")
        fn(*xs, out=out)
        torch.cuda.synchronize()
        err = relative_error(out.double().cpu().numpy(), ref)
        assert err < 2e-2, f"{config_id} plan {pi} sizes {sizes}: relative error {err:.3e}"
        # a CUDA-graph capture of one call gives the same output
        out2 = torch.full_like(out, float("nan"))
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            fn(*xs, out=out2)
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(out, out2), f"{config_id} plan {pi} sizes {sizes}: graph replay differs"


@pytest.mark.gpu
def test_gpu_cupy_inputs_and_checks() -> None:
    cupy = pytest.importorskip("cupy")
    from prism.runtime import compile_plan

    cfg = workloads.config("gqa_h1024")
    g = cfg.build()
    template = plans.hand_plans(cfg.program, g)[2]
    fn = compile_plan(generate(template.instantiate({"x": 2, "s": 16, "i": 2}), arch="sm_90"))
    inputs = cfg.random_inputs(7, g)
    xs = {k: cupy.asarray(v.astype(np.float16)) for k, v in inputs.items()}
    out = fn(**xs)  # by name, output allocated as a CuPy array
    assert isinstance(out, cupy.ndarray) and out.dtype == np.float16
    assert relative_error(cupy.asnumpy(out).astype(np.float64), g.evaluate(inputs)["O"]) < 2e-2
    with pytest.raises(InputError, match="shape"):
        fn(xs["Q"][:1], xs["Kt"], xs["V"])
    with pytest.raises(InputError, match="dtype"):
        fn(xs["Q"].astype(np.float32), xs["Kt"], xs["V"])
    with pytest.raises(InputError, match="contiguous"):
        fn(xs["Q"], cupy.asfortranarray(xs["Kt"]), xs["V"])
    with pytest.raises(InputError, match="missing"):
        fn(xs["Q"])
    with pytest.raises(InputError, match="numpy|CuPy|torch"):
        fn(inputs["Q"], xs["Kt"], xs["V"])
