"""How well the tuner's static size prior (``codegen.sizes.size_score``) ranks the samples a capture
run timed: per part of one region, the rank correlation between the prior and the measured time.

Reads a ``gpu_capture.py --log DEBUG`` log (each tuning sample's template, sizes and µs), the region
dump of ``gpu_capture.py --dump`` and the search cache the run used (``PRISM_CACHE_DIR``), so the
template indices are the run's.

    PYTHONPATH=. PRISM_CACHE_DIR=.prism-cache python scripts/prior_correlation.py \\
        bench/results/capture-h200-2026-12-01d-d1.log bench/results/capture-regions-2026-12-01.json \\
        --case layer-prefill-b1-l512 --label g0r3 --rows 1 --line 703
"""

from __future__ import annotations

import argparse
import ast
import json
import re
from pathlib import Path

from prism.capture.build import bind, spec_from_json
from prism.codegen.arch import arch as get_arch
from prism.codegen.resources import resources
from prism.codegen.sizes import size_score
from prism.errors import PrismError
from prism.ir import CustomKernel
from prism.pipeline import search_and_verify

SAMPLE = re.compile(r"sample \d+ \(template (\d+), (\{.*?\})\): ([\d.]+) us")
TUNING = re.compile(r": tuning \d+ templates")
PART = re.compile(r"\.(p\d+): tuning \d+ templates")


def spearman(a: list[float], b: list[float]) -> float:
    def ranks(v: list[float]) -> list[int]:
        order = sorted(range(len(v)), key=lambda i: v[i])
        out = [0] * len(v)
        for r, i in enumerate(order):
            out[i] = r
        return out

    ra, rb, n = ranks(a), ranks(b), len(a)
    return 1 - 6 * sum((x - y) ** 2 for x, y in zip(ra, rb, strict=True)) / (n * (n * n - 1))


def samples(lines: list[str], start: int) -> list[tuple[str, int, dict[str, int], float]]:
    """(part, template, sizes, µs) of the region whose log starts at line ``start``."""
    part, out = None, []
    for line in lines[start:]:
        if "capture.runner" in line:
            break
        if TUNING.search(line):  # a part's tuning, or (no .pN) the region's final choice
            part = m.group(1) if (m := PART.search(line)) else None
        elif (m := SAMPLE.search(line)) and part is not None:
            out.append((part, int(m.group(1)), ast.literal_eval(m.group(2)), float(m.group(3))))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log")
    ap.add_argument("dump")
    ap.add_argument("--case", required=True)
    ap.add_argument("--label", required=True)
    ap.add_argument("--rows", type=int, required=True, help="batch rows of the run (the dump's 3-d inputs are rebound)")
    ap.add_argument("--line", type=int, required=True, help="0-based log line where the region starts")
    ap.add_argument("--arch", default="sm_90")
    args = ap.parse_args()
    dump = json.loads(Path(args.dump).read_text())
    region = next(r for r in dump if r["case"] == args.case and r["label"] == args.label)
    shapes, dtype = region["bound"][0]
    shapes = [(args.rows, 1, s[2]) if len(s) == 3 else tuple(s) for s in shapes]
    outcome = search_and_verify(bind(spec_from_json(region["spec"]), shapes, dtype).graph, progress=False)
    parts = {f"p{po.part.index}": list(po.outcome.templates) for po in outcome.parts}
    sms = get_arch(args.arch).sms
    rows = samples(Path(args.log).read_text().splitlines(), args.line)
    for part in sorted({r[0] for r in rows}):
        pts = []
        for _, t, sizes, us in (r for r in rows if r[0] == part):
            kg = parts[part][t].instantiate(sizes)
            if any(isinstance(k, CustomKernel) for k in kg.kernels):
                try:
                    pts.append((us, size_score(resources(kg, args.arch), sms), t, sizes))
                except PrismError:
                    continue
        if len(pts) > 3:
            rho = spearman([p[0] for p in pts], [-p[1] for p in pts])
            print(f"{part}: {len(pts)} generated samples, rank correlation of -prior with time {rho:.2f}")
            for us, score, t, sizes in sorted(pts)[:5]:
                print(f"   {us:8.2f} us  prior {score:6.2f}  template {t} {sizes}")


if __name__ == "__main__":
    main()
