"""The program zoo on the GPU: Prism (``prism.superoptimize``) beside PyTorch eager, torch.compile and
max-autotune, with the docs/benchmarks.md protocol (CUDA-graph replay, inputs rotated past the L2; the
systems of one entry timed together, their replays interleaved: ``prism.tune.timing.interleaved_time_us``).

    python -m bench.zoo_bench [--which decode,prefill,decode_odd,prefill_odd] [--only a,b] [--systems prism,eager,compile]
                              [--samples 16] [--out bench/results/zoo-DATE.json]
    python -m bench.zoo_bench --from-json bench/results/zoo-DATE.json   # re-render only: no GPU, no torch

Inputs of every system follow the product's documented default distribution
(``prism.tune.tuner.default_scales``). Each system's output is checked against the float64
reference before it is timed; the JSON is rewritten after every entry. At the end the table is printed
and written beside the JSON (.md), with a plot of every system's speedup over the best baseline (.png,
when matplotlib is installed).
"""

from __future__ import annotations

import argparse
import datetime
import json
import logging
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import report
from bench.programs import roofline
from bench.zoo import ZOO, expand_names, zoo_graph
from prism.graph import Graph
from prism.reference import relative_error
from prism.torch_program import torch_program
from prism.tune.inductor import Winner

log = logging.getLogger("bench.zoo")
TOLERANCE = 2e-2
SYSTEMS = ("prism", "eager", "compile", "max_autotune")


def _entries(which: list[str], only: list[str]) -> list[tuple[str, str]]:
    names = expand_names(only) if only else list(ZOO)
    return [(n, w) for n in names for w in which if getattr(ZOO[n], w) is not None]


class Runner:
    def __init__(self, samples: int, seed: int) -> None:
        import torch

        self.torch = torch
        self.samples = samples
        self.seed = seed

    def system_fn(self, graph: Graph, name: str, system: str, rec: dict[str, Any]) -> Any:
        if system == "prism":
            import prism

            t0 = time.perf_counter()
            fast = prism.superoptimize(graph, samples=self.samples, seed=self.seed, program=name, progress=False)
            s = fast.summary
            rec.update({"prism_setup_s": time.perf_counter() - t0, "plan_source": s.get("plan_source"),
                        "tuner_us": s.get("best_us"), "tune_s": s.get("tune_s"), "parts": s["search"].get("parts"),
                        "verified": s["search"].get("verified_by_source"),
                        "kernels": [getattr(k, "name", "?") for k in fast.kernel_graph.kernels],
                        "tail": None if (t := fast.kernel_graph.tail) is None else [t.padded, t.valid],
                        "plan_sizes": s.get("sizes"), "parts_tune_s": s.get("parts_tune_s"),
                        # the generated plan's own time when superoptimize compared it with torch.compile's
                        "generated_us": (s.get("inductor") or {}).get("generated_us"),
                        "inductor_verdict": s.get("inductor"),  # every time, or why PyTorch's were left out
                        "prism_timed": s.get("timed")})  # the whole program's timed samples (scripts/zoo_prior.py)
            return fast
        base = torch_program(graph)
        if system == "eager":
            return base
        mode = {"compile": None, "max_autotune": "max-autotune-no-cudagraphs"}[system]
        return self.torch.compile(base, mode=mode, dynamic=False)

    def copy(self, graph: Graph, scales: dict[str, float], i: int) -> list[Any]:
        torch = self.torch
        gen = torch.Generator(device="cuda").manual_seed(1000 + i)
        return [(torch.randn(t.shape, device="cuda", generator=gen) * scales.get(t.name, 1.0)).to(getattr(torch, t.dtype))
                for t in graph.inputs]

    def check(self, graph: Graph, name: str, system: str, rec: dict[str, Any]) -> Any:
        """The system's callable when its outputs pass the float64 check (None: ``rec["errors"]`` says why)."""
        from prism.tune.tuner import default_scales, random_inputs

        torch = self.torch
        try:
            fn = self.system_fn(graph, name, system, rec)
            values = random_inputs(graph, default_scales(graph), self.seed + 7)
            refs = graph.evaluate(values)
            args = [torch.from_numpy(values[t.name]).to(device="cuda", dtype=getattr(torch, t.dtype)) for t in graph.inputs]
            out = fn(*args)
            torch.cuda.synchronize()
            outs = out if isinstance(out, tuple | list) else (out,)  # a tuple in graph.outputs order
            err = max(relative_error(o.double().cpu().numpy(), refs[t.name])
                      for o, t in zip(outs, graph.outputs, strict=True))
        except Exception as e:  # one failing system is a result
            log.error("%s %s: %s", name, system, e)
            rec["errors"][system] = f"{type(e).__name__}: {str(e)[:300]}"
            return None
        rec[f"{system}_rel_err"] = err
        if not err < TOLERANCE:
            rec["errors"][system] = f"relative error {err:.3g}"
            return None
        return fn

    def measure(self, graph: Graph, name: str, systems: list[str], rec: dict[str, Any]) -> None:
        """Every system checked, then those that passed timed together; times and errors into ``rec``."""
        # every zoo program is the same Python function over another graph: start dynamo afresh for each
        # program (not between its systems, whose compiled functions are timed after all are checked), or
        # it stops recompiling after its limit and silently runs eager
        self.torch._dynamo.reset()
        fns = {s: fn for s in systems if (fn := self.check(graph, name, s, rec)) is not None}
        if fns:
            self.time(graph, fns, rec)

    def time(self, graph: Graph, fns: dict[str, Any], rec: dict[str, Any]) -> None:
        """The checked systems timed together, their replays interleaved (``interleaved_time_us``)."""
        from prism.tune.timing import Timed, interleaved_time_us
        from prism.tune.tuner import default_scales

        scales = default_scales(graph)
        timings = interleaved_time_us({s: Timed(fn, lambda i: self.copy(graph, scales, i)) for s, fn in fns.items()})
        for s, us in timings.us.items():
            rec[f"{s}_us"] = us
        for s, why in timings.errors.items():
            log.error("timing %s: %s", s, why)
            rec["errors"][s] = f"timing: {why[:300]}"


