"""Bounded equivalence checking with egglog.

The program and each candidate become terms (``terms``); the candidates of one program are checked
together in one e-graph (``Goal o`` is output o of the program, ``Cand k o`` output o of candidate
k, a rule records ``proven k o`` when the two classes merge). egglog runs one iteration at a time;
between iterations the checker reads the proven set, the e-graph size and the clock. Phase 1 runs
every theory but associativity until the batch is proven, saturates, or a bound is hit; phase 2
adds associativity for a few bounded iterations. Anything not proven is rejected.

A batch that hits a bound before saturating re-checks its unproven candidates one by one (one
AC-heavy candidate must not cost the others their proof). Proofs in a shared e-graph are sound
(every rule is), and the verdicts are deterministic for a given candidate list, batch size and
iteration/node bounds; only the wall-clock bound depends on the machine.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from prism.errors import VerificationError
from prism.graph import Graph
from prism.ir import KernelGraph
from prism.verify import model
from prism.verify.axioms import AXIOMS, prelude
from prism.verify.terms import (
    DimTable,
    Encoding,
    IllFormed,
    Term,
    check_shapes,
    encode_candidate,
    encode_graph,
    to_sexpr,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Budget:
    """Bounds of one check (a batch gets ``batch_seconds``); hitting any of them means 'not proven'."""

    max_iterations: int = 30
    max_nodes: int = 200_000
    max_seconds: float = 10.0
    assoc_iterations: int = 3
    batch_size: int = 256
    batch_seconds: float = 60.0


@dataclass(frozen=True)
class Verdict:
    proven: bool
    reason: str
    iterations: int = 0
    nodes: int = 0
    seconds: float = 0.0


@dataclass
class _Prepared:
    graph_terms: list[Term]
    dims: DimTable
    ranks: dict[str, int]
    out_types: list[model.Type]
    ops: set[str] = field(default_factory=set)


_PRELUDE: str | None = None


def _prelude() -> str:
    global _PRELUDE
    if _PRELUDE is None:
        _PRELUDE = prelude(AXIOMS)
    return _PRELUDE


def _prepare(graph: Graph) -> _Prepared:
    enc, dims = encode_graph(graph)
    ranks = {t.name: len(t.shape) for t in graph.inputs}
    names = [t.name for t in graph.outputs]
    terms = [enc.outputs[n] for n in names]
    types = [check_shapes(t, ranks, dims, {}) for t in terms]
    return _Prepared(terms, dims, ranks, types, set(enc.ops))


def _encode(prep: _Prepared, graph: Graph, cand: KernelGraph) -> tuple[list[Term], Encoding] | str:
    """The candidate's output terms (program output order), or why it is rejected before egglog."""
    try:
        enc = encode_candidate(cand, graph, prep.dims)
        outs = [enc.outputs[t.name] for t in graph.outputs]
        for name, t, want in zip((t.name for t in graph.outputs), outs, prep.out_types, strict=True):
            got = check_shapes(t, prep.ranks, prep.dims, enc.par_sizes)
            if got != want:
                return f"ill-formed: output {name!r} has type {got}, the program's is {want}"
    except IllFormed as e:
        return f"ill-formed: {e}"
    return outs, enc


def ill_formed(graph: Graph, candidates: Sequence[KernelGraph]) -> list[str | None]:
    """Per candidate, why it is not a well-formed plan of ``graph`` for every size (symbolic shape
    inference, no egglog), or None: a cheap check of plans that come from a cache."""
    prep = _prepare(graph)
    out: list[str | None] = []
    for cand in candidates:
        enc = _encode(prep, graph, cand)
        out.append(enc if isinstance(enc, str) else None)
    return out


def _sizes(out: object) -> int:
    return sum(n for _, n in out[0].sizes)  # type: ignore[index,attr-defined]


def _proven_pairs(eg: object) -> set[tuple[int, int]]:
    out = eg.parse_and_run_program("(print-function proven 1000000)")[0]  # type: ignore[attr-defined]
    td = out.termdag
    pairs = set()
    for tid, _ in out.terms:
        text = td.to_string(tid)  # "(proven k o)"
        _, k, o = text.strip("()").split()
        pairs.add((int(k), int(o)))
    return pairs


