"""The walk types a split graph's combine kernel without repeated iterations (``Walker.no_repeats``),
as ``parallel.plan_key`` types it after the walk: the mappings that survive ``plan_key`` are the
same with and without that early check, only fewer are built (issue 13)."""

from __future__ import annotations

import pytest

from prism import workloads
from prism.search import SearchConfig, instantiate_mappings, search
from prism.search import walk as walk_mod
from prism.search.parallel import plan_key


def _survivors(program: str, step: int) -> tuple[list[list[str]], int]:
    cands = search(workloads.program(program), SearchConfig(), name=program).candidates[::step]
    keys, built = [], 0
    for c in cands:
        graphs = instantiate_mappings(c).graphs
        built += len(graphs)
        keys.append(sorted(k for k in map(plan_key, graphs) if k is not None))
    return keys, built


@pytest.mark.parametrize(("program", "step"), [("rmsnorm_linear", 1), ("gqa", 8)])
def test_early_repeat_check_keeps_every_survivor(program: str, step: int, monkeypatch: pytest.MonkeyPatch) -> None:
    early, built_early = _survivors(program, step)
    init = walk_mod.Walker.__init__

    def late_only(self: walk_mod.Walker, *args: object, **kwargs: object) -> None:
        init(self, *args, **kwargs)  # type: ignore[arg-type]  # the real signature, passed through
        self.no_repeats = [False] * len(self.no_repeats)

    monkeypatch.setattr(walk_mod.Walker, "__init__", late_only)
    late, built_late = _survivors(program, step)
    assert early == late
    assert any(early) and built_early <= built_late
    if program == "gqa":
        assert built_early < built_late, "the early check dropped nothing: the test checks nothing"
