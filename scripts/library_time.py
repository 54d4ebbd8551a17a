"""Time committed library kernels (run on the device machine): each entry loaded as ``library.load`` does
(re-rendered by this tree's generator), checked against float64 and graph-timed as the bench does.

    PYTHONPATH=. python3 scripts/library_time.py LABEL NAME[,NAME...]
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import torch

from prism import library
from prism.reference import relative_error
from prism.tune.timing import graph_time_us
from prism.workloads import Config


def _copies(args: list[Any]) -> Callable[[int], list[Any]]:
    """The arguments of call ``i``: the originals first, fresh copies after (rotating inputs)."""
    return lambda i: [a.clone() for a in args] if i else args


def main(label: str, names: list[str]) -> int:
    manifest = library.read_manifest()["entries"]
    for name in names:
        rec = manifest[name]
        entry = library.Entry(rec["program"], tuple(rec["sizes"].items()), rec["dtype"], config=rec.get("config"))
        graph = entry.build_graph()
        kernel = library.load(rec["program"], rec["sizes"])
        cfg = Config(name, rec["program"], dict(rec["sizes"]), entry.scales(), rec["dtype"])
        inputs = cfg.random_inputs(seed=99, graph=graph)
        args = [torch.from_numpy(inputs[t.name]).to("cuda", getattr(torch, t.dtype)) for t in graph.inputs]
        out = kernel(*args)
        torch.cuda.synchronize()
        err = relative_error(out.double().cpu().numpy(), graph.evaluate(inputs)["O"])
        us = graph_time_us(kernel, _copies(args), replays=10)
        print(label, name, f"{us:.3f} us err {err:.2e}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2].split(",")))
