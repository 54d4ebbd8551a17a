"""The kernel library: tuned kernels for a list of programs and shapes, loadable with no search.

    python -m prism library build [--spec prism/kernels/spec.toml] [--arch sm_80] [--jobs N]
    python -m prism library list

``build`` superoptimizes every entry of the spec (one symbolic search per program, reused across
its shapes), writes ``prism/kernels/<program>/<shape-key>.cu`` and records each entry in
``prism/kernels/manifest.json``. ``prism.library.load(name_or_graph, shapes)`` returns a callable from
the manifest, compiled on first use for the GPU at hand; it needs neither z3 nor egglog.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import functools
import hashlib
import json
import logging
import os
import subprocess
import tempfile
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from prism import codegen, distributed, runtime, workloads
from prism.codegen.plan import LaunchPlan
from prism.distributed import Job
from prism.errors import IRError, LibraryError, PrismError, SerializationError
from prism.graph import Graph
from prism.graph_json import graph_from_json
from prism.ir import KernelGraph, validate
from prism.names import NameKind, name_problem, show
from prism.options import count_arg, target_arg
from prism.pipeline import search_and_verify, superoptimize
from prism.progress import StageBar
from prism.rows import program_callable, searched_graph

log = logging.getLogger(__name__)

FORMAT = "prism.kernel_library"
VERSION = 1
ROOT = Path(__file__).resolve().parent / "kernels"  # package data (pyproject.toml): installed with prism
SPEC_KEYS = {"config", "program", "sizes", "file", "function", "dtype", "name"}


@dataclass(frozen=True)
class Entry:
    """One program at one shape."""

    program: str
    sizes: tuple[tuple[str, int], ...]
    dtype: str
    config: str | None = None
    file: str | None = None
    function: str | None = None

    @property
    def shape_key(self) -> str:
        return "_".join(f"{k}{v}" for k, v in self.sizes) + ("" if self.dtype == "float16" else f"_{self.dtype}")

    @property
    def name(self) -> str:
        return f"{self.program}/{self.shape_key}"

    def build_graph(self, base: Path | None = None) -> Graph:
        if self.file is None:
            return workloads.PROGRAMS[self.program](**dict(self.sizes), dtype=self.dtype)
        import importlib.util

        path = inside(ROOT if base is None else base, self.file, f"entry {self.name}: file")
        spec = importlib.util.spec_from_file_location(f"prism_lib_{self.program}", path)
        if spec is None or spec.loader is None:
            raise LibraryError(f"entry {self.name}: cannot import {path}")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        fn = getattr(mod, self.function or "", None)
        if not callable(fn):
            raise LibraryError(f"entry {self.name}: {path} has no function {self.function!r}")
        g = fn(**dict(self.sizes))
        if not isinstance(g, Graph):
            raise LibraryError(f"entry {self.name}: {self.function}() returned {type(g).__name__}, not a prism.Graph")
        return g

    def scales(self) -> dict[str, float]:
        if self.config is not None:
            return dict(workloads.config(self.config).scales)
        return workloads.default_scales(self.program, dict(self.sizes))


@dataclass(frozen=True)
class Spec:
    arch: str
    entries: tuple[Entry, ...]
    base: Path = field(default=ROOT)


def _bad(i: int, msg: str) -> LibraryError:
    return LibraryError(f"spec entry {i + 1}: {msg}")


def inside(root: Path, rel: object, what: str) -> Path:
    """``root / rel``, only when it stays inside ``root`` (after resolving ``..`` and symbolic links):
    the one gate for every path the library reads or writes from a spec or a manifest."""
    shown = show(rel.as_posix() if isinstance(rel, Path) else rel)
    if not isinstance(rel, str | Path) or not str(rel) or "\0" in str(rel) or Path(rel).is_absolute():
        raise LibraryError(f"{what} {shown} must be a relative path inside {root}")
    path = root / rel
    if not path.resolve().is_relative_to(root.resolve()):
        raise LibraryError(f"{what} {shown} leads outside {root}")
    return path


def _check_names(i: int, program: object, sizes: Mapping[str, object]) -> None:
    if (bad := name_problem(program, NameKind.PROGRAM)) is not None:
        raise _bad(i, f"name {show(program)}: {bad}")
    for key in sizes:
        if (bad := name_problem(key, NameKind.SIZE)) is not None:
            raise _bad(i, f"sizes key {show(key)}: {bad}")


def parse_spec(text: str, base: Path = ROOT) -> Spec:
    """Parse a spec (TOML). Every defect is a LibraryError naming the entry and the bad value."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise LibraryError(f"spec is not valid TOML: {err}") from err
    arch = doc.get("arch", "sm_80")
    if not isinstance(arch, str) or not arch.startswith("sm_") or not arch[3:].isdigit():
        raise LibraryError(f"spec: arch {arch!r} must look like 'sm_80'")
    default_dtype = doc.get("dtype", "float16")
    raw = doc.get("entry", [])
    if not isinstance(raw, list) or not raw:
        raise LibraryError("spec: no [[entry]] tables")
    entries: list[Entry] = []
    seen: set[str] = set()
    for i, item in enumerate(raw):
        e = dict(item)
        unknown = set(e) - SPEC_KEYS
        if unknown:
            raise _bad(i, f"unknown keys {sorted(unknown)}; allowed {sorted(SPEC_KEYS)}")
        dtype = e.get("dtype", default_dtype)
        if dtype not in ("float16", "bfloat16", "float32"):
            raise _bad(i, f"dtype {dtype!r} is not one of float16, bfloat16, float32")
        if "config" in e:
            if set(e) - {"config", "dtype"}:
                raise _bad(i, "an entry with 'config' takes no other keys but 'dtype'")
            if e["config"] not in workloads.CONFIGS:
                raise _bad(i, f"unknown config {e['config']!r}; known: {', '.join(workloads.CONFIGS)}")
            cfg = workloads.CONFIGS[e["config"]]
            entry = Entry(cfg.program, tuple(cfg.sizes.items()), dtype, config=cfg.id)
        else:
            sizes = e.get("sizes")
            if not isinstance(sizes, dict) or not sizes or not all(
                isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in sizes.values()
            ):
                raise _bad(i, f"sizes {sizes!r} must be a table of positive integers")
            if "file" in e:
                if "function" not in e:
                    raise _bad(i, "an entry with 'file' needs 'function'")
                name = e.get("name") or Path(str(e["file"])).stem
                _check_names(i, name, sizes)
                inside(base, e["file"], f"spec entry {i + 1}: file")
                if not isinstance(e["function"], str) or not e["function"].isidentifier():
                    raise _bad(i, f"function {show(e['function'])} must be an identifier")
                entry = Entry(str(name), tuple(sizes.items()), dtype, file=str(e["file"]), function=str(e["function"]))
            else:
                prog = e.get("program")
                if prog not in workloads.PROGRAMS:
                    raise _bad(i, f"unknown program {prog!r}; known: {', '.join(workloads.PROGRAMS)}")
                import inspect

                params = set(inspect.signature(workloads.PROGRAMS[prog]).parameters) - {"dtype"}
                if set(sizes) != params:
                    raise _bad(i, f"sizes {sorted(sizes)} of {prog} must be exactly {sorted(params)}")
                entry = Entry(prog, tuple(sizes.items()), dtype)
        _check_names(i, entry.program, dict(entry.sizes))
        if entry.name in seen:
            raise _bad(i, f"{entry.name} is listed twice")
        seen.add(entry.name)
        entries.append(entry)
    return Spec(arch, tuple(entries), base)


