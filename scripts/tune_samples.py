"""Device probe (issue 14): the tuning samples of a configuration through ``superoptimize`` as the bench
calls it (64 samples, no Inductor candidate), read from the tuner's DEBUG log: the fastest 12 of the
whole-program tuning and the samples of its one-kernel, one-grid-dim templates.

    PYTHONPATH=. PRISM_CACHE_DIR=... python3 scripts/tune_samples.py rmsnorm_linear_d4096 [CONFIG ...]

A CONFIG ``zoo:WHICH:NAME`` (e.g. ``zoo:decode:decoder_norm_linear``) tunes a zoo entry instead, as
``superoptimize`` tunes it by default (64 samples); its whole-program tuning is the one with most templates.
"""

from __future__ import annotations

import io
import logging
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import prism
from prism import workloads

SAMPLE = re.compile(r"sample (\d+) \(template (\d+), (\{[^}]*\})\): ([\d.]+) us")


def _graph(name: str) -> tuple[prism.Graph, str]:
    if name.startswith("zoo:"):
        from bench.zoo import zoo_graph

        _, which, entry = name.split(":")
        return zoo_graph(entry, which), entry
    cfg = workloads.config(name)
    return cfg.build(), cfg.program


def tuner_debug_log() -> io.StringIO:
    """A buffer the tuner's DEBUG log (every timed sample) is written to from now on."""
    buf = io.StringIO()
    handler = logging.StreamHandler(buf)
    handler.setLevel(logging.DEBUG)
    tuner_log = logging.getLogger("prism.tune.tuner")
    tuner_log.setLevel(logging.DEBUG)
    tuner_log.addHandler(handler)
    return buf


def main(names: list[str]) -> None:
    buf = tuner_debug_log()
    for name in names:
        buf.seek(0)
        buf.truncate()
        graph, program = _graph(name)
        prism.pipeline.superoptimize(graph, samples=64, seed=0, program=program, progress=False, inductor=False)
        blocks = re.split(r"(?=tuning: \d+ templates)", buf.getvalue())[1:]
        block = max(blocks, key=lambda b: int(b.split()[1]))  # the whole program's tuning: most templates
        rows = sorted(SAMPLE.findall(block), key=lambda r: float(r[3]))
        print(name, block.splitlines()[0], f"{len(rows)} timed")
        for n, t, sizes, us in rows[:12]:
            print(f"  {us} µs  template {t} {sizes}  (sample {n})")
        one_d = [(us, t, sizes) for _, t, sizes, us in rows if "k0_y" not in sizes and "k1" not in sizes]
        print("  one-kernel, one-grid-dim templates:", one_d[:12])
        print(" ", *[line for line in block.splitlines() if "tuning: best" in line])


if __name__ == "__main__":
    main(sys.argv[1:])
