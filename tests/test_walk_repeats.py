"""The walk types a split graph's combine kernel without repeated iterations (``Walker.no_repeats``),
as the whole check after the walk types it: the mappings that survive ``parallel.kept_form`` (which
relies on that early check and skips the whole check where no kernel has a loop of its own left)
are those that survive the whole check without the early one, only fewer are built (issue 13)."""

from __future__ import annotations

from dataclasses import replace

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


@pytest.fixture(scope="module")
def soft_moe_mappings() -> list[KernelGraph]:
    """Every mapping of soft_moe_mix's first 400 candidates: a search with repeats to drop."""
    from bench.zoo import zoo_graph

    cands = search(zoo_graph("soft_moe_mix"), SearchConfig(max_candidates=400)).candidates
    return [kg for c in cands for kg in instantiate_mappings(c).graphs]


def test_kept_form_skips_the_whole_check_only_where_it_would_pass(soft_moe_mappings: list[KernelGraph]) -> None:
    """``parallel.kept_form`` types a mapping again only where a kernel has a loop of its own left;
    on every mapping of a search with repeats to drop it keeps exactly what the whole check keeps."""
    graphs = soft_moe_mappings
    whole = [layout_ok(without_idle_loops(kg), repeats=False) for kg in graphs]
    assert [kept_form(kg) is not None for kg in graphs] == whole
    assert whole.count(False) > 0 and len(graphs) > 500  # there were repeats to drop


def test_remembered_kernel_verdicts_are_the_verdicts(soft_moe_mappings: list[KernelGraph]) -> None:
    """``layout.check_layout`` remembers each whole kernel's verdict (and what it stores) by the kernel and
    what came before it: on the mappings of a search with repeats to drop, checked twice over (the second
    time from memory; kernels shared across mappings), the verdicts and their reasons are those of a check
    that remembers nothing."""
    from prism.search import layout

    graphs = [without_idle_loops(kg) for kg in soft_moe_mappings]
    # and a split candidate's kernels paired across its mappings: a combine after first kernels that store
    # alike and unalike (the combine's verdict depends on what the first kernel stored)
    split = next(kg for c in search(workloads.program("gqa"), SearchConfig(), name="gqa").candidates
                 if len(c.kernels) == 2 and len(kg := instantiate_mappings(c).graphs) > 4)
    firsts, seconds = (list(dict.fromkeys(kg.kernels[i] for kg in split))[:8] for i in (0, 1))
    graphs += [replace(split[0], kernels=(a, b)) for a in firsts for b in seconds]

    def reasons(forget: bool = False) -> list[str | None]:
        out: list[str | None] = []
        for kg in graphs:
            for repeats in (False, True):
                if forget:
                    layout._KERNELS.clear()
                try:
                    layout.check_layout(kg, repeats=repeats)
                    out.append(None)
                except layout.IllTyped as e:
                    out.append(str(e))
        return out

    layout._KERNELS.clear()
    remembered = reasons() + reasons()
    kernels = 2 * sum(len(kg.kernels) for kg in graphs)
    assert len(layout._KERNELS) < kernels  # kernels recur across mappings: some verdicts came from memory
    fresh = reasons(forget=True)
    assert remembered == fresh + fresh
    assert fresh.count(None) and len(fresh) - fresh.count(None), "both verdicts occur"
    two = [r for kg, r in zip(graphs, fresh[::2], strict=True) if len(kg.kernels) == 2]
    assert fresh[::2] != fresh[1::2], "repeats decide some verdicts"
    assert two.count(None) and any(r and "kernel" in r for r in two), "combines pass and fail"
