"""The search's target sub-expression set, and so its candidates, do not depend on the order Python
iterates sets in (``PYTHONHASHSEED``): a monomial's powers are taken at every coefficient it has in
the target, once all are known (``exprprune.Target.build``). Before, the coefficients a monomial had
by the time a sum first reached it decided: a logsumexp's target held 13 or 15 sub-expressions, and
its search 1,926 or 2,472 candidates, from one process to the next."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

_PROBE = """
import json
import sys
from prism.graph import Graph
from prism.search import search
from prism.search.config import SearchConfig
from prism.search.dimmatch import program_labels
from prism.search.exprprune import build_target

def programs():
    g = Graph()
    g.output(g.logsumexp(g.input((16, 256), "float16", "X"), -1), "O")
    yield g
    g = Graph()
    x = g.input((16, 256), "float16", "X")
    g.output(g.sub(x, g.logsumexp(x, -1)), "O")
    yield g

out = []
for g in programs():
    target = build_target(g, program_labels(g))
    if sys.argv[1] == "search":
        res = search(g, SearchConfig(loop_one=True, time_budget_s=60))
        out.append([len(target.subexprs), len(res.candidates), bool(res.stats["timed_out"])])
    else:
        out.append([len(target.subexprs)])
print(json.dumps(out))
"""


def _probe(seed: int, what: str) -> list[list[object]]:
    env = {**os.environ, "PYTHONHASHSEED": str(seed), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", _PROBE, what], env=env, capture_output=True, text=True,
                          timeout=240, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_target_does_not_depend_on_the_hash_seed() -> None:
    runs = [_probe(seed, "target") for seed in range(6)]
    assert all(run == runs[0] for run in runs), runs


@pytest.mark.parametrize("seeds", [(0, 1), pytest.param((0, 1, 2, 3), marks=pytest.mark.slow)])
def test_the_candidates_do_not_depend_on_the_hash_seed(seeds: tuple[int, ...]) -> None:
    """The search's candidates (36 s a seed on one core): two seeds in CI, four under the slow marker."""
    runs = [_probe(seed, "search") for seed in seeds]
    assert all(not timed_out for run in runs for *_, timed_out in run), runs
    assert all(run == runs[0] for run in runs), runs
