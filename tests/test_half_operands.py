"""``Options.half_operands``: an intermediate that generated kernels read only as matmul operands is
written in the program's half dtype (the mma rounds it to half at the same point either way), one
read by anything else stays float32; the plans emulate like the interpreter and compile."""

from __future__ import annotations

import pytest

from prism.codegen import Options, generate
from prism.codegen.arch import arch
from prism.codegen.lower import lower_graph
from prism.codegen.nvcc import compile_check, nvcc_path
from prism.graph import Graph
from prism.ir import Accum, BinaryOp, CustomKernel, KernelGraph, Load, MatmulOp, Save, UnaryOp
from prism.ops import Binary, Const, Unary
from tests.test_emulate import emulate_error

HALF = Options(half_operands=True)
WIDE = Options(half_operands=False)


def _program(n: int = 16, d: int = 64) -> Graph:
    g = Graph()
    x = g.input((n, d), "float16", "X")
    w = g.input((d, d), "float16", "W")
    g.output(g.matmul(g.scale(x, 2.0), w), "O")
    return g


def _two_kernels(g: Graph, also_elementwise: bool, x: int = 2, i: int = 2) -> KernelGraph:
    """k0 writes T = 2·X; k1 reads T as the A operand of T @ W (and, if ``also_elementwise``, adds
    T - T, zero, to the product: a read that is not a matmul operand)."""
    k0 = CustomKernel("k0", (2,), 1, (Load("X", (0,)), UnaryOp(Unary.SCALE, 0, Const(2.0)), Accum(1), Save(2, "T", (0,))))
    ops = [Load("T", (None,), 1), Load("W", (1,), 0), MatmulOp(0, 1)]
    if also_elementwise:
        ops += [BinaryOp(Binary.SUB, 0, 0), UnaryOp(Unary.SCALE, 3, Const(0.0)), BinaryOp(Binary.ADD, 2, 4)]
    ops += [Accum(len(ops) - 1), Save(len(ops), "O", (1,))]
    k1 = CustomKernel("k1", (x,), i, tuple(ops))
    return KernelGraph.of(g, "scaled_matmul", [k0, k1])


@pytest.mark.parametrize("also_elementwise", [False, True])
def test_an_intermediate_read_only_as_a_matmul_operand_is_half(also_elementwise: bool) -> None:
    kg = _two_kernels(_program(), also_elementwise)
    on, off = lower_graph(kg, arch("sm_80"), HALF), lower_graph(kg, arch("sm_80"), WIDE)
    assert off.dtypes["T"] == "float32"
    assert on.dtypes["T"] == ("float32" if also_elementwise else "float16")
    for opts in (HALF, WIDE):
        assert emulate_error(kg, opts) < 1e-9


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc not installed")
def test_the_half_intermediate_compiles() -> None:
    kg = _two_kernels(_program(), False)
    plan = generate(kg, arch="sm_80", options=HALF)
    assert "half_t* __restrict__ t_T" in plan.kernels[0].source
    assert len(compile_check([(k.entry, k.source) for k in plan.kernels], "sm_80", jobs=1)) == len(plan.kernels)


@pytest.mark.gpu
def test_half_operands_give_the_same_outputs_on_the_gpu() -> None:
    """The half intermediate is the value the mma rounded before: bit-identical outputs, right against
    float64 (H200; the bench's timing of the option is separate)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("cupy")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    from prism.reference import relative_error
    from prism.runtime import compile_plan

    g = _program(64, 512)
    kg = _two_kernels(g, False, x=8, i=8)
    outs = []
    rng = torch.Generator().manual_seed(0)
    xs = {t.name: torch.randn(t.shape, generator=rng, dtype=torch.float64) * 0.1 for t in g.inputs}
    ref = g.evaluate({k: v.numpy() for k, v in xs.items()})["O"]
    for opts in (HALF, WIDE):
        fn = compile_plan(generate(kg, arch="sm_90", options=opts))
        outs.append(fn(*[xs[t.name].to("cuda", torch.float16) for t in g.inputs]))
    torch.cuda.synchronize()
    assert torch.equal(outs[0], outs[1])
    assert relative_error(outs[0].double().cpu().numpy(), ref) < 2e-2
