"""Results of a bench run: the record per configuration, the terminal table, the JSON file, the plot
and the table in bench/README.md. No torch here: it runs wherever the JSON is."""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.measure import BASELINES, SYSTEMS

log = logging.getLogger(__name__)

RESULTS_DIR = Path(__file__).parent / "results"
README = Path(__file__).parent / "README.md"
TABLE_START = "<!-- bench-table:start -->"
TABLE_END = "<!-- bench-table:end -->"
LABELS = {"eager": "eager", "compile": "compile", "max_autotune": "max-autotune", "sdpa": "SDPA", "prism": "Prism"}


HEADLINE_SOURCE = "superoptimize"  # a headline figure comes from prism.superoptimize, never from hand plans


def plan_source(rec: dict[str, Any]) -> str | None:
    """Where the record's Prism figure came from (a provider name; "unknown" when not recorded)."""
    if rec.get("prism_us") is None:
        return None
    return str(rec.get("prism_source") or "unknown")


def is_headline(rec: dict[str, Any]) -> bool:
    """A Prism figure that may be a headline: speedup, geometric mean, targets."""
    return plan_source(rec) == HEADLINE_SOURCE


def finish_record(rec: dict[str, Any]) -> dict[str, Any]:
    """Add the derived fields: best baseline, Prism's speedup over it, fraction of the floor reached
    (the last two only for a figure from ``prism.superoptimize``)."""
    base = {s: rec.get(f"{s}_us") for s in BASELINES}
    timed = {s: v for s, v in base.items() if v is not None}
    best = min(timed, key=lambda s: timed[s]) if timed else None
    rec["best_baseline"] = best
    rec["best_baseline_us"] = timed[best] if best else None
    prism = rec.get("prism_us") if is_headline(rec) else None
    rec["speedup"] = rec["best_baseline_us"] / prism if prism and rec["best_baseline_us"] else None
    rec["floor_fraction"] = rec["floor_us"] / prism if prism and rec.get("floor_us") else None
    return rec


def geomean(values: Sequence[float]) -> float | None:
    vals = [v for v in values if v and v > 0]
    return math.exp(sum(map(math.log, vals)) / len(vals)) if vals else None


def mma_note(ceil: dict[str, Any]) -> str:
    """The sm_80 mma.sync ceiling of a run's ceilings, when it was measured."""
    rate = ceil.get("mma_sync_tflop_per_s")
    return f", {rate:.0f} TFLOP/s fp16 mma.sync (the sm_80 path of generated kernels)" if rate else ""


# the suite's targets (issue 14): geometric mean over the best baseline, fraction of the floor of the
# bandwidth-bound GEMVs, and the small configurations' time
GEOMEAN_TARGET = 2.5
FLOOR_TARGET = 0.8
SMALL_TARGET_US = 3.0
BANDWIDTH_BOUND = ("rmsnorm_linear_d4096", "swiglu_d4096")


