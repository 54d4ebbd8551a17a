"""superoptimize's comparison with torch.compile's kernels (prism.tune.inductor), on the CPU: a fake
backend times and runs fake kernels, so the decision, the reference check and the summary are tested
without torch; the GPU path is the same code with CudaBackend and InductorKernel."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

from prism import pipeline
from prism.graph import Graph
from prism.torch_program import torch_program
from prism.tune.inductor import COMPARE_ROUNDS, TIE_MARGIN, Verdict, Winner, compare
from prism.tune.inputs import input_sampler
from prism.tune.timing import rotated


def _graph() -> Graph:
    g = Graph()
    x = g.input((4, 16), dtype="float16", name="X")
    g.output(g.mul(g.silu(x), x), name="O")
    return g


class _Kernel:
    """A fake compiled kernel: its outputs are the reference's times ``(1 + skew)``."""

    def __init__(self, graph: Graph, us: float, skew: float = 0.0) -> None:
        self.graph, self.us, self.skew = graph, us, skew

    def outputs(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {k: v * (1.0 + self.skew) for k, v in self.graph.evaluate(inputs).items()}


class _Backend:
    def __init__(self) -> None:
        self.setups = 0
        self.timed: list[float] = []

    def setup(self, graph: Graph, inputs: Mapping[str, np.ndarray]) -> None:
        self.setups += 1

    def time_us(self, kernel: Any) -> float:
        self.timed.append(kernel.us)
        return float(kernel.us)

    def run(self, kernel: Any, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        return kernel.outputs(inputs)


def _compare(gen_us: float, ind_us: float, skew: float = 0.0) -> tuple[Any, Any, Verdict, _Backend]:
    """The comparison with Inductor's kernel alone (eager left out)."""
    g = _graph()
    gen = _Kernel(g, gen_us)
    be = _Backend()
    chosen, v = compare(g, be, gen, input_sampler(g), 0, lambda graph, generated: _Kernel(graph, ind_us, skew), None)
    return gen, chosen, v, be


def _three(gen_us: float, ind_us: float, eager_us: float, eager_skew: float = 0.0) -> tuple[Any, Verdict, _Backend]:
    g = _graph()
    be = _Backend()
    kernels = {"gen": _Kernel(g, gen_us), "ind": _Kernel(g, ind_us), "eag": _Kernel(g, eager_us, eager_skew)}
    chosen, v = compare(g, be, kernels["gen"], input_sampler(g), 0, lambda graph, generated: kernels["ind"],
                        lambda graph, generated: kernels["eag"])
    return next(k for k, kernel in kernels.items() if kernel is chosen), v, be


def test_the_fastest_of_generated_inductor_and_eager_is_returned() -> None:
    """Eager PyTorch (cuBLAS for a GEMM) is a third candidate: returned when it is the fastest of the two
    PyTorch kernels and the generated plan does not beat it by more than the margin."""
    chosen, v, be = _three(10.0, 12.0, 9.0)
    assert chosen == "eag" and v.winner is Winner.EAGER and not v.inductor_wins
    assert (v.generated_us, v.inductor_us, v.eager_us, v.winner_us) == (10.0, 12.0, 9.0, 9.0)
    assert be.timed == [10.0, 12.0, 9.0, 12.0, 9.0, 10.0, 9.0, 10.0, 12.0] and be.setups == 1  # each at each place
    chosen, v, _ = _three(10.0, 9.5, 9.8)  # both PyTorch kernels tie the plan: the faster of them
    assert chosen == "ind" and v.winner is Winner.INDUCTOR and v.winner_us == 9.5
    chosen, v, _ = _three(10.0, 10.0 * (1 + 2 * TIE_MARGIN), 10.0 * (1 + 3 * TIE_MARGIN))
    assert chosen == "gen" and v.winner is Winner.GENERATED and v.winner_rel_err is None


def test_a_wrong_eager_kernel_is_never_returned_and_inductor_still_competes() -> None:
    chosen, v, be = _three(10.0, 12.0, 1.0, eager_skew=0.5)  # eager fastest but 50% off the reference
    assert chosen == "gen" and v.eager_us is None and v.eager_why is not None and "relative error" in v.eager_why
    assert v.inductor_us == 12.0 and be.timed == [10.0, 12.0, 12.0, 10.0]


def test_inductor_is_returned_only_when_faster() -> None:
    gen, chosen, v, be = _compare(5.0, 3.0)
    assert chosen is not gen and v.inductor_wins
    assert (v.generated_us, v.inductor_us, v.why) == (5.0, 3.0, None)
    assert be.timed == [5.0, 3.0, 3.0, 5.0] and be.setups == 1  # timed in turn, each first once, on one setup
    gen, chosen, v, _ = _compare(2.0, 3.0)
    assert chosen is gen and not v.inductor_wins and v.inductor_us == 3.0


def test_a_tie_within_the_margin_goes_to_inductor() -> None:
    """The generated plan must beat Inductor's kernel by more than timing noise to be returned."""
    gen, chosen, v, _ = _compare(10.0, 10.0 * (1 + TIE_MARGIN / 2))  # generated 1% faster: a tie
    assert chosen is not gen and v.inductor_wins
    gen, chosen, v, _ = _compare(10.0, 10.0 * (1 + 2 * TIE_MARGIN))  # generated faster beyond the margin
    assert chosen is gen and not v.inductor_wins


def test_each_kernel_keeps_its_best_of_the_interleaved_timings() -> None:
    """A slow first replay of Inductor's kernel (9 µs, then 3) does not decide: the best of each counts."""
    g = _graph()
    gen, be = _Kernel(g, 5.0), _Backend()
    first = iter([9.0])
    be.time_us = lambda kernel: next(first, kernel.us) if kernel is not gen else kernel.us  # type: ignore[method-assign]
    chosen, v = compare(g, be, gen, input_sampler(g), 0, lambda graph, generated: _Kernel(graph, 3.0), None)
    assert chosen is not gen and (v.generated_us, v.inductor_us) == (5.0, 3.0)


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_the_timing_order_puts_every_candidate_at_every_place(n: int) -> None:
    """``rotated``: at least ``COMPARE_ROUNDS`` rounds, and as many as candidates, so that a kernel timed
    after a heavy one is not always the one slowed."""
    order = list(range(n))
    rounds = max(COMPARE_ROUNDS, n)
    seq = rotated(order, rounds)
    assert len(seq) == rounds * n
    for r in range(rounds):
        assert sorted(seq[r * n:(r + 1) * n]) == sorted(order)  # every candidate once a round
    for place in range(n):
        assert {seq[r * n + place] for r in range(rounds)} == set(order)  # every candidate at every place


def test_a_wrong_inductor_kernel_is_never_returned() -> None:
    gen, chosen, v, be = _compare(5.0, 1.0, skew=0.5)  # faster but 50% off the float64 reference
    assert chosen is gen and not v.inductor_wins
    assert v.why is not None and "relative error" in v.why and be.timed == []


def test_a_failing_build_keeps_the_generated_plan() -> None:
    g = _graph()
    gen = _Kernel(g, 5.0)

    def broken(graph: Graph, generated: Any) -> Any:
        raise RuntimeError("no triton here")

    chosen, v = compare(g, _Backend(), gen, input_sampler(g), 0, broken, broken)
    assert chosen is gen and v.why is not None and "no triton here" in v.why
    assert v.eager_why is not None and "no triton here" in v.eager_why and v.winner is Winner.GENERATED


def test_the_summary_names_inductor_when_it_wins() -> None:
    g = _graph()
    summary = pipeline.Summary(plan_source="searched", best_us=5.0, rel_err=1e-4)
    out = pipeline._versus_inductor(g, _Backend(), _Kernel(g, 5.0), summary, input_sampler(g), 0,
                                    lambda graph, generated: _Kernel(graph, 2.5), None)
    assert isinstance(out, _Kernel) and out.us == 2.5
    assert summary["plan_source"] == "inductor" and summary["best_us"] == 2.5
    assert summary["inductor"]["generated_us"] == 5.0
    summary = pipeline.Summary(plan_source="searched", best_us=5.0, rel_err=1e-4)
    pipeline._versus_inductor(g, _Backend(), _Kernel(g, 5.0), summary, input_sampler(g), 0,
                              lambda graph, generated: _Kernel(graph, 7.0), None)
    assert summary["plan_source"] == "searched" and summary["best_us"] == 5.0
    assert summary["inductor"]["inductor_us"] == 7.0
    summary = pipeline.Summary(plan_source="searched", best_us=5.0, rel_err=1e-4)
    out = pipeline._versus_inductor(g, _Backend(), _Kernel(g, 5.0), summary, input_sampler(g), 0,
                                    lambda graph, generated: _Kernel(graph, 7.0),
                                    lambda graph, generated: _Kernel(graph, 4.0))
    assert isinstance(out, _Kernel) and out.us == 4.0
    assert summary["plan_source"] == "eager" and summary["best_us"] == 4.0
    assert summary["rel_err"] == summary["inductor"]["eager_rel_err"] and summary["rel_err"] < 1e-9


def test_the_interpreter_backend_never_builds_an_inductor_candidate(monkeypatch: pytest.MonkeyPatch,
                                                                      tmp_path: Any) -> None:
    from prism.tune.backends import InterpreterBackend

    def boom(*a: Any, **k: Any) -> Any:
        raise AssertionError("compared with Inductor on the interpreter backend")

    monkeypatch.setenv("PRISM_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(pipeline, "compare", boom)
    fast = pipeline.superoptimize(_graph(), samples=2, progress=False, backend=InterpreterBackend(lambda kg: 1.0))
    assert fast.summary["plan_source"] != "inductor" and "inductor" not in fast.summary


def test_every_torch_program_has_its_own_code_object() -> None:
    # torch.compile caches per code object: graphs must not share one (nor its recompile limit)
    f, h = torch_program(_graph()), torch_program(_graph())
    assert f.__code__ is not h.__code__ and f.__code__.co_code == h.__code__.co_code
