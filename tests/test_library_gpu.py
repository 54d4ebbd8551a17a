"""Every committed library kernel, loaded with no search and checked against the float64 reference."""

from __future__ import annotations

import pytest

from prism import library
from prism.reference import relative_error

pytestmark = pytest.mark.gpu

ENTRIES = sorted(library.read_manifest().get("entries", {}).items())


@pytest.mark.skipif(not ENTRIES, reason="no kernels in prism/kernels/manifest.json")
@pytest.mark.parametrize("name,rec", ENTRIES, ids=[n for n, _ in ENTRIES])
def test_library_kernel_matches_reference(name: str, rec: dict) -> None:  # type: ignore[type-arg]
    import torch

    entry = library.Entry(rec["program"], tuple(rec["sizes"].items()), rec["dtype"], config=rec.get("config"))
    graph = entry.build_graph()
    kernel = library.load(rec["program"], rec["sizes"])
    from prism.workloads import Config

    cfg = Config(name, rec["program"], dict(rec["sizes"]), entry.scales(), rec["dtype"])
    inputs = cfg.random_inputs(seed=99, graph=graph)
    ref = graph.evaluate(inputs)["O"]
    out = kernel(*[torch.from_numpy(inputs[t.name]).to("cuda", getattr(torch, t.dtype)) for t in graph.inputs])
    torch.cuda.synchronize()
    assert relative_error(out.double().cpu().numpy(), ref) < 2e-2