def summarize(configs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    speedups = [r["speedup"] for r in configs if r.get("speedup") and is_headline(r)]
    with_prism = [r for r in configs if r.get("prism_us") is not None]
    headline = [r for r in with_prism if is_headline(r)]
    out: dict[str, Any] = {
        "configs": len(configs),
        "prism_timed": len(with_prism),
        "geomean_speedup": geomean(speedups),
        "not_from_superoptimize": {r["config"]: plan_source(r) for r in with_prism if not is_headline(r)},
    }
    if headline and len(headline) == len(configs):
        out["beats_best_baseline_everywhere"] = all((r.get("speedup") or 0) > 1 for r in configs)
        out["geomean_target_met"] = (out["geomean_speedup"] or 0) >= GEOMEAN_TARGET
        bw = [r for r in configs if r["config"] in BANDWIDTH_BOUND]
        out["floor_target_met"] = bool(bw) and all((r.get("floor_fraction") or 0) >= FLOOR_TARGET for r in bw)
        small = [r for r in configs if r["config"] not in BANDWIDTH_BOUND]
        out["small_target_met"] = bool(small) and all(r["prism_us"] <= SMALL_TARGET_US for r in small)
    return out


def fmt(v: Any, spec: str = ".1f") -> str:
    """A table cell: "—" for None, floats by ``spec``."""
    if v is None:
        return "—"
    if isinstance(v, float):
        return format(v, spec)
    return str(v)


def markdown_table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Cells as an aligned Markdown table (also readable on a terminal)."""
    cells = [list(head), *map(list, rows)]
    widths = [max(3, *(len(row[i]) for row in cells)) for i in range(len(head))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |" for row in cells]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def table(result: dict[str, Any]) -> str:
    """A Markdown table (also readable on a terminal)."""
    head = ["id", "floor", "eager", "compile", "max-autotune", "SDPA", "best baseline", "Prism", "Prism plan",
            "speedup", "Prism rel. err"]
    rows = [[
        r["config"], fmt(r.get("floor_us"), ".2f"), fmt(r.get("eager_us")), fmt(r.get("compile_us")),
        fmt(r.get("max_autotune_us")), fmt(r.get("sdpa_us")), fmt(r.get("best_baseline_us")),
        fmt(r.get("prism_us")), fmt(plan_source(r)),
        fmt(r.get("speedup"), ".2f") + ("×" if r.get("speedup") else ""), fmt(r.get("rel_err"), ".1e"),
    ] for r in result["configs"]]
    ceil = result.get("ceilings") or {}
    foot = [f"µs per call; {result.get('gpu')}, {result.get('date')}, torch {result.get('torch')}, "
            f"CUDA {result.get('cuda')}; systems: {', '.join(result.get('systems', []))}."]
    if ceil:
        foot.append(f"Ceilings measured in this run: {ceil['copy_tb_per_s']:.2f} TB/s device copy (read + write), "
                    f"{ceil['matmul_tflop_per_s']:.0f} TFLOP/s fp16 matmul{mma_note(ceil)}.")
    summ = result.get("summary") or {}
    others = {r["config"]: plan_source(r) for r in result["configs"] if r.get("prism_us") is not None
              and not is_headline(r)}
    if others:
        foot.append("Prism figures not from prism.superoptimize (no speedup, not in the geometric mean): "
                    + ", ".join(f"{c} ({src})" for c, src in others.items()) + ".")
    if summ.get("geomean_speedup"):
        foot.append(f"Geometric-mean speedup of Prism over the best baseline: {summ['geomean_speedup']:.2f}×.")
    if result.get("note"):
        foot.append(str(result["note"]))
    return markdown_table(head, rows) + "\n\n" + "\n".join(foot) + "\n"


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "unknown"


def result_path(result: dict[str, Any], out_dir: Path, tag: str | None = None) -> Path:
    date = str(result.get("date", "undated"))[:10]
    name = f"{date}-{slug(str(result.get('gpu', 'gpu')))}" + (f"-{slug(tag)}" if tag else "")
    return out_dir / f"{name}.json"


def write_json(result: dict[str, Any], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=1, sort_keys=False) + "\n")
    tmp.replace(path)
    return path


def write_plot(result: dict[str, Any], path: Path) -> Path | None:
    """Bar chart of every system's speedup over the best baseline per configuration (log scale);
    a tick marks the roofline floor's speedup. None, with a warning, when matplotlib is missing."""
    title = f"{result.get('gpu', '')} · {str(result.get('date', ''))[:10]} · µs per call, higher is better"
    return speedup_plot(result["configs"], SYSTEMS[1:] + SYSTEMS[:1], title, path, label=lambda r: str(r["config"]))


def speedups(recs: Sequence[dict[str, Any]], systems: Sequence[str]) -> dict[str, list[tuple[int, float]]]:
    """What :func:`speedup_plot` draws: per system (and "floor", the roofline floor) the (entry index,
    best baseline µs / its µs) of each entry that has both figures. Systems without any figure are left out."""
    out = {s: [(i, r["best_baseline_us"] / r[f"{s}_us"]) for i, r in enumerate(recs) if r.get(f"{s}_us")]
           for s in (*systems, "floor")}
    return {s: pts for s, pts in out.items() if pts}


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log.warning("matplotlib is not installed: no plot written (pip install 'prism[bench]')")
        return None
    return plt


def _mark_groups(ax: Any, groups: Sequence[str]) -> None:
    """A dashed line between runs of entries of different groups and the group's name above each run."""
    starts = [i for i, g in enumerate(groups) if i == 0 or g != groups[i - 1]]
    for a, b in zip(starts, [*starts[1:], len(groups)], strict=True):
        if a:
            ax.axvline(a - 0.5, color="grey", ls="--", lw=0.8)
        ax.text((a + b - 1) / 2, 0.98, groups[a], transform=ax.get_xaxis_transform(), ha="center", va="top",
                fontsize=9, fontweight="bold")


def speedup_plot(records: Sequence[dict[str, Any]], systems: Sequence[str], title: str, path: Path, *,
                 label: Callable[[dict[str, Any]], str], group: Callable[[dict[str, Any]], str] | None = None,
                 entry_width: float = 1.1) -> Path | None:
    """Bars of each system's speedup over the best baseline per record with one (log scale), a black tick
    at the roofline floor's; ``label`` names an entry, ``group`` (optional) marks runs of entries.
    None, with a warning, when matplotlib is missing or no record has a baseline (a Prism-only run)."""
    recs = [r for r in records if r.get("best_baseline_us")]
    if not recs:
        log.warning("no entry has a baseline time: no speedup plot written (%s)", path)
        return None
    plt = _pyplot()
    if plt is None:
        return None
    data = speedups(recs, systems)
    drawn = [s for s in systems if s in data]
    fig, ax = plt.subplots(figsize=(max(6.0, entry_width * len(recs) + 2), 4.5))
    width = 0.8 / max(1, len(drawn))
    for j, s in enumerate(drawn):
        ax.bar([i - 0.4 + width * (j + 0.5) for i, _ in data[s]], [v for _, v in data[s]], width, label=LABELS[s])
    if "floor" in data:
        ax.scatter([i for i, _ in data["floor"]], [v for _, v in data["floor"]], marker="_", s=400, color="black",
                   label="roofline floor", zorder=3)
    if group is not None:
        _mark_groups(ax, [group(r) for r in recs])
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.set_yscale("log")
    ax.set_xticks(range(len(recs)))
    ax.set_xticklabels([label(r) for r in recs], rotation=35, ha="right", fontsize=8)
    ax.set_ylabel("speedup over the best baseline")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def update_readme(result: dict[str, Any], json_path: Path, readme: Path | None = None) -> bool:
    """Replace the table between the markers in bench/README.md. False if the markers are missing."""
    readme = readme or README
    if not readme.exists():
        return False
    text = readme.read_text()
    if TABLE_START not in text or TABLE_END not in text:
        return False
    head, rest = text.split(TABLE_START, 1)
    _, tail = rest.split(TABLE_END, 1)
    try:
        shown = json_path.resolve().relative_to(readme.parent.resolve())
    except ValueError:
        shown = json_path
    body = f"\nFrom `{shown}` (command: `{result.get('command', '')}`):\n\n{table(result)}"
    readme.write_text(head + TABLE_START + body + TABLE_END + tail)
    return True
