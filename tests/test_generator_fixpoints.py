"""The generator's bounds ``heights`` and ``least_sizes`` are fixpoints computed with a worklist
(each value recomputed only when an argument moved): the same tables as iterating every value in
turn until nothing changes, on random recipe graphs with cycles, loads and unreachable values."""

from __future__ import annotations

import random

from prism.search.generator import Recipe, _users, descendants, heights, least_sizes, required


def _round_robin_heights(opts: list[list[Recipe]]) -> list[int]:
    h = [1 << 30] * len(opts)
    changed = True
    while changed:
        changed = False
        for n, rs in enumerate(opts):
            for r in rs:
                v = 1 + max((h[a] for a in r.args), default=0)
                if v < h[n]:
                    h[n], changed = v, True
    return h


def _round_robin_least(opts: list[list[Recipe]], req: list[int], desc: list[int]) -> list[int]:
    count = len(opts)
    least = [min(r.bit_count(), count + 1) for r in req]
    changed = True
    while changed:
        changed = False
        for n, rs in enumerate(opts):
            bound = count + 1
            for r in rs:
                args = tuple(dict.fromkeys(r.args))
                union = 1 << n
                for a in args:
                    union |= req[a]
                v = union.bit_count()
                for a in args:
                    others = 0
                    for b in args:
                        if b != a:
                            others |= req[b]
                    v = max(v, 1 + least[a] + (others & ~desc[a] & ~(1 << n)).bit_count())
                bound = min(bound, v)
            if min(bound, count + 1) > least[n]:
                least[n], changed = min(bound, count + 1), True
    return least


def _random_options(rng: random.Random, count: int) -> list[list[Recipe]]:
    opts: list[list[Recipe]] = []
    for _ in range(count):
        kind = rng.random()
        if kind < 0.2:
            opts.append([Recipe(None, (), "X")])  # a load
        elif kind < 0.3:
            opts.append([])  # no recipe: never computed
        else:
            opts.append([Recipe(None, tuple(rng.randrange(count) for _ in range(rng.choice((1, 2, 2, 3)))))
                         for _ in range(rng.randint(1, 4))])
    return opts


def test_worklist_fixpoints_equal_the_round_robin_ones() -> None:
    rng = random.Random(7)
    moved = 0
    for _ in range(300):
        opts = _random_options(rng, rng.randint(2, 24))
        count = len(opts)
        req = required(count, opts.__getitem__)
        desc = descendants(count, opts.__getitem__)
        h = heights(count, opts.__getitem__)
        assert h == _round_robin_heights(opts)
        least = least_sizes(count, opts.__getitem__, req, desc)
        assert least == _round_robin_least(opts, req, desc)
        moved += sum(x != min(r.bit_count(), count + 1) for x, r in zip(least, req, strict=True))
    assert moved > 100  # the iteration raised many bounds above their start


def test_heights_from_a_start_equal_heights_from_scratch() -> None:
    """``_LaterKernels._reachable``'s shortcut: the heights with nothing loaded, then a load recipe added to
    some values and only those (and what falls with them) recomputed: the same table as computing the
    grown options' heights from scratch."""
    rng = random.Random(11)
    fell = 0
    for _ in range(300):
        opts = _random_options(rng, rng.randint(2, 24))
        count = len(opts)
        grown = sorted(rng.sample(range(count), rng.randint(1, min(4, count))))
        more = [[*rs, Recipe(None, (), "T")] if n in grown else rs for n, rs in enumerate(opts)]
        users = _users(more)  # a load has no arguments: the users are those of ``opts``
        assert users == _users(opts)
        before = heights(count, opts.__getitem__, users)
        after = heights(count, more.__getitem__, users, start=before, grown=grown)
        assert after == _round_robin_heights(more)
        fell += sum(a < b for n, (a, b) in enumerate(zip(after, before, strict=True)) if n not in grown)
    assert fell > 100  # heights of values not loaded fell with their loaded arguments
