"""The static ranking of algebraic variants loses no layout the tuner chose (issue 13): every kernel of
the committed library (chosen by tuning among the variants before the ranking existed) has its
kernel count, grid rank and every load's and save's maps among the plans the ranked search verifies.
The ops between loads and saves may differ (``x·x`` for ``square(x)``, a scale after a sum instead
of before it): the ranking keeps the variant that does no more work."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from prism import pipeline, workloads
from prism.ir import CustomKernel
from prism.pipeline import PlanSource

MANIFEST = json.loads((Path(pipeline.__file__).parent / "kernels" / "manifest.json").read_text())["entries"]


def _layout(kg: dict[str, Any]) -> tuple[object, ...]:
    inputs = {n for n, *_ in kg["inputs"]}
    outputs = {n for n, *_ in kg.get("outputs", [])} | {"O"}
    kernels = []
    for k in kg["kernels"]:
        io = []
        for o in k["ops"]:
            if o["op"] in ("load", "save"):
                own = o["tensor"] in inputs or (o["op"] == "save" and o["tensor"] in outputs)
                io.append((o["op"], o["tensor"] if own else "~", str(o.get("imap")), str(o.get("fmap")),
                           str(o.get("omap"))))
        kernels.append((len(k["grid"]), tuple(sorted(io))))
    return tuple(kernels)


@pytest.mark.parametrize("program", [
    "swiglu", "rmsnorm_linear", "rmsnorm_mlp",
    pytest.param("gqa", marks=pytest.mark.slow), pytest.param("qknorm_gqa", marks=pytest.mark.slow),
])
def test_every_library_layout_is_verified(program: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRISM_CACHE_DIR", str(tmp_path))
    graph = workloads.configs_of(program)[0].build()
    outcome = pipeline.search_and_verify(graph, program=program, progress=False)
    found = {_layout(t.to_json()) for t in outcome.of(PlanSource.SEARCHED)
             if all(isinstance(k, CustomKernel) for k in t.kernels)}  # library kernels are generated ones
    entries = {k: e for k, e in MANIFEST.items() if k.startswith(program + "/")}
    assert entries
    lost = [k for k, e in entries.items() if _layout(e["launch"]["kernel_graph"]) not in found]
    assert not lost, f"layouts of {lost} are not among {len(found)} verified plans"
