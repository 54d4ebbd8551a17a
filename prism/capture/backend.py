"""``prism.compile`` and the ``torch.compile`` backend ``"prism"``.

    fast = prism.compile(model, example_inputs=(x,))      # capture, superoptimize and check now
    y = fast(x); print(fast.summary())                    # what ran in Prism, what in PyTorch, why
    torch.compile(model, backend=prism.capture.backend.prism_backend)   # or backend="prism"

The backend takes Dynamo's ``(GraphModule, example_inputs)`` and returns a GraphModule in which
every region (``prism.capture.partition``) is one call of a ``RegionRunner``; the other nodes run as
Inductor compiles them (``prism.capture.outer``: the regions are opaque custom-op calls there), or as
eager ops (``CaptureOptions.fallback``). Parameters are graph inputs, so a region reads the module's
weights in place.
torch is imported only inside these functions (``import prism`` must not import it).
"""

from __future__ import annotations

import functools
import logging
import operator
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from prism.capture import aten, outer
from prism.capture.build import RegionSpec
from prism.capture.ir import MATMULS, Cost
from prism.capture.partition import PNode, Region, partition
from prism.capture.report import CaptureReport, GraphRecord, Outcome, RegionRecord
from prism.capture.runner import CaptureOptions, CaptureWarning, Fallback, RegionRunner

log = logging.getLogger(__name__)
BACKEND_NAME = "prism"
REPORT = CaptureReport()  # what the registered "prism" backend captured (prism.compile keeps its own)
_Unit = tuple[Region, RegionRunner, tuple[int, ...], tuple[int, ...]]  # a region, its runner, inputs, outputs


def _sum(costs: Sequence[Cost]) -> Cost:
    return Cost(sum(c.flops for c in costs), sum(c.bytes for c in costs))


def prism_backend(gm: Any, example_inputs: Sequence[Any], *, options: CaptureOptions | None = None,
                  report: CaptureReport | None = None) -> Callable[..., Any]:
    """The ``torch.compile`` backend contract: a GraphModule (and example inputs) in, a callable out."""
    options = options or CaptureOptions()
    report = report if report is not None else REPORT
    nodes = list(gm.graph.nodes)
    index = {n: i for i, n in enumerate(nodes)}
    runners = _runners(gm, nodes, index, options, report)
    if not (options.fallback is Fallback.INDUCTOR and outer.wants_inductor(example_inputs)):
        return _rewrite(gm, nodes, index, runners, keyed=False)
    return _with_inductor(gm, nodes, index, runners, example_inputs, options, report.graphs[-1])


def _runners(gm: Any, nodes: list[Any], index: dict[Any, int], options: CaptureOptions,
             report: CaptureReport) -> dict[int, _Unit]:
    """The graph's regions, each with its runner (by its first node), recorded in ``report``."""
    mapped = [aten.capture(n, index) for n in nodes]
    costs = [aten.cost(n) for n in nodes]
    pnodes = [PNode(i, tuple(index[a] for a in n.all_input_nodes), m.support,
                    m.step is not None and m.step.computes, m.step is not None and m.step.step in MATMULS)
              for i, (n, m) in enumerate(zip(nodes, mapped, strict=True))]
    regions = partition(pnodes, options.min_ops, split=options.split_blocks)
    in_region = {m for r in regions for m in r.nodes}
    computing = [i for i, n in enumerate(nodes) if aten.op_name(n) is not None and aten.op_name(n) not in aten.VIEWS]
    record = GraphRecord(len(computing), _sum([costs[i] for i in computing]),
                         writes_in_place=[f"{aten.op_name(n) or n.target} of {w}" for n in nodes
                                          if (w := outer.external_write(n)) is not None])
    for i in computing:
        if i not in in_region:
            why = mapped[i].why or f"{aten.op_name(nodes[i])}: in no region of {options.min_ops}+ ops"
            record.refused[why] = record.refused.get(why, 0) + 1
    runners: dict[int, _Unit] = {}
    for k, region in enumerate(regions):
        label = f"g{len(report.graphs)}r{k}"
        members = set(region.nodes)
        ins = tuple(dict.fromkeys(index[a] for m in region.nodes for a in nodes[m].all_input_nodes
                                  if index[a] not in members))
        outs = tuple(m for m in region.nodes if any(u not in index or index[u] not in members for u in nodes[m].users))
        steps = tuple(s for m in region.nodes if (s := mapped[m].step) is not None)
        spec = RegionSpec(steps, ins, outs)
        rec = RegionRecord(label, len(region.nodes), tuple(str(aten.op_name(nodes[m])) for m in region.nodes),
                           _sum([costs[m] for m in region.nodes]), spec=spec)
        record.regions.append(rec)
        runner = RegionRunner(spec, _eager(gm, nodes, region.nodes, ins, outs), rec, options)
        runners[region.nodes[0]] = (region, runner, ins, outs)
    report.graphs.append(record)
    return runners


