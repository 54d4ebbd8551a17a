"""Generated kernels for float32 programs without matmuls (docs/off-the-suite.md, "float32 programs"):
a kernel reads and writes float32 tensors as it does its float32 intermediates (16-byte runs of four);
only tensor-core code needs half operands, so a float32 program with a matmul in a generated kernel
is refused and keeps its predefined plan."""

from __future__ import annotations

import numpy as np
import pytest

from prism import interpreter, pipeline
from prism.codegen.emulate import emulate
from prism.codegen.generate import generate
from prism.codegen.nvcc import compile_check, nvcc_path
from prism.codegen.sizes import has_sizes
from prism.errors import CodegenError
from prism.graph import Graph, Tensor
from prism.ir import CustomKernel, KernelGraph, MatmulOp
from prism.partition import predefined_plan
from prism.reference import relative_error
from tests.test_emulate import cheap_sizes


def _ops(body: str, n: int, d: int) -> Graph:
    g = Graph()
    x = g.input((n, d), "float32", "X")
    b = g.input((1, d), "float32", "B")
    ops: dict[str, Tensor] = {
        "silu_bias": g.add(g.mul(x, g.sigmoid(x)), b),
        "softmax": g.softmax(x, -1),
        "rms_norm": g.mul(g.rms_norm(x), b),
        "log_softmax": g.log_softmax(x, -1),
        "col_sum": g.sum(g.square(x), 0),
    }
    g.output(ops[body], "O")
    return g.without_dead_ops()


def _program(body: str) -> Graph:
    return _ops(body, 12, 48)


PROGRAMS = ("silu_bias", "softmax", "rms_norm", "log_softmax", "col_sum")


def _searched(g: Graph) -> list[KernelGraph]:
    out = pipeline.search_and_verify(g, program="f32", progress=False)
    return [t for t in out.of(pipeline.PlanSource.SEARCHED) if has_sizes(t)]


@pytest.mark.parametrize("body", PROGRAMS)
def test_float32_plans_are_generated_and_emulate_like_the_interpreter(body: str) -> None:
    g = _program(body)
    plans = _searched(g)
    assert plans, "no searched plan of a float32 program can be generated"
    rng = np.random.default_rng(3)
    for t in plans[:4]:
        for sizes in cheap_sizes(t, 2):
            kg = t.instantiate(sizes)
            ins = {s.name: rng.standard_normal(s.shape) for s in kg.inputs}
            want = interpreter.run(kg, ins)["O"]
            assert relative_error(emulate(kg, ins)["O"], want) < 1e-12
            assert relative_error(want, g.evaluate(ins)["O"]) < 1e-9


def test_a_float32_kernel_reads_and_writes_floats() -> None:
    t = _searched(_program("silu_bias"))[0]
    kg = t.instantiate(cheap_sizes(t, 1)[0])
    src = generate(kg).kernels[0].source
    assert "const float* __restrict__ t_X" in src and "float* __restrict__ t_O" in src
    assert "half_t* __restrict__ t_" not in src


@pytest.mark.parametrize("body", PROGRAMS)
def test_a_predefined_plan_keeps_its_intermediates_in_the_programs_dtype(body: str) -> None:
    """PyTorch ops of a float32 program hand on float32 (a float16 buffer between them cost a float32
    program's predefined plan 1e-4 of error on the GPU, 40x its bound: the tuner refused it)."""
    plan = generate(predefined_plan(_program(body), "f32"))
    assert plan.buffers and {b.dtype for b in plan.buffers} == {"float32"}


def test_a_float32_matmul_in_a_generated_kernel_is_refused() -> None:
    g = Graph()
    g.output(g.silu(g.matmul(g.input((16, 64), "float32", "X"), g.input((64, 64), "float32", "W"))), "O")
    out = pipeline.search_and_verify(g, program="mm32", progress=False)
    with_mma = [t for t in out.templates
                if any(isinstance(op, MatmulOp) for k in t.kernels if isinstance(k, CustomKernel) for op in k.ops)]
    assert with_mma and not any(has_sizes(t) for t in with_mma[:5])
    with pytest.raises(CodegenError, match="tensor-core code needs"):
        generate(with_mma[0].instantiate({s: 1 for s in with_mma[0].symbols}))


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc not on the PATH")
def test_float32_sources_compile_without_spills() -> None:
    sources: dict[str, str] = {}
    for body in PROGRAMS:
        for t in _searched(_program(body))[:2]:
            for k in generate(t.instantiate(cheap_sizes(t, 1)[0])).kernels:
                sources[k.entry] = k.source
    compiled = compile_check(list(sources.items()), "sm_80", jobs=2)
    assert len(compiled) == len(sources) >= 5 and all(c.spills == 0 for c in compiled)
