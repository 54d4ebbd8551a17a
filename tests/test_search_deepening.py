"""The single-kernel enumeration walks level by level (``Generator._within_levels``): the last level's
walk is the one-walk enumeration, so a search that finishes finds the same block graphs in the same
order; a level that cannot finish by the deadline (``Generator._deepen``'s projection) stops the
search early with the graphs of the level below, where one walk would have run to the deadline and
kept none."""

from __future__ import annotations

import dataclasses
import time

import pytest

from prism.graph import Graph
from prism.pipeline import default_config
from prism.search import generator, search
from prism.search.generator import PROJECT_AFTER_S, Generator, _Level, _Timeout

F16 = "float16"


def _centered(adds: int) -> Graph:
    """``y - mean(y)`` of ``y`` a sum of ``adds + 1`` inputs: the centring half of a post-norm
    residual (a layer norm after ``x + h + bias``), whose algebraic variants grow fast with ``adds``."""
    g = Graph()
    y = g.input((16, 768), F16, "in0")
    for i in range(adds):
        y = g.add(y, g.input((16, 768) if i == 0 else (1, 768), F16, f"in{i + 1}"))
    g.output(g.sub(y, g.mean(y, -1)), "out0")
    return g


def _rms_norm_weight() -> Graph:
    g = Graph()
    x, w = g.input((16, 256), F16, "X"), g.input((1, 256), F16, "W")
    g.output(g.mul(g.rms_norm(x), w), "O")
    return g


def _generator(g: Graph, budget: float = 60.0) -> tuple[Generator, list[int], int]:
    gen = Generator(g, default_config(g, budget), "t")
    gen.deadline = time.monotonic() + budget
    gen.build_values()
    gen.min_ops = gen._min_ops()
    assert gen.min_ops is not None
    gen.max_ops = gen.min_ops + gen.cfg.extra_ops
    roots = [n for n, _ in gen._out_roots() or []]
    return gen, roots, gen.max_ops - len(roots)


@pytest.mark.parametrize("program", [_rms_norm_weight(), _centered(0)], ids=["rms_norm_weight", "centered"])
def test_the_levels_give_the_one_walk_enumeration(program: Graph) -> None:
    gen, roots, budget = _generator(program)
    assert gen._within_levels(roots, budget)[0] == list(gen.closures(roots, budget, None, 0))


def test_the_projection_stops_only_a_level_that_cannot_finish() -> None:
    gen, _, _ = _generator(_centered(0), budget=60.0)
    slow = _Level(steps=1000, seconds=PROJECT_AFTER_S + 1.0)
    gen._deepen(None, slow)  # nothing to project from
    gen._deepen(_Level(1000, 0.1), slow)  # no growth: 1.5 s more, well within the deadline
    gen._deepen(_Level(10, 0.0), _Level(100, PROJECT_AFTER_S / 2))  # too short to project from
    assert not gen.stats.stopped_early
    with pytest.raises(_Timeout):
        gen._deepen(_Level(10, 0.01), slow)  # 100x the steps: about 150 s, past the 60 s budget
    assert gen.stats.stopped_early and gen.stats.timed_out


def test_a_stopped_deepening_keeps_the_level_below(monkeypatch: pytest.MonkeyPatch) -> None:
    """The search stopped before its second level emits exactly the single-kernel candidates of a
    search bounded to the fewest ops, and ends there."""
    g = _centered(0)
    calls = []

    def stop_at_second(self: Generator, before: _Level | None, level: _Level) -> None:
        if self.min_ops is None:  # the fewest ops' own deepening (``_min_ops``) goes on
            return
        calls.append(level)  # the first call comes before the fewest-ops level, the second after it
        if len(calls) == 2:
            self.stats.timed_out = self.stats.stopped_early = True
            raise _Timeout

    least = search(g, default_config(g, 60)).stats["min_block_ops"]
    assert isinstance(least, int)
    bounded = search(g, dataclasses.replace(default_config(g, 60), max_block_ops=least))
    monkeypatch.setattr(Generator, "_deepen", stop_at_second)
    stopped = search(g, default_config(g, 60))
    assert stopped.stats["stopped_early"]
    one_kernel = [c for c in bounded.candidates if len(c.kernels) == 1]
    assert one_kernel and [c.kernels for c in stopped.candidates] == [c.kernels for c in one_kernel]


class _StepClock:
    """A stand-in for the generator's clock that advances a fixed time at each reading: the walk reads
    it once per 2,048 steps, so a level's time is its walk steps times ``per_read / 2048``, the same on
    any machine (a loaded CI machine once ran the real-clock version of the test below past its budget)."""

    def __init__(self, per_read: float) -> None:
        self.now, self.per_read = 0.0, per_read

    def monotonic(self) -> float:
        self.now += self.per_read
        return self.now


def test_a_search_with_no_single_kernel_within_reach_stops_early(monkeypatch: pytest.MonkeyPatch) -> None:
    """Three inputs summed and centred: the fewest-ops walk grows about ninefold a level, so the search
    stops once the next level is projected past its budget instead of running the budget out. At 100 µs
    a walk step (about this machine's rate, whose op-limit pruning dominates) the level of about 30 K
    steps takes about 3 s of the 8 s budget and the next one (about ten times the steps) is projected
    far past it."""
    clock = _StepClock(per_read=2048 * 100e-6)
    monkeypatch.setattr(generator, "time", clock)
    g = _centered(2)
    res = search(g, default_config(g, 8))
    assert res.stats["stopped_early"] and res.stats["timed_out"], res.stats
    assert clock.now < 8.0, clock.now  # stopped before the deadline, not at it


@pytest.mark.slow
def test_the_real_clock_stops_a_deepening_before_its_budget() -> None:
    """The same search on the real clock (timing-bound: it needs the level of about 30 K walk steps to
    finish well inside 8 s, so CI skips it)."""
    g = _centered(2)
    t0 = time.perf_counter()
    res = search(g, default_config(g, 8))
    took = time.perf_counter() - t0
    assert res.stats["stopped_early"] and res.stats["timed_out"], res.stats
    assert took < 7.5, took
