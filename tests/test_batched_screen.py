"""The screen's interpreter over every block at once (``prism.verify.batched``) computes what the
block-by-block interpreter computes: on every mapping of a search and on the hand-written plans,
at the screen's sizes, right plans and wrong ones, and the screen falls back where it must."""

from __future__ import annotations

import functools
import time

import numpy as np
import pytest

from bench.zoo import zoo_graph
from prism import interpreter, plans, workloads
from prism.errors import PrismError
from prism.graph import Graph
from prism.interpreter import Prefixes
from prism.ir import KernelGraph
from prism.search import SearchConfig, search
from prism.search.parallel import instantiate_all
from prism.verify import batched
from prism.verify.screen import _size_sets, screen, small_instance


def _outputs(run: object, kg: KernelGraph, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray] | str:
    try:
        return run(kg, inputs)  # type: ignore[operator, no-any-return]
    except PrismError as e:
        return type(e).__name__


def _compare(g: Graph, kgs: list[KernelGraph]) -> dict[str, int]:
    """Both interpreters on every plan at each of the screen's size sets: equal outputs (NaN where
    the other has NaN) or the same error."""
    small = small_instance(g)
    rng = np.random.default_rng(1)
    inputs = {t.name: rng.standard_normal(t.shape) for t in small.inputs}
    ref = small.evaluate(inputs)
    ins, outs = {t.name: t.shape for t in small.inputs}, {t.name: t.shape for t in small.outputs}
    seen = {"runs": 0, "wrong": 0, "errors": 0, "later_kernels": 0}
    prefixes: Prefixes = {}  # shared by every plan, as the screen shares them: the same outputs
    for kg in kgs:
        kg = kg.with_shapes(ins, outs)
        for sizes in _size_sets(kg.symbols):
            concrete = kg.instantiate(sizes)
            want, got = _outputs(interpreter.run, concrete, inputs), _outputs(batched.run, concrete, inputs)
            shared = _outputs(functools.partial(batched.run, prefixes=prefixes), concrete, inputs)
            if isinstance(want, str) or isinstance(got, str):
                assert got == want == shared, (sizes, concrete)
                seen["errors"] += 1
                continue
            assert not isinstance(shared, str)
            seen["later_kernels"] += len(concrete.kernels) - 1
            for name, w in want.items():
                assert got[name].shape == w.shape
                np.testing.assert_allclose(got[name], w, rtol=1e-9, atol=1e-12, equal_nan=True)
                np.testing.assert_array_equal(shared[name], got[name])
            seen["runs"] += 1
            seen["wrong"] += any(not np.allclose(want[n], ref[n], rtol=1e-6, equal_nan=False) for n in ref)
    seen["prefixes"] = len(prefixes)
    return seen


# col_softmax: 66 mappings since the layout typing rejects plain sums of shifted chunks (6,089 before)
@pytest.mark.parametrize(("name", "config", "every", "runs"), [
    ("scaled_attention", SearchConfig(max_candidates=200), 4, 500),
    ("masked_attention", SearchConfig(max_candidates=150), 4, 500),
    ("col_softmax", SearchConfig(loop_one=True), 1, 100),
])
def test_every_mapping_of_a_search_runs_the_same_batched(name: str, config: SearchConfig, every: int, runs: int) -> None:
    g = zoo_graph(name)
    mapped = instantiate_all(search(g, config).candidates, deadline=time.time() + 60, jobs=1)
    seen = _compare(g, mapped.graphs[::every])
    assert seen["runs"] > runs and seen["runs"] > seen["wrong"] > 0  # right and wrong plans both compared
    if name.endswith("attention"):  # split plans: some began as earlier plans began, and ran from there
        assert 0 < seen["prefixes"] < seen["later_kernels"]


def test_the_hand_written_plans_run_the_same_batched() -> None:
    from test_verify import SMALL

    cases = [(workloads.program(n, **SMALL[n]), fn) for n, fn in [
        ("gqa_safe", plans.safe_gqa_split_plan), ("gqa_safe", plans.safe_gqa_plan), ("gqa", plans.gqa_split_plan),
        ("rmsnorm_linear", plans.rmsnorm_linear_splitk_plan), ("swiglu", plans.swiglu_splitk_plan),
        ("rmsnorm_mlp", plans.rmsnorm_mlp_plan)]]
    for g, fn in cases:
        seen = _compare(g, [fn(g)])
        assert seen["runs"] >= 1 and seen["wrong"] == 0


def test_a_plan_the_batched_form_does_not_cover_is_screened_block_by_block(monkeypatch: pytest.MonkeyPatch) -> None:
    g = zoo_graph("scaled_attention")
    kgs = instantiate_all(search(g, SearchConfig(max_candidates=60)).candidates, deadline=time.time() + 60,
                          jobs=1).graphs[::5]
    batched_verdicts = screen(g, kgs)
    assert True in batched_verdicts and False in batched_verdicts

    def uncovered(kg: KernelGraph, inputs: object, **_: object) -> None:
        raise batched.NotBatched("as if uncovered")

    monkeypatch.setattr(batched, "run", uncovered)
    assert screen(g, kgs) == batched_verdicts