def _finish(rec: dict[str, Any]) -> None:
    base = [float(rec[f"{s}_us"]) for s in SYSTEMS[1:] if rec.get(f"{s}_us") is not None]
    rec["best_baseline_us"] = min(base) if base else None
    p = rec.get("prism_us")
    rec["speedup"] = rec["best_baseline_us"] / p if p and rec["best_baseline_us"] else None


WHICH_ORDER = {"decode": 0, "prefill": 1, "decode_odd": 2, "prefill_odd": 3}
NOTE_CHARS = 120


def ordered(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows grouped by size (decode, then prefill), in run order within a group."""
    return sorted(rows, key=lambda r: WHICH_ORDER.get(r["which"], len(WHICH_ORDER)))


def _note(r: dict[str, Any]) -> str:
    parts = [f"{s}: {msg}" for s, msg in (r.get("errors") or {}).items()]
    parts += [f"plan {r['plan_source']}"] if r.get("plan_source") else []
    if r.get("plan_source") in (Winner.INDUCTOR.value, Winner.EAGER.value) and r.get("generated_us"):
        parts[-1] += f" (generated {r['generated_us']:.2f} µs)"
    text = "; ".join(parts).replace("|", "/").replace("\n", " ")
    return text if len(text) <= NOTE_CHARS else text[: NOTE_CHARS - 1] + "…"


def _cell(v: float | None, spec: str, unit: str = "") -> str:
    return report.fmt(v, spec) + (unit if v is not None else "")


def _row(r: dict[str, Any]) -> list[str]:
    prism, floor = r.get("prism_us"), r.get("floor_us")
    us = [_cell(r.get(k), ".2f") for k in ("prism_us", "eager_us", "compile_us", "max_autotune_us", "best_baseline_us")]
    return [r["program"], r["which"], *us, _cell(r.get("speedup"), ".2f", "×"), _cell(floor, "#.3g"),
            _cell(100 * floor / prism if floor and prism else None, ".1f", "%"), _cell(r.get("prism_rel_err"), ".1e"),
            _note(r) or "—"]


def _summary(rows: list[dict[str, Any]]) -> str:
    groups = dict.fromkeys(r["which"] for r in rows)
    sp = {w: [r["speedup"] for r in rows if r["which"] == w and r.get("speedup")] for w in groups}
    every = [s for v in sp.values() for s in v]
    if not every:
        return f"Prism timed on none of the {len(rows)} entries."
    per = ", ".join(f"{w} {report.geomean(v):.2f}× on {len(v)}" for w, v in sp.items() if v)
    return (f"Prism timed on {len(every)} of {len(rows)}; geometric-mean speedup over the best baseline "
            f"{report.geomean(every):.2f}× ({per}); not slower on {sum(s >= 1 for s in every)}.")


def table(result: dict[str, Any]) -> str:
    """The Markdown table of a zoo result (rows finished by :func:`_finish`), with its footnotes."""
    head = ["entry", "which", "Prism µs", "eager", "compile", "max-autotune", "best baseline", "speedup",
            "floor µs", "% of floor", "rel err", "note / error"]
    rows = ordered(result["rows"])
    return report.markdown_table(head, [_row(r) for r in rows]) + "\n\n" + "\n".join(_footer(result, rows)) + "\n"


def _footer(result: dict[str, Any], rows: list[dict[str, Any]]) -> list[str]:
    samples = f"; {result['samples']} tuning samples" if result.get("samples") else ""
    foot = [f"µs per call; {result.get('gpu')}, {result.get('date')}, torch {result.get('torch')}; systems: "
            f"{', '.join(result.get('systems', []))}{samples}; rel err: Prism's.", _summary(rows)]
    ceil = result.get("ceilings") or {}
    if ceil:
        foot.append(f"Ceilings (for the floor): {ceil['copy_tb_per_s']:.2f} TB/s device copy, "
                    f"{ceil['matmul_tflop_per_s']:.0f} TFLOP/s fp16 matmul{report.mma_note(ceil)}.")
    if result.get("command"):
        foot.append(f"Command: `{result['command']}`.")
    return foot


def write_plot(result: dict[str, Any], path: Path) -> Path | None:
    """Every system's speedup over the best baseline per entry, grouped by decode / prefill (None,
    with a warning, when matplotlib is missing)."""
    title = (f"program zoo · {result.get('gpu', '')} · {str(result.get('date', ''))[:10]} · "
             "µs per call, higher is better")
    return report.speedup_plot(ordered(result["rows"]), (*SYSTEMS[1:], SYSTEMS[0]), title, path,
                               label=lambda r: str(r["program"]), group=lambda r: str(r["which"]), entry_width=0.45)


def render(result: dict[str, Any], path: Path) -> None:
    """Print the table and write it (.md) and the plot (.png) beside ``path``, the JSON."""
    text = table(result)
    print(text)
    path.with_suffix(".md").write_text(text)
    print(f"results: {path}\ntable: {path.with_suffix('.md')}")
    png = write_plot(result, path.with_suffix(".png"))
    if png is not None:
        print(f"plot: {png}")


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m bench.zoo_bench")
    ap.add_argument("--which", default="decode,prefill")
    ap.add_argument("--only", default="", help="programs, comma-separated; @new_ops, @held_out... for a set")
    ap.add_argument("--systems", default="prism,eager,compile,max_autotune")
    ap.add_argument("--samples", type=int, default=16)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--from-json", type=Path, default=None, metavar="FILE",
                    help="measure nothing: re-render the table and plot of a saved zoo JSON beside it")
    return ap


def from_json(path: Path) -> dict[str, Any]:
    """A saved zoo result with its derived fields (best baseline, speedup) recomputed."""
    result: dict[str, Any] = json.loads(path.read_text())
    for rec in result["rows"]:
        _finish(rec)
    return result


def _measure_entry(runner: Runner, name: str, which: str, systems: list[str], ceilings: tuple[float, float]
                   ) -> dict[str, Any]:
    graph = zoo_graph(name, which)
    rec: dict[str, Any] = {"program": name, "which": which, "family": ZOO[name].family,
                           "sizes": ZOO[name].sizes(which), "floor_us": roofline(graph).floor_us(*ceilings),
                           "errors": {}}
    t0 = time.perf_counter()
    runner.measure(graph, name, systems, rec)
    rec["seconds"] = time.perf_counter() - t0
    _finish(rec)
    log.info("%s %s: %s", name, which, {k: rec.get(f"{k}_us") for k in systems})
    return rec


def measure_all(args: argparse.Namespace) -> tuple[dict[str, Any], Path]:
    """Every selected entry on this GPU; the JSON (returned with its path) is rewritten after each."""
    from bench.measure import mma_ceiling
    from prism.tune.timing import copy_bandwidth, matmul_rate

    runner = Runner(args.samples, args.seed)
    systems = [s for s in args.systems.split(",") if s]
    copy_bw, mm, mma = copy_bandwidth(), matmul_rate(), mma_ceiling()
    result: dict[str, Any] = {"date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                              "gpu": runner.torch.cuda.get_device_name(), "torch": runner.torch.__version__,
                              "ceilings": {"copy_tb_per_s": copy_bw / 1e12, "matmul_tflop_per_s": mm / 1e12,
                                           "mma_sync_tflop_per_s": None if mma is None else mma / 1e12},
                              "samples": args.samples, "systems": systems, "rows": [],
                              "command": "python -m bench.zoo_bench " + shlex.join(sys.argv[1:])}
    out = args.out or Path("bench/results") / f"zoo-{result['date'][:10]}.json"
    for name, which in _entries(args.which.split(","), [n for n in args.only.split(",") if n]):
        result["rows"].append(_measure_entry(runner, name, which, systems, (copy_bw, mm)))
        out.write_text(json.dumps(result, indent=1, default=float))
    return result, out


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    if args.from_json is not None:
        render(from_json(args.from_json), args.from_json)
        return
    render(*measure_all(args))


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
