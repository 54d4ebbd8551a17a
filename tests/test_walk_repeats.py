"""The walk types a split graph's combine kernel without repeated iterations (``Walker.no_repeats``),
as the whole check after the walk types it: the mappings that survive ``parallel.kept_form`` (which
relies on that early check and skips the whole check where no kernel has a loop of its own left)
are those that survive the whole check without the early one, only fewer are built (issue 13)."""

from __future__ import annotations

import pytest

from prism import workloads
from prism.ir import KernelGraph
from prism.search import SearchConfig, instantiate_mappings, search
from prism.search import walk as walk_mod
from prism.search.canonical import canonical_key
from prism.search.layout import layout_ok
from prism.search.mapping import without_idle_loops
from prism.search.parallel import kept_form


def _whole_check_key(kg: KernelGraph) -> str | None:
    """``_kept_key`` by its definition: every kernel typed again without repeats."""
    one = without_idle_loops(kg)
    return canonical_key(one) if layout_ok(one, repeats=False) else None


def _kept_key(kg: KernelGraph) -> str | None:
    """The canonical key of ``kept_form(kg)``, None where it is dropped."""
    one = kept_form(kg)
    return None if one is None else canonical_key(one)


def _survivors(program: str, step: int, key: object = _kept_key) -> tuple[list[list[str]], int]:
    cands = search(workloads.program(program), SearchConfig(), name=program).candidates[::step]
    keys, built = [], 0
    for c in cands:
        graphs = instantiate_mappings(c).graphs
        built += len(graphs)
        keys.append(sorted(k for k in map(key, graphs) if k is not None))  # type: ignore[call-overload]
    return keys, built


@pytest.mark.parametrize(("program", "step"), [("rmsnorm_linear", 1), ("gqa", 8)])
def test_early_repeat_check_keeps_every_survivor(program: str, step: int, monkeypatch: pytest.MonkeyPatch) -> None:
    early, built_early = _survivors(program, step)
    init = walk_mod.Walker.__init__

    def late_only(self: walk_mod.Walker, *args: object, **kwargs: object) -> None:
        init(self, *args, **kwargs)  # type: ignore[arg-type]  # the real signature, passed through
        self.no_repeats = [False] * len(self.no_repeats)

    monkeypatch.setattr(walk_mod.Walker, "__init__", late_only)
    late, built_late = _survivors(program, step, _whole_check_key)
    assert early == late
    assert any(early) and built_early <= built_late
    if program == "gqa":
        assert built_early < built_late, "the early check dropped nothing: the test checks nothing"


def test_kept_form_skips_the_whole_check_only_where_it_would_pass() -> None:
    """``parallel.kept_form`` types a mapping again only where a kernel has a loop of its own left;
    on every mapping of a search with repeats to drop it keeps exactly what the whole check keeps."""
    from bench.zoo import zoo_graph

    cands = search(zoo_graph("soft_moe_mix"), SearchConfig(max_candidates=400)).candidates
    graphs = [kg for c in cands for kg in instantiate_mappings(c).graphs]
    whole = [layout_ok(without_idle_loops(kg), repeats=False) for kg in graphs]
    assert [kept_form(kg) is not None for kg in graphs] == whole
    assert whole.count(False) > 0 and len(graphs) > 500  # there were repeats to drop
