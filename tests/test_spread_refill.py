"""``Options.spread_refill``: a main loop whose one op is a warp-tiled matmul issues the ring's refill in
parts after each k-step's ldmatrix. The lowering decides where it applies; the rendered parts issue
every copy of a thread exactly once; the sources compile without spills (values: the GPU probe,
docs/codegen.md, "The refill spread over the k-steps")."""

from __future__ import annotations

import re

import pytest

from prism.codegen import Options, generate
from prism.codegen.nvcc import compile_check, nvcc_path
from tests.matmul_cases import matmul_graph, scaled_matmul_graph
from tests.test_warp_tiles import _kernel

SPREAD = Options(spread_refill=True)


def test_only_a_refilled_loop_of_one_warp_tiled_matmul_spreads() -> None:
    kg = matmul_graph(256, 256, 1024, (2, 4), 16)
    assert _kernel(kg, SPREAD).spread == 2 and _kernel(kg, Options()).spread is None
    assert _kernel(matmul_graph(256, 256, 256, (2, 4), 4), SPREAD).spread is None  # every stage in the prologue
    assert _kernel(scaled_matmul_graph(256, 256, 512, (2, 4), 8), SPREAD).spread is None  # a materialised operand too


def test_the_parts_issue_every_copy_once() -> None:
    src = generate(matmul_graph(256, 256, 1024, (2, 4), 16), arch="sm_80", options=SPREAD).kernels[0].source
    k = int(re.search(r"for \(int q = 0; q < (\d+); \+\+q\)", src).group(1))
    part = r"for \(int j = \(q \* (\d+) \+ (\d+)\) / (\d+); j < \(\(q \+ 1\) \* \d+ \+ \d+\) / \d+; \+\+j\)"
    bounds = re.findall(part, src)
    assert len(bounds) == 2 and "refill(q);" in src
    for n, km1, kk in ((int(a), int(b), int(c)) for a, b, c in bounds):
        assert kk == k and km1 == k - 1
        issued = [j for q in range(k) for j in range((q * n + k - 1) // k, ((q + 1) * n + k - 1) // k)]
        assert issued == list(range(n))


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc not on the PATH")
def test_spread_sources_compile_without_spills() -> None:
    sources = [(k.entry, k.source) for kg, o in ((matmul_graph(256, 256, 1024, (2, 4), 16), SPREAD),
                                                 (matmul_graph(256, 256, 1024, (2, 2), 16),
                                                  Options(spread_refill=True, frag_prefetch=True)))
               for k in generate(kg, arch="sm_80", options=o).kernels]
    compiled = compile_check(sources, "sm_80", jobs=2)
    assert len(compiled) == 2 and all(c.spills == 0 for c in compiled)
