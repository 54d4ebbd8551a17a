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

import enum
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

from prism.errors import VerificationError
from prism.graph import Graph
from prism.ir import KernelGraph
from prism.progress import StageBar
from prism.verify import model
from prism.verify.axioms import AXIOMS, prelude
from prism.verify.nodes import Interner, UnOp, to_sexpr, unary_ops
from prism.verify.terms import (
    DimTable,
    Encoding,
    IllFormed,
    Term,
    check_shapes,
    encode_candidate,
    encode_graph,
    par_symbols,
)

if TYPE_CHECKING:
    from egglog import bindings

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


class Outcome(enum.Enum):
    """How a check ended."""

    PROVEN = "proven"
    ILL_FORMED = "ill-formed"  # rejected before egglog: not a plan of the program for every size
    SATURATED = "saturated"  # the rules ran out without a proof: the answer for these axioms
    BOUNDED = "bounded"  # stopped at an iteration, node or time bound: a candidate of a batch is re-checked alone
    LATE = "late"  # not checked: ``verify_all``'s deadline had passed


@dataclass(frozen=True)
class Verdict:
    proven: bool
    reason: str  # for people: why not, with the bound that was hit
    iterations: int = 0
    nodes: int = 0
    seconds: float = 0.0
    outcome: Outcome = Outcome.SATURATED


@dataclass
class _Prepared:
    graph_terms: list[Term]
    dims: DimTable
    ranks: dict[str, int]
    out_types: list[model.Type]
    ops: set[UnOp] = field(default_factory=set)


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


@dataclass
class _Shared:
    """What the candidates of one check share: their terms interned, so each distinct subterm's shape is
    inferred (per set of parallel-dim symbols) and its egglog text rendered once."""

    intern: Interner = field(default_factory=Interner)
    types: dict[frozenset[tuple[str, str]], dict[int, model.Type]] = field(default_factory=dict)


def _encode(prep: _Prepared, graph: Graph, cand: KernelGraph,
            shared: _Shared | None = None) -> tuple[list[Term], Encoding] | str:
    """The candidate's output terms (program output order; interned by ``shared``), or why it is
    rejected before egglog."""
    try:
        enc = encode_candidate(cand, graph, prep.dims)
        outs = [enc.outputs[t.name] for t in graph.outputs]
        memo = None
        if shared is not None:
            outs = shared.intern(outs)
            memo = shared.types.setdefault(frozenset(par_symbols(enc.par_sizes).items()), {})
        for name, t, want in zip((t.name for t in graph.outputs), outs, prep.out_types, strict=True):
            got = check_shapes(t, prep.ranks, prep.dims, enc.par_sizes, memo)
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


def _nodes(eg: bindings.EGraph) -> int:
    out = cast("bindings.PrintAllFunctionsSize", eg.parse_and_run_program("(print-size)")[0])
    return sum(n for _, n in out.sizes)


def _proven_pairs(eg: bindings.EGraph) -> set[tuple[int, int]]:
    out = cast("bindings.PrintFunctionOutput", eg.parse_and_run_program("(print-function proven 1000000)")[0])
    td = out.termdag
    pairs = set()
    for tid, _ in out.terms:
        text = td.to_string(tid)  # "(proven k o)"
        _, k, o = text.strip("()").split()
        pairs.add((int(k), int(o)))
    return pairs


def _program(prep: _Prepared, cands: list[list[Term]], memo: dict[int, str]) -> str:
    """egglog text: the prelude, the goal and candidate outputs, the linear ops and the input facts
    (``memo``: texts of terms already rendered, by ``id``; every term in it must still be alive)."""
    lines = [_prelude()]
    for o, g in enumerate(prep.graph_terms):
        lines.append(f"(union (Goal {o}) {to_sexpr(g, memo)})")
    for k, outs in enumerate(cands):
        for o, t in enumerate(outs):
            lines.append(f"(union (Cand {k} {o}) {to_sexpr(t, memo)})")
    ops = prep.ops | unary_ops(t for outs in cands for t in outs)
    lines += [f'(linear "{text}")' for text in sorted(op.text for op in ops if op.linear)]
    # an input dim of extent 1 broadcasts (a unit fact, like a reduced dim); every other one varies
    lines += [f'({"unit" if f"{n}.{d}" in prep.dims.unit else "varies"} (In "{n}") {d})'
              for n, r in prep.ranks.items() for d in range(r)]
    return "\n".join(lines)


@dataclass
class _Run:
    """The state of one batch's rule iterations."""

    done: dict[int, tuple[int, int]] = field(default_factory=dict)  # candidate -> (iteration, nodes) when proven
    iterations: int = 0
    nodes: int = 0
    outcome: Outcome = Outcome.SATURATED
    reason: str = "saturated without a proof"

    def bound(self, budget: Budget, t0: float, seconds: float) -> str | None:
        if self.iterations >= budget.max_iterations:
            return f"iteration bound {budget.max_iterations}"
        if self.nodes > budget.max_nodes:
            return f"node bound {budget.max_nodes} ({self.nodes} nodes)"
        if time.perf_counter() - t0 > seconds:
            return f"time bound {seconds:.1f} s"
        return None