def load_spec(path: Path) -> Spec:
    if not path.exists():
        raise LibraryError(f"spec file {path} does not exist")
    return parse_spec(path.read_text(), path.parent)


# ---------------------------------------------------------------------------------- manifest


@dataclass(frozen=True)
class Built:
    """What building one entry produced (from prism.superoptimize or a test double)."""

    kernel_graph: KernelGraph  # concrete μGraph (sizes chosen)
    source: str  # CUDA source of all its custom kernels
    launch: dict[str, Any]  # JSON launch plan
    time_us: float | None
    gpu: str
    baseline_us: float | None = None


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def template_sha256(template: object) -> str:
    """The hash of a manifest record's template (its JSON, canonical): what ``load`` regenerates
    the code from, so it is checked like the shipped source."""
    return sha256(json.dumps(template, sort_keys=True, separators=(",", ":")))


def library_source(plan: LaunchPlan) -> str:
    """All custom kernels of a plan in one translation unit: each in its own namespace so their
    preludes do not collide (the ``extern "C"`` entry points keep their names)."""
    if len(plan.kernels) == 1:
        return str(plan.kernels[0].source)
    return "\n".join(f"namespace prism_{i} {{\n{k.source}\n}}  // namespace prism_{i}\n"
                     for i, k in enumerate(plan.kernels))


