"""The main-loop options on a GPU: warp-tiled GEMMs generated with ``Options.late_refill`` and
``Options.frag_prefetch`` (each, both), with and without ``Options.carried_copies``, and (X * G) @ W with
``Options.skew_materialise``, give the float64 reference's values on fresh inputs."""

from __future__ import annotations

import pytest

from prism.codegen import Options, generate
from prism.reference import relative_error
from tests.matmul_cases import matmul_graph, scaled_matmul_graph

SHAPES = [(128, 128, 512, (1, 1), 8), (256, 256, 256, (2, 2), 4), (256, 96, 128, (2, 1), 2), (64, 256, 256, (1, 2), 4)]
OPTIONS = {"prefetch": Options(frag_prefetch=True), "late": Options(late_refill=True, stages=2),
           "both": Options(frag_prefetch=True, late_refill=True), "both8": Options(frag_prefetch=True, warps=8),
           "carried3": Options(stages=3), "items": Options(carried_copies=False)}


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(OPTIONS))
def test_main_loop_options_match_the_reference_on_the_gpu(name: str) -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    from prism.runtime import compile_plan

    for i, shape in enumerate(SHAPES):
        kg = matmul_graph(*shape)
        fn = compile_plan(generate(kg, arch="sm_90", options=OPTIONS[name]))
        rng = torch.Generator().manual_seed(i)
        xs = [torch.randn(t.shape, generator=rng, dtype=torch.float64) * 0.5 for t in kg.inputs]
        ref = xs[0].numpy() @ xs[1].numpy()
        out = fn(*[x.to("cuda", torch.float16) for x in xs])
        torch.cuda.synchronize()
        err = relative_error(out.double().cpu().numpy(), ref)
        assert err < 2e-2, f"{name} {shape}: relative error {err:.3e}"


@pytest.mark.gpu
def test_skewed_materialisation_matches_the_reference_on_the_gpu() -> None:
    """``Options.skew_materialise``: (X * G) @ W with the product computed one iteration ahead."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    from prism.runtime import compile_plan

    options = Options(skew_materialise=True)
    for i, shape in enumerate([(16, 128, 1024, (1, 2), 16), (32, 64, 256, (2, 1), 2), (64, 128, 512, (1, 1), 8)]):
        kg = scaled_matmul_graph(*shape)
        fn = compile_plan(generate(kg, arch="sm_90", options=options))
        rng = torch.Generator().manual_seed(i)
        xs = [torch.randn(t.shape, generator=rng, dtype=torch.float64) * 0.5 for t in kg.inputs]
        ref = (xs[0].numpy() * xs[1].numpy()) @ xs[2].numpy()
        out = fn(*[x.to("cuda", torch.float16) for x in xs])
        torch.cuda.synchronize()
        err = relative_error(out.double().cpu().numpy(), ref)
        assert err < 2e-2, f"{shape}: relative error {err:.3e}"


@pytest.mark.gpu
def test_paired_gemm_matches_the_reference_on_the_gpu() -> None:
    """A 128x128 tile at 4 warps because two blocks share an SM (``lower._pairs``): 136 blocks, 3 stages."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    from prism.runtime import compile_plan

    kg = matmul_graph(2176, 1024, 256, (17, 8), 4)
    plan = generate(kg, arch="sm_90")
    assert plan.kernels[0].block == (128, 1, 1)
    fn = compile_plan(plan)
    rng = torch.Generator().manual_seed(7)
    xs = [torch.randn(t.shape, generator=rng, dtype=torch.float64) * 0.5 for t in kg.inputs]
    out = fn(*[x.to("cuda", torch.float16) for x in xs])
    torch.cuda.synchronize()
    err = relative_error(out.double().cpu().numpy(), xs[0].numpy() @ xs[1].numpy())
    assert err < 2e-2, f"relative error {err:.3e}"
