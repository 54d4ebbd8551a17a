"""Progress bars start no thread: the mapping's workers are forked only from a process that runs no
other thread (``parallel._forkable``), so a tqdm monitor thread would leave a search with progress shown
(``superoptimize``'s default) mapping on one core."""

from __future__ import annotations

import threading

import pytest

from prism import pipeline, workloads
from prism.search import parallel


def test_a_search_with_progress_shown_runs_no_other_thread_while_it_maps(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []
    real = parallel.instantiate_all

    def spy(*args: object, **kw: object) -> parallel.Mapped:
        seen.append(threading.active_count())
        return real(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr("prism.search.verified.instantiate_all", spy)
    g = workloads.rmsnorm_mlp(n=8, d=64)
    out = pipeline.search_and_verify(g, program="rmsnorm_mlp", progress=True, cache=False)
    assert out.templates and len(seen) >= 2  # the parts' searches and the whole program's
    assert seen == [1] * len(seen), seen  # the parts' bar and the verifier's are open before some of them