def read_manifest(root: Path = ROOT) -> dict[str, Any]:
    path = root / "manifest.json"
    if not path.exists():
        return {"format": FORMAT, "version": VERSION, "entries": {}}
    try:
        doc = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise LibraryError(f"{path} is not valid JSON ({e}); rebuild the library") from e
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("version") != VERSION:
        got = (doc.get("format"), doc.get("version")) if isinstance(doc, dict) else (type(doc).__name__, None)
        raise LibraryError(f"{path}: format {got[0]!r} v{got[1]!r}, expected {FORMAT} v{VERSION}")
    if not isinstance(doc.get("entries", {}), dict):
        raise LibraryError(f"{path}: 'entries' must be an object; rebuild the library")
    return dict(doc)


def write_manifest(doc: Mapping[str, Any], root: Path = ROOT) -> None:
    root.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=root, prefix=".manifest.", suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, root / "manifest.json")


def is_current(entry: Entry, arch: str, manifest: Mapping[str, Any], root: Path = ROOT) -> bool:
    """True when the manifest has this entry for this arch and its source file is unchanged."""
    rec = manifest.get("entries", {}).get(entry.name)
    if not isinstance(rec, dict) or rec.get("arch") != arch or rec.get("dtype") != entry.dtype:
        return False
    try:
        src = inside(root, rec.get("source"), f"manifest entry {entry.name}: source")
    except LibraryError as e:
        log.warning("%s; rebuilding it", e)
        return False
    return src.is_file() and sha256(src.read_text()) == rec.get("source_sha256")


def nvcc_check(source: str, arch: str = "sm_80") -> str | None:
    """Compile the device code with ``nvcc -arch=<arch> -cubin`` (no host pass: the runtime compiles with
    NVRTC); return the error log, or None when it compiles."""
    with tempfile.TemporaryDirectory() as d:
        cu = Path(d) / "k.cu"
        cu.write_text(source)
        try:
            r = subprocess.run(["nvcc", f"-arch={arch}", "-cubin", str(cu), "-o", str(Path(d) / "k.cubin")],
                               capture_output=True, text=True, timeout=300)
        except FileNotFoundError:
            return "nvcc not found"
        return None if r.returncode == 0 else r.stderr[-4000:]


def build(
    spec: Spec,
    optimize: Callable[[Graph, Entry, str], Built],
    *,
    root: Path = ROOT,
    force: bool = False,
    check_nvcc: bool = True,
    progress: bool = True,
    client: Any = None,
) -> dict[str, str]:
    """Build every entry not already current; return {entry name: "built" | "skipped" | "failed: ..."}.

    With ``client`` (a ``dask.distributed.Client``) the entries are searched and tuned on its workers
    (:mod:`prism.distributed`); the sources and the manifest are still written here, as results arrive.
    """
    manifest = read_manifest(root)
    manifest.setdefault("entries", {})
    status: dict[str, str] = {}
    todo: list[Entry] = []
    for entry in spec.entries:
        if not force and is_current(entry, spec.arch, manifest, root):
            status[entry.name] = "skipped"
        else:
            todo.append(entry)

    def stored(entry: Entry, built: Built) -> None:
        _store(entry, built, spec, root, manifest)
        status[entry.name] = "built"

    if client is not None:
        by_name = {e.name: e for e in todo}
        failed = distributed.run_jobs(client, [_job(e, spec, optimize, check_nvcc) for e in todo],
                                      lambda job, built: stored(by_name[job.name], built), progress=progress)
        status.update({name: f"failed: {why}" for name, why in failed.items()})
        return {e.name: status[e.name] for e in spec.entries}
    with StageBar("library", total=len(todo), unit="entry", enabled=progress) as bar:
        for entry in todo:
            try:
                source_path(entry, root)
                built = build_entry(entry, spec.base, spec.arch, optimize, check_nvcc)
            except Exception as e:  # one entry's failure never stops the others
                log.error("library entry %s failed: %s", entry.name, e)
                status[entry.name] = f"failed: {e}"
            else:
                stored(entry, built)
            bar.advance()
    return {e.name: status[e.name] for e in spec.entries}


