"""The random sampler: uniform over all (template, sizes) pairs, deterministic under a seed."""

from __future__ import annotations

from collections import Counter

import pytest

from prism.tune.sampler import sample

SPACE = [
    [{"x": v} for v in range(10)],
    [],
    [{"x": v, "i": w} for v in range(5) for w in range(4)],
]


def test_deterministic_under_seed() -> None:
    assert sample(SPACE, 7, seed=3) == sample(SPACE, 7, seed=3)
    assert sample(SPACE, 7, seed=3) != sample(SPACE, 7, seed=4)


def test_distinct_and_within_space() -> None:
    got = sample(SPACE, 25, seed=0)
    assert len(got) == 25 == len(set(got))
    for s in got:
        assert s.template in (0, 2)
        assert s.size_map in SPACE[s.template]


def test_all_pairs_when_count_exceeds_space() -> None:
    got = sample(SPACE, 1000, seed=1)
    assert len(got) == 30
    assert Counter(s.template for s in got) == {0: 10, 2: 20}


def test_uniform_across_templates() -> None:
    """Template 2 holds 2/3 of the pairs, so it gets about 2/3 of the draws (over many seeds)."""
    counts: Counter[int] = Counter()
    for seed in range(400):
        counts.update(s.template for s in sample(SPACE, 3, seed))
    frac = counts[2] / sum(counts.values())
    assert 0.6 < frac < 0.73


def test_edge_cases() -> None:
    assert sample([], 5, 0) == []
    assert sample(SPACE, 0, 0) == []
    with pytest.raises(ValueError):
        sample(SPACE, -1, 0)
