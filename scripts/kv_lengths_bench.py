"""Decode attention at KV-cache lengths that are not multiples of 16, on the GPU: Prism beside torch.compile.

    PYTHONPATH=. python scripts/kv_lengths_bench.py [--only mha_attention,scaled_attention]
        [--lengths 1000,999,2500] [--systems prism,compile] [--samples 16] [--json out.json]

Each zoo attention program at its decode sizes with ``kv_len`` replaced: a decoding step runs at
every length, and mma tiles take multiples of 16, so most lengths need a padded tail
(``prism.codegen.tails``). Prints one JSON row per program and length (times in µs, as
``bench.zoo_bench`` measures them: checked against float64 first, CUDA-graph replay), and the
plan each returned, its kernels and whether it ran padded.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from bench.zoo import ZOO
from bench.zoo_bench import Runner, _finish

ATTENTION = ("mha_attention", "scaled_attention", "qknorm_attention", "attention_hd64")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default=",".join(ATTENTION))
    ap.add_argument("--lengths", default="1000,999,2500")
    ap.add_argument("--systems", default="prism,compile")
    ap.add_argument("--samples", type=int, default=16)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    runner = Runner(args.samples, args.seed)
    rows: list[dict[str, Any]] = []
    for name in args.only.split(","):
        for kv in (int(v) for v in args.lengths.split(",")):
            sizes = {**ZOO[name].decode, "kv_len": kv}
            rec: dict[str, Any] = {"program": name, "which": f"kv{kv}", "sizes": sizes, "errors": {}}
            runner.measure(ZOO[name].build(**sizes), name, args.systems.split(","), rec)
            _finish(rec)
            rec.pop("prism_timed", None)
            rows.append(rec)
            print(json.dumps(rec, default=str), flush=True)
            if args.json:
                with open(args.json, "w") as f:
                    json.dump(rows, f, indent=1, default=str)


if __name__ == "__main__":
    main()