def source_path(entry: Entry, root: Path) -> tuple[Path, Path]:
    """(relative, absolute) path of an entry's CUDA source in the library."""
    rel = Path(entry.program) / f"{entry.shape_key}.cu"
    return rel, inside(root, rel, f"entry {entry.name}: source")


def build_entry(entry: Entry, base: Path, arch: str, optimize: Callable[[Graph, Entry, str], Built],
                check_nvcc: bool) -> Built:
    """Superoptimize one entry and check its source with nvcc: a pure function of (entry, arch), so it
    can run anywhere (a Dask worker holding a GPU) and be retried."""
    built = optimize(entry.build_graph(base), entry, arch)
    if check_nvcc:
        err = nvcc_check(built.source, arch)
        if err is not None:
            raise LibraryError(f"nvcc -arch={arch} rejects the generated source:\n{err}")
    return built


def search_entry(entry: Entry, base: Path) -> dict[str, Any]:
    """Search and verify an entry's program (cached by its size-free structure, so every shape of it
    shares this one search); a summary of the outcome."""
    graph = searched_graph(entry.build_graph(base))  # the one ``optimize`` searches, [b, s, d] rows merged
    return search_and_verify(graph, program=entry.program, progress=False).to_json()


def _job(entry: Entry, spec: Spec, optimize: Callable[[Graph, Entry, str], Built], check_nvcc: bool) -> Job[Built]:
    """One entry as a distributed job: its search shared by structure, its tuning keyed by (entry, arch)."""
    structure = entry.build_graph(spec.base).structure_key()
    content = sha256(repr((entry, spec.arch, check_nvcc)))[:16]
    return Job(entry.name, structure, f"{entry.name}-{spec.arch}-{content}",
               functools.partial(search_entry, entry, spec.base),
               functools.partial(build_entry, entry, spec.base, spec.arch, optimize, check_nvcc))


def _store(entry: Entry, built: Built, spec: Spec, root: Path, manifest: dict[str, Any]) -> None:
    """Write an entry's source and its manifest record (the manifest atomically, after each entry)."""
    rel, path = source_path(entry, root)
    graph = entry.build_graph(spec.base)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(built.source)
    manifest["entries"][entry.name] = {
        "program": entry.program,
        "config": entry.config,
        "sizes": dict(entry.sizes),
        "dtype": entry.dtype,
        "arch": spec.arch,
        "structure_hash": graph.structure_hash(),
        "graph": graph.to_json(),  # the program as built: load calls the kernel at its shapes
        "inputs": [[t.name, list(t.shape)] for t in searched_graph(graph).inputs],  # the template's
        "template": built.kernel_graph.to_json(),
        "template_sha256": template_sha256(built.kernel_graph.to_json()),
        "launch": built.launch,
        "source": rel.as_posix(),
        "source_sha256": sha256(built.source),
        "tuned_on": built.gpu,
        "code_target": spec.arch,
        "time_us": built.time_us,
        "best_baseline_us": built.baseline_us,
        "date": _dt.date.today().isoformat(),
    }
    write_manifest(manifest, root)


def library_optimizer(samples: int = 48, seed: int = 0, backend: Any = None) -> Callable[[Graph, Entry, str], Built]:
    """An ``optimize(graph, entry, arch)`` for :func:`build`: superoptimize, then the sources
    (``backend``: where to tune, as in ``superoptimize``; the interpreter backend in tests)."""

    def optimize(graph: Graph, entry: Entry, arch: str) -> Built:
        kernel = superoptimize(graph, target=arch, samples=samples, seed=seed, program=entry.program,
                               progress=False, scales=entry.scales(), backend=backend, inductor=False)
        plan = codegen.generate(kernel.kernel_graph, arch=arch)
        source = library_source(plan)
        return Built(kernel.kernel_graph, source, plan.to_json(), kernel.summary.get("best_us"), _gpu_name())

    return optimize