def _with_inductor(gm: Any, nodes: list[Any], index: dict[Any, int], runners: dict[int, _Unit],
                   example_inputs: Sequence[Any], options: CaptureOptions, record: GraphRecord) -> Callable[..., Any]:
    """Inductor's compile of the graph: a region whose Prism kernel won at the example inputs' shapes is
    one ``prism::region`` call; a region that PyTorch ran faster there is inlined, its ops fused with
    their neighbours as torch.compile fuses them (an opaque call would keep them apart). When the
    example inputs cannot be run first (``outer.first_run``), every region is a call."""
    args = outer.first_run(_rewrite(gm, nodes, index, runners, keyed=False), nodes, example_inputs) if runners else None
    kept = {h: u for h, u in runners.items() if args is None or u[1].runs_prism()}
    rewritten = _rewrite(gm, nodes, index, kept, keyed=True)
    runners_of = [u[1] for u in kept.values()]
    try:
        compiled = outer.Holding(outer.inductor(rewritten, example_inputs), runners_of)
    except Exception as e:  # the custom-op calls still run as they are, the other nodes eagerly
        warnings.warn(f"prism: Inductor did not compile the graph around the regions ({type(e).__name__}: "
                      f"{str(e).splitlines()[0] if str(e) else ''}); its other ops run eagerly", CaptureWarning,
                      stacklevel=2)
        return outer.Holding(rewritten, runners_of)
    if args is None or not kept or not options.compare or not outer.on_gpu(args):
        return compiled
    return _faster_graph(gm, compiled, runners_of, args, example_inputs, record)


def _faster_graph(gm: Any, compiled: Callable[..., Any], prism: Sequence[RegionRunner], args: Sequence[Any],
                  example_inputs: Sequence[Any], record: GraphRecord) -> Callable[..., Any]:
    """``compiled`` (the graph with Prism's regions) or Inductor's graph alone, whichever runs faster
    on ``args``: a region's kernel that beat the region's own Inductor kernels can still lose the
    whole graph, where Inductor fuses the region's ops with its neighbours."""
    try:
        plain = outer.inductor(gm, example_inputs)
    except Exception as e:  # Inductor takes the graph with the regions but not without: keep that one
        log.info("prism: Inductor did not compile the graph alone (%s: %s)", type(e).__name__, e)
        return compiled
    times = outer.whole_times(compiled, plain, args)
    if times is None:
        return compiled
    record.times_us = {"with_prism": times[0], "inductor": times[1]}
    if times[0] <= times[1]:
        return compiled
    why = f"the graph runs faster in Inductor alone: {times[1]:.1f} us against {times[0]:.1f} us with Prism's regions"
    for runner in prism:
        runner.record.outcomes.update({k: (Outcome.PYTORCH, why) for k, (o, _) in runner.record.outcomes.items()
                                       if o is Outcome.PRISM})
        runner.record.sources.clear()
    return plain