def _saturate(eg: bindings.EGraph, n_cands: int, n_out: int, budget: Budget, t0: float, seconds: float) -> _Run:
    """Run phase 1 until every candidate is proven, it saturates or a bound is hit; then phase 2
    (with associativity) for at most ``budget.assoc_iterations`` iterations."""
    run = _Run()
    phase, phase_its = "phase1", 0
    while len(run.done) < n_cands:
        if (why := run.bound(budget, t0, seconds)) is not None:
            run.outcome, run.reason = Outcome.BOUNDED, why
            break
        report = cast("bindings.RunScheduleOutput", eg.parse_and_run_program(f"(run {phase} 1)")[-1]).report
        run.iterations += 1
        phase_its += 1
        run.nodes = _nodes(eg)
        pairs = _proven_pairs(eg)
        for k in range(n_cands):
            if k not in run.done and all((k, o) in pairs for o in range(n_out)):
                run.done[k] = (run.iterations, run.nodes)
        if phase == "phase2" and phase_its >= budget.assoc_iterations:
            run.reason = "saturated without a proof; associativity bound reached"
            break
        if not report.updated and report.can_stop:
            if phase == "phase2" or budget.assoc_iterations <= 0:
                break
            phase, phase_its = "phase2", 0
    return run


def _run_batch(prep: _Prepared, cands: list[list[Term]], budget: Budget, seconds: float,
               memo: dict[int, str]) -> list[Verdict]:
    """Check every candidate (list of output terms) against the program in one e-graph."""
    from egglog import bindings  # the optional prover: imported only when a check runs

    t0 = time.perf_counter()
    eg = bindings.EGraph()
    eg.parse_and_run_program(_program(prep, cands, memo))
    run = _saturate(eg, len(cands), len(prep.graph_terms), budget, t0, seconds)
    secs = time.perf_counter() - t0
    return [
        Verdict(True, "proven", *run.done[k], secs, Outcome.PROVEN) if k in run.done
        else Verdict(False, run.reason, run.iterations, run.nodes, secs, run.outcome)
        for k in range(len(cands))
    ]


def check_equivalent(graph: Graph, candidate: KernelGraph, *, budget: Budget | None = None) -> Verdict:
    """Prove ``candidate`` (concrete mappings, symbolic sizes) computes ``graph`` for every size."""
    return verify_all(graph, [candidate], budget=budget)[0]


@dataclass
class _Distinct:
    """Candidates sorted for the proof: the ill-formed given their verdicts, the others keyed by the text
    of their terms, each distinct text proven once (``todo``), the rest its aliases."""

    verdicts: list[Verdict | None]
    todo: list[int] = field(default_factory=list)
    terms: dict[int, list[Term]] = field(default_factory=dict)
    alias: dict[int, int] = field(default_factory=dict)
    memo: dict[int, str] = field(default_factory=dict)  # each term's text, by id, rendered once (key, egglog)
    alive: list[list[Term]] = field(default_factory=list)  # every rendered term, so no id in memo is reused


def _distinct(prep: _Prepared, graph: Graph, candidates: Sequence[KernelGraph]) -> _Distinct:
    d = _Distinct([None] * len(candidates))
    by_text: dict[str, int] = {}
    shared = _Shared()
    for i, cand in enumerate(candidates):
        got = _encode(prep, graph, cand, shared)
        if isinstance(got, str):
            d.verdicts[i] = Verdict(False, got, 0, 0, 0.0, Outcome.ILL_FORMED)
            continue
        outs, _ = got
        d.alive.append(outs)
        key = "\n".join(to_sexpr(t, d.memo) for t in outs)
        if key in by_text:
            d.alias[i] = by_text[key]
            continue
        by_text[key] = i
        d.terms[i] = outs
        d.todo.append(i)
    return d


def verify_all(graph: Graph, candidates: Sequence[KernelGraph], *, budget: Budget | None = None,
               progress: bool = False, deadline: float | None = None) -> list[Verdict]:
    """Verdicts for many candidates of one program, batched in shared e-graphs (deterministic).
    Past ``deadline`` (a ``time.perf_counter()`` value) no batch starts and a running one gets only
    the time left: the candidates not reached are not proven (``Outcome.BOUNDED``)."""
    budget = budget or Budget()
    t0 = time.perf_counter()
    try:
        prep = _prepare(graph)
    except IllFormed as e:
        raise VerificationError(f"the program itself does not type-check: {e}") from e
    d = _distinct(prep, graph, candidates)
    bar = StageBar("verify", total=len(candidates), unit="cand", enabled=progress)
    bar.advance(len(candidates) - len(d.todo))

    def left(secs: float) -> float:
        return secs if deadline is None else min(secs, deadline - time.perf_counter())

    late = Verdict(False, "not reached before the verification deadline", outcome=Outcome.LATE)
    for start in range(0, len(d.todo), budget.batch_size):
        chunk = d.todo[start:start + budget.batch_size]
        secs = left(budget.max_seconds if len(chunk) == 1 else budget.batch_seconds)
        res = _run_batch(prep, [d.terms[i] for i in chunk], budget, secs, d.memo) if secs > 0 else [late] * len(chunk)
        for i, v in zip(chunk, res, strict=True):
            if not v.proven and v.outcome is Outcome.BOUNDED and len(chunk) > 1 and left(1.0) > 0:
                log.info("candidate %d: batch stopped (%s); checking it alone", i, v.reason)
                v = _run_batch(prep, [d.terms[i]], budget, left(budget.max_seconds), d.memo)[0]
            d.verdicts[i] = v
        bar.advance(len(chunk) + sum(1 for b in d.alias.values() if b in chunk))
    for i, j in d.alias.items():
        d.verdicts[i] = d.verdicts[j]
    bar.close()
    log.info("verified %d candidates in %.2f s", len(candidates), time.perf_counter() - t0)
    out = [v for v in d.verdicts if v is not None]
    assert len(out) == len(candidates)
    return out