def _gpu_name() -> str:
    try:
        import cupy  # optional: only on a GPU machine

        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
        name = props["name"]
        return name.decode() if isinstance(name, bytes) else str(name)
    except Exception:
        return "unknown GPU"


# ---------------------------------------------------------------------------------- loader


def _find(manifest: Mapping[str, Any], name_or_graph: str | Graph, shapes: Mapping[str, int] | None) -> dict[str, Any]:
    entries: dict[str, Any] = {n: r for n, r in manifest.get("entries", {}).items()
                               if isinstance(r, dict) and isinstance(r.get("sizes"), dict)}
    if isinstance(name_or_graph, Graph):
        h = name_or_graph.structure_hash()
        for rec in entries.values():
            if rec.get("structure_hash") == h:
                return dict(rec)
        key = name_or_graph.structure_key()
        same = [n for n, r in entries.items() if _program_key(r) == key]
        raise LibraryError(f"no library kernel for this graph {name_or_graph}; available shapes of the same program: "
                           f"{same or 'none'}")
    name = name_or_graph
    if not isinstance(name, str):
        raise LibraryError(f"library.load({show(name)}): give a program name or a prism.Graph")
    want = _sizes(name, shapes)
    candidates = {n: r for n, r in entries.items() if r.get("program") == name}
    for rec in candidates.values():
        if rec.get("sizes") == want:
            return dict(rec)
    if not candidates:
        have = sorted({str(r.get("program")) for r in entries.values()})
        raise LibraryError(f"the library has no kernels for program {name!r}; it has: {have}")

    def distance(r: Mapping[str, Any]) -> float:
        import math

        got = {k: v for k, v in r["sizes"].items() if isinstance(v, int)}
        return sum(abs(math.log2(max(1, got.get(k, 1)) / max(1, v))) for k, v in want.items())

    nearest = sorted(candidates.values(), key=distance)[:3]
    raise LibraryError(f"no library kernel for {name} with sizes {want}; nearest available: {[r['sizes'] for r in nearest]}")


def _sizes(name: str, shapes: object) -> dict[str, int]:
    """The sizes asked of ``library.load``: a mapping of size names to positive integers."""
    example = "e.g. {'n': 8, 'd': 1024}"
    if not isinstance(shapes, Mapping):
        raise LibraryError(f"library.load({name!r}): sizes {show(shapes)} must be a mapping of names to integers, {example}")
    for k, v in shapes.items():
        if not isinstance(k, str) or isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 1:
            raise LibraryError(f"library.load({name!r}): size {show(k)} = {show(v)} must be a positive integer, {example}")
    return {k: int(v) for k, v in shapes.items()}


def _program_graph(rec: Mapping[str, Any]) -> Graph | None:
    """The program a record was built from: its stored ``graph`` (required to hash as the record's
    ``structure_hash``), else, for a record written before the graph was stored, the program of
    ``prism.workloads`` it names; None for such a record of a program from a file (called at its
    searched shapes, ``rows.searched_graph``)."""
    what = f"library entry {show(rec.get('program'))} {rec.get('sizes')}"
    if "graph" in rec:
        try:
            graph = graph_from_json(rec["graph"])
        except PrismError as e:
            raise LibraryError(f"{what}: its stored program is malformed ({e}); rebuild the library") from e
        if graph.structure_hash() != rec.get("structure_hash"):
            raise LibraryError(f"{what}: its stored program does not match its structure_hash; rebuild the library")
        return graph
    if rec.get("program") not in workloads.PROGRAMS:
        return None
    try:
        return Entry(rec["program"], tuple(rec["sizes"].items()), rec["dtype"]).build_graph()
    except (PrismError, KeyError, TypeError, ValueError) as e:
        raise LibraryError(f"{what}: its program does not build ({e}); rebuild the library") from e