def _eager(gm: Any, nodes: Sequence[Any], members: Sequence[int], ins: Sequence[int], outs: Sequence[int]) -> Any:
    """The region's own nodes as a GraphModule: ``(*inputs) -> tuple(outputs)``."""
    import torch.fx  # optional dependency: only the backend needs torch

    g = torch.fx.Graph()
    env = {nodes[i]: g.placeholder(f"in{p}") for p, i in enumerate(ins)}
    for m in members:
        env[nodes[m]] = g.node_copy(nodes[m], lambda n: env[n])
    g.output(tuple(env[nodes[o]] for o in outs))
    return torch.fx.GraphModule(gm, g)


def _rewrite(gm: Any, nodes: Sequence[Any], index: dict[Any, int], runners: dict[int, _Unit], *, keyed: bool) -> Any:
    """``gm`` with each region replaced by one call of its runner (units emitted after their inputs);
    ``keyed``: a call of the custom op ``prism::region`` that Inductor can compile around."""
    import torch.fx  # optional dependency: only the backend needs torch

    unit = {m: first for first, (r, *_rest) in runners.items() for m in r.nodes}
    g = torch.fx.Graph()
    env: dict[Any, Any] = {}
    done: set[int] = set()

    def emit(i: int) -> None:
        head = unit.get(i, i)
        if head in done:
            return
        if head in runners:
            _, runner, ins, outs = runners[head]
            for a in ins:
                emit(a)
            args = tuple(env[nodes[a]] for a in ins)
            call = (g.call_function(outer.region_op(), (outer.register(runner), list(args))) if keyed
                    else g.call_function(runner, args))
            for k, o in enumerate(outs):
                env[nodes[o]] = g.call_function(operator.getitem, (call, k))
            done.add(head)
            return
        for a in nodes[i].all_input_nodes:
            emit(index[a])
        env[nodes[i]] = g.node_copy(nodes[i], lambda n: env[n])
        done.add(head)

    for i in range(len(nodes)):
        emit(i)
    return torch.fx.GraphModule(gm, g)


class Compiled:
    """What ``prism.compile`` returns: call it like the function or module it wraps."""

    def __init__(self, fn: Callable[..., Any], report: CaptureReport) -> None:
        self.fn, self.report = fn, report

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def summary(self) -> dict[str, Any]:
        return self.report.summary()


def compile(fn: Callable[..., Any], example_inputs: Sequence[Any] | None = None, *,
            options: CaptureOptions | None = None, dynamic: bool | None = None) -> Compiled:
    """Capture ``fn`` (a function or ``nn.Module``) with Dynamo and run its supported regions as Prism
    kernels. With ``example_inputs``, the first call runs now (under ``torch.no_grad``): capture,
    superoptimize and the check against PyTorch happen here, not at the first real call. That call
    is a real call: where the function writes in place (a module's buffer, a KV cache it appends to,
    an input) the write happens, and a ``CaptureWarning`` says so."""
    import torch  # optional dependency: prism.compile needs torch

    report = CaptureReport()
    backend = functools.partial(prism_backend, options=options, report=report)
    compiled = torch.compile(fn, backend=backend, dynamic=dynamic)
    if example_inputs is not None:
        with torch.no_grad():
            compiled(*example_inputs)
        if writes := list(dict.fromkeys(w for g in report.graphs for w in g.writes_in_place)):
            named = ", ".join(writes[:4]) + (", ..." if len(writes) > 4 else "")
            warnings.warn(f"prism.compile called the function once on the example inputs, and it writes in place "
                          f"({named}): those writes (to a buffer, a cache, an input) have happened once already; "
                          "to avoid them, compile without example_inputs (the first real call compiles)",
                          CaptureWarning, stacklevel=2)
    return Compiled(compiled, report)


def register() -> None:
    """Make ``torch.compile(..., backend="prism")`` work in this process (an installed Prism also
    registers it through the ``torch_dynamo_backends`` entry point)."""
    from torch._dynamo.backends.registry import _COMPILER_FNS, register_backend  # optional dependency

    if BACKEND_NAME not in _COMPILER_FNS:
        register_backend(prism_backend, name=BACKEND_NAME)
