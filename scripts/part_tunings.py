"""Device probe (issue 14): every tuning block of zoo entries (each part's, then the whole program's), from
the tuner's DEBUG log: header, best line and the fastest samples. Searches come from the cache
(``PRISM_CACHE_DIR``): run the same command on a machine with the prover and no GPU first, which stops
each entry after its search (``DeviceError``, printed) with the cache filled as the GPU run reads it.

    PYTHONPATH=. PRISM_CACHE_DIR=... python3 scripts/part_tunings.py bert_mlp,relu_mlp_bias [--which decode] [--samples 64]
"""

from __future__ import annotations

import argparse
import re
import sys
import time

sys.path.insert(0, __file__.rsplit("/", 2)[0])
sys.path.insert(0, __file__.rsplit("/", 1)[0])

from tune_samples import SAMPLE, tuner_debug_log

import prism
from bench.zoo import zoo_graph
from prism.errors import PrismError


def _blocks(log_text: str, top: int) -> list[str]:
    lines = []
    for block in re.split(r"(?=tuning: \d+ templates)", log_text)[1:]:
        rows = sorted(SAMPLE.findall(block), key=lambda r: float(r[3]))
        lines.append("   " + block.splitlines()[0])
        lines += ["     " + line for line in block.splitlines() if "tuning: best" in line]
        lines += [f"      {us} µs  t{t} {sizes}" for _, t, sizes, us in rows[:top]]
    return lines


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("names", help="zoo programs, comma-separated")
    ap.add_argument("--which", default="decode")
    ap.add_argument("--samples", type=int, default=64)
    ap.add_argument("--top", type=int, default=8)
    args = ap.parse_args(argv)
    buf = tuner_debug_log()
    for name in args.names.split(","):
        buf.seek(0)
        buf.truncate()
        t = time.perf_counter()
        try:
            prism.pipeline.superoptimize(zoo_graph(name, args.which), samples=args.samples, seed=0, program=name,
                                         progress=False, inductor=False)
        except PrismError as e:  # no GPU: stopped after the search, which is cached
            print(name, type(e).__name__, str(e)[:200], flush=True)
            continue
        print(f"== {name} {args.which}  {time.perf_counter() - t:.1f}s", *_blocks(buf.getvalue(), args.top),
              sep="\n", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