def _program_key(rec: Mapping[str, Any]) -> str | None:
    try:
        graph = _program_graph(rec)
    except PrismError:
        return None
    return None if graph is None else graph.structure_key()


@dataclass(frozen=True)
class LibraryKernel:
    """What :func:`load` returns: the compiled kernel (call it like the program: torch tensors or CuPy
    arrays, same signature) and the manifest's facts about it."""

    kernel: Any  # runtime.OptimizedGraph, viewed at the program's shapes (rows.program_callable)
    program: str
    sizes: Mapping[str, int]
    time_us: float | None  # the tuned time, on the GPU named by tuned_on
    tuned_on: str | None

    def __call__(self, *args: Any, **named: Any) -> Any:
        return self.kernel(*args, **named)

    @property
    def summary(self) -> dict[str, Any]:
        """The same facts as a dict, shaped like ``superoptimize(...).summary``."""
        return {"library": True, "time_us": self.time_us, "tuned_on": self.tuned_on}


def load(name_or_graph: str | Graph, shapes: Mapping[str, int] | None = None, *, root: Path = ROOT) -> LibraryKernel:
    """A callable for a library kernel, compiled on first use for the GPU at hand.

    ``load("rmsnorm_linear", {"n": 8, "d": 1024})`` or ``load(graph)``. Needs no z3/egglog.
    """
    rec = _find(read_manifest(root), name_or_graph, shapes)
    kg, shipped = _checked(rec, root)
    plan = codegen.generate(kg, arch=rec["arch"])  # deterministic: the shipped source, regenerated
    if sha256(library_source(plan)) != sha256(shipped.read_text()):
        log.warning("%s: this Prism generates different code than the shipped %s; using the new code "
                    "(rebuild the library to re-tune)", rec["program"], shipped)
    time_us, tuned_on = rec.get("time_us"), rec.get("tuned_on")
    kernel = runtime.compile_plan(plan)
    graph = name_or_graph if isinstance(name_or_graph, Graph) else _program_graph(rec)
    return LibraryKernel(kernel if graph is None else program_callable(kernel, graph), str(rec["program"]),
                         dict(rec["sizes"]),
                         float(time_us) if isinstance(time_us, int | float) else None,
                         tuned_on if isinstance(tuned_on, str) else None)


def _checked(rec: Mapping[str, Any], root: Path) -> tuple[KernelGraph, Path]:
    """A manifest record's template and shipped source, after integrity checks: the fields are there,
    the source file is inside the library and matches ``source_sha256``, the template is a valid
    kernel graph (names included) for the record's inputs and matches ``template_sha256``."""
    what = f"library entry {show(rec.get('program'))} {rec.get('sizes')}"
    missing = [k for k in ("template", "template_sha256", "arch", "source", "source_sha256", "inputs") if k not in rec]
    if missing:
        raise LibraryError(f"{what}: the manifest record lacks {missing}; rebuild the library")
    shipped = inside(root, rec["source"], f"{what}: source")
    if not shipped.is_file() or sha256(shipped.read_text()) != rec["source_sha256"]:
        raise LibraryError(f"{what}: {shipped} is missing or does not match the manifest's source_sha256 "
                           "(edited or corrupt); rebuild the library")
    try:
        kg = KernelGraph.from_json(rec["template"])
        validate(kg)
    except (SerializationError, IRError) as e:
        raise LibraryError(f"{what}: bad template in the manifest ({e}); rebuild the library") from e
    if [[t.name, list(t.shape)] for t in kg.inputs] != rec["inputs"]:
        raise LibraryError(f"{what}: the template's inputs do not match the record's {rec['inputs']}")
    if template_sha256(rec["template"]) != rec["template_sha256"]:  # a valid plan, but not the one built
        raise LibraryError(f"{what}: the manifest's template does not match its template_sha256 (edited or "
                           "corrupt); rebuild the library")
    return kg, shipped