def _run_batch(prep: _Prepared, cands: list[list[Term]], budget: Budget, seconds: float) -> list[Verdict]:
    """Check every candidate (list of output terms) against the program in one e-graph."""
    from egglog import bindings

    t0 = time.perf_counter()
    n_out = len(prep.graph_terms)
    lines = [_prelude()]
    memo: dict[int, str] = {}
    for o, g in enumerate(prep.graph_terms):
        lines.append(f"(union (Goal {o}) {to_sexpr(g, memo)})")
    for k, outs in enumerate(cands):
        for o, t in enumerate(outs):
            lines.append(f"(union (Cand {k} {o}) {to_sexpr(t, memo)})")
    ops = set(prep.ops)
    for outs in cands:
        for t in outs:
            ops |= _ops(t)
    lines += [f'(linear "{op}")' for op in sorted(ops) if model.is_linear(op)]
    # an input dim of extent 1 broadcasts (a unit fact, like a reduced dim); every other one varies
    lines += [f'({"unit" if f"{n}.{d}" in prep.dims.unit else "varies"} (In "{n}") {d})'
              for n, r in prep.ranks.items() for d in range(r)]
    eg = bindings.EGraph()
    eg.parse_and_run_program("\n".join(lines))
    done: dict[int, tuple[int, int]] = {}  # candidate -> (iteration, nodes) when proven
    reason = "saturated without a proof"
    it = 0
    nodes = 0
    phase, phase_its = "phase1", 0
    while len(done) < len(cands):
        if it >= budget.max_iterations:
            reason = f"iteration bound {budget.max_iterations}"
            break
        if nodes > budget.max_nodes:
            reason = f"node bound {budget.max_nodes} ({nodes} nodes)"
            break
        if time.perf_counter() - t0 > seconds:
            reason = f"time bound {seconds:.1f} s"
            break
        report = getattr(eg.parse_and_run_program(f"(run {phase} 1)")[-1], "report")  # noqa: B009
        it += 1
        phase_its += 1
        nodes = _sizes(eg.parse_and_run_program("(print-size)"))
        pairs = _proven_pairs(eg)
        for k in range(len(cands)):
            if k not in done and all((k, o) in pairs for o in range(n_out)):
                done[k] = (it, nodes)
        saturated = not report.updated and report.can_stop
        if phase == "phase2" and phase_its >= budget.assoc_iterations:
            reason = "saturated without a proof; associativity bound reached"
            break
        if saturated:
            if phase == "phase2" or budget.assoc_iterations <= 0:
                reason = "saturated without a proof"
                break
            phase, phase_its = "phase2", 0
    secs = time.perf_counter() - t0
    return [
        Verdict(True, "proven", done[k][0], done[k][1], secs) if k in done else Verdict(False, reason, it, nodes, secs)
        for k in range(len(cands))
    ]


def _ops(t: Term) -> set[str]:
    out: set[str] = set()
    stack = [t]
    seen: set[int] = set()
    while stack:
        x = stack.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        if x[0] == "Un":
            out.add(x[1])
        stack.extend(a for a in x[1:] if isinstance(a, tuple))
    return out


def _bounded(reason: str) -> bool:
    return not reason.startswith("saturated")


def check_equivalent(graph: Graph, candidate: KernelGraph, *, budget: Budget | None = None) -> Verdict:
    """Prove ``candidate`` (concrete mappings, symbolic sizes) computes ``graph`` for every size."""
    return verify_all(graph, [candidate], budget=budget)[0]


def verify_all(graph: Graph, candidates: Sequence[KernelGraph], *, budget: Budget | None = None,
               progress: bool = False) -> list[Verdict]:
    """Verdicts for many candidates of one program, batched in shared e-graphs (deterministic)."""
    budget = budget or Budget()
    t0 = time.perf_counter()
    try:
        prep = _prepare(graph)
    except IllFormed as e:
        raise VerificationError(f"the program itself does not type-check: {e}") from e
    verdicts: list[Verdict | None] = [None] * len(candidates)
    todo: list[int] = []
    terms: dict[int, list[Term]] = {}
    by_text: dict[str, int] = {}
    alias: dict[int, int] = {}
    for i, cand in enumerate(candidates):
        got = _encode(prep, graph, cand)
        if isinstance(got, str):
            verdicts[i] = Verdict(False, got, 0, 0, 0.0)
            continue
        outs, _ = got
        key = "\n".join(to_sexpr(t) for t in outs)
        if key in by_text:
            alias[i] = by_text[key]
            continue
        by_text[key] = i
        terms[i] = outs
        todo.append(i)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(candidates), desc="verify", unit="cand")
        bar.update(len(candidates) - len(todo))
    for start in range(0, len(todo), budget.batch_size):
        chunk = todo[start:start + budget.batch_size]
        secs = budget.max_seconds if len(chunk) == 1 else budget.batch_seconds
        res = _run_batch(prep, [terms[i] for i in chunk], budget, secs)
        for i, v in zip(chunk, res, strict=True):
            if not v.proven and _bounded(v.reason) and len(chunk) > 1:
                log.info("candidate %d: batch stopped (%s); checking it alone", i, v.reason)
                v = _run_batch(prep, [terms[i]], budget, budget.max_seconds)[0]
            verdicts[i] = v
        if bar is not None:
            bar.update(len(chunk) + sum(1 for a, b in alias.items() if b in chunk))
    for i, j in alias.items():
        verdicts[i] = verdicts[j]
    if bar is not None:
        bar.close()
    log.info("verified %d candidates in %.2f s", len(candidates), time.perf_counter() - t0)
    out = [v for v in verdicts if v is not None]
    assert len(out) == len(candidates)
    return out
