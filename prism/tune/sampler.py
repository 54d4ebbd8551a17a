"""Uniform random sampling of (template, sizes) pairs across all templates, deterministic under a seed."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Sample:
    template: int  # index into the templates
    sizes: tuple[tuple[str, int], ...]  # hashable; ``dict(sample.sizes)`` for a mapping

    @property
    def size_map(self) -> dict[str, int]:
        return dict(self.sizes)


def sample(space: Sequence[Sequence[Mapping[str, int]]], count: int, seed: int) -> list[Sample]:
    """``count`` distinct pairs drawn uniformly from every (template i, sizes in space[i]) pair.

    All pairs when there are no more than ``count``. The same space, count and seed give the same
    samples in the same order.
    """
    if count < 0:
        raise ValueError(f"sample count {count} is negative")
    offsets = []
    total = 0
    for sizes in space:
        offsets.append(total)
        total += len(sizes)
    picks = random.Random(seed).sample(range(total), min(count, total))
    out = []
    for flat in picks:
        t = max(i for i, off in enumerate(offsets) if off <= flat and len(space[i]) > flat - off)
        out.append(Sample(t, tuple(space[t][flat - offsets[t]].items())))
    return out