# ---------------------------------------------------------------------------------- CLI


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="library_command", metavar="ACTION", required=True)
    b = sub.add_parser("build", help="superoptimize every spec entry and write prism/kernels/")
    b.add_argument("--spec", type=Path, default=ROOT / "spec.toml")
    b.add_argument("--arch", type=target_arg(), default=None, help="code target, e.g. sm_80 (default: the spec's)")
    b.add_argument("--jobs", type=count_arg("jobs"), default=None, help="parallel compile jobs while tuning")
    b.add_argument("--samples", type=count_arg("samples"), default=48, help="tuning samples per entry")
    b.add_argument("--force", action="store_true", help="rebuild entries that are already current")
    b.add_argument("--only", default=None, help="build only entries whose name contains this text")
    b.add_argument("--root", type=Path, default=ROOT, help="the library folder to write (default: prism/kernels/)")
    distributed.add_arguments(b)
    rg = sub.add_parser("regenerate", help="re-render every entry's source with this code generator (no tuning)")
    rg.add_argument("--root", type=Path, default=ROOT, help="the library folder (default: prism/kernels/)")
    ls = sub.add_parser("list", help="list the manifest's entries")
    ls.add_argument("--root", type=Path, default=ROOT, help="the library folder (default: prism/kernels/)")


def regenerate(root: Path = ROOT) -> dict[str, str]:
    """Re-render every entry's source from its tuned plan with this Prism's code generator, without
    tuning again: the plan and its sizes stay, the source, its hash and the launch plan follow the
    generator. ``time_us`` stays the time measured when the entry was tuned (``date``), with the code
    of then; ``regenerated`` says when the source was re-rendered. Returns a status per entry."""
    manifest = read_manifest(root)
    status: dict[str, str] = {}
    today = _dt.date.today().isoformat()
    for name, rec in sorted(manifest.get("entries", {}).items()):
        if not isinstance(rec, dict):
            raise LibraryError(f"library entry {show(name)}: not a record ({type(rec).__name__}); rebuild the library")
        kg, shipped = _checked(rec, root)
        plan = codegen.generate(kg, arch=rec["arch"])
        source = library_source(plan)
        if sha256(source) == rec["source_sha256"]:
            status[name] = "current"
            continue
        shipped.write_text(source)
        rec.update(source_sha256=sha256(source), launch=plan.to_json(), regenerated=today)
        status[name] = "regenerated"
    if "regenerated" in status.values():
        write_manifest(manifest, root)
    return status


def _plain(value: object) -> str:
    """A manifest value for a listing: as is when it is a printable string, else its short repr."""
    return value if isinstance(value, str) and value.isprintable() and len(value) <= 100 else show(value)


def run(args: argparse.Namespace) -> int:
    if args.library_command == "list":
        manifest = read_manifest(args.root)
        bad = 0
        for name, rec in sorted(manifest.get("entries", {}).items()):
            if not isinstance(rec, dict) or not isinstance(rec.get("arch"), str):  # tampered or hand-edited
                print(f"{_plain(name):45s} bad record ({type(rec).__name__ if not isinstance(rec, dict) else 'no arch'})")
                bad += 1
                continue
            t = rec.get("time_us")
            shown = f"{t:.2f} us" if isinstance(t, int | float) and not isinstance(t, bool) and t else "-"
            print(f"{_plain(name):45s} {_plain(rec.get('arch'))}  {shown:>10s}  tuned on {_plain(rec.get('tuned_on'))}")
        if bad:
            raise LibraryError(f"{args.root / 'manifest.json'}: {bad} bad record(s) (listed above); rebuild the library")
        return 0
    if args.library_command == "regenerate":
        for name, s in regenerate(args.root).items():
            print(f"{_plain(name):45s} {s}")
        return 0
    spec = load_spec(args.spec)
    if args.arch:
        spec = Spec(args.arch, spec.entries, spec.base)
    if args.only:
        spec = Spec(spec.arch, tuple(e for e in spec.entries if args.only in e.name), spec.base)
    if args.jobs:
        os.environ["PRISM_JOBS"] = str(args.jobs)
    with distributed.connect(distributed.options(args)) as client:  # None: this process, no Dask
        status = build(spec, library_optimizer(samples=args.samples), root=args.root, force=args.force, client=client)
    for name, s in status.items():
        print(f"{name:45s} {s}")
    return 0 if not any(s.startswith("failed") for s in status.values()) else 1
