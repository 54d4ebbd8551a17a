"""Element-wise chains searched as one op: a program too large to search whole, made small enough.

A chain is a run of element-wise ops that reads one tensor (its root) and nothing else but constants:
Gemma-2's soft cap of attention scores, ``50 (e - 1) / (e + 1)`` with ``e = exp(s / 25)``, is six ops
of one tensor. The symbolic search's cost grows with the ops of a program, and such a chain adds
ops without adding choices: wherever a plan computes the chain's value, it computes it element by
element from its root's tile. So ``collapse`` replaces each chain by one ``Unary.CHAIN`` op (its
scalar numbers the chain), the search runs on that stand-in, and ``Collapsed.expand`` writes each
chain op of a found plan back as the chain's ops over the same tile (in a generated kernel) or as
one predefined kernel per op (in a plan of predefined kernels).

A plan proven for the stand-in is proven for every element-wise function in the chain op's place
(the prover knows nothing of ``chain:k`` but that it is element-wise), so for the chain; the
pipeline proves the expanded plans against the program once more all the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from prism.graph import Graph, Node, OpKind, Tensor
from prism.ir import BinaryOp, BlockOp, CustomKernel, Kernel, KernelGraph, PredefinedKernel, UnaryOp, renumbered
from prism.ops import Binary, Const, Scalar, Unary
from prism.partition import reader_sets

MIN_CHAIN = 2  # a single op is its own chain


@dataclass(frozen=True)
class Step:
    """One op of a chain: ``fn`` of earlier values (0 is the root, k + 1 the k-th step's value)."""

    fn: Unary | Binary
    args: tuple[int, ...]
    scalar: Scalar | None = None


@dataclass(frozen=True)
class Collapsed:
    """A program with each chain one ``Unary.CHAIN`` op (``graph``), and the chains by number."""

    graph: Graph
    chains: tuple[tuple[Step, ...], ...]

    def expand(self, plans: Sequence[KernelGraph]) -> tuple[KernelGraph, ...]:
        """``plans`` of ``graph`` as plans of the program: every chain op written out."""
        return tuple(replace(kg, kernels=tuple(k for old in kg.kernels for k in self._kernels(old, kg)))
                     for kg in plans)

    def _kernels(self, k: Kernel, kg: KernelGraph) -> list[Kernel]:
        if isinstance(k, CustomKernel):
            return [replace(k, ops=self._ops(k.ops))]
        if k.fn is not Unary.CHAIN:
            return [k]
        steps = self.chains[_number(k.scalar)]
        taken = {t.name for t in (*kg.inputs, *kg.outputs)}
        taken |= {x.output for x in kg.kernels if isinstance(x, PredefinedKernel)}
        taken |= {op.tensor for x in kg.kernels if isinstance(x, CustomKernel) for op in x.saves}
        names = [k.inputs[0], *(_fresh(f"{k.output}_c{s}", taken) for s in range(len(steps) - 1)), k.output]
        return [PredefinedKernel(f"{k.name}_c{s}", OpKind.UNARY if isinstance(st.fn, Unary) else OpKind.BINARY,
                                 tuple(names[a] for a in st.args), names[s + 1], st.fn, scalar=st.scalar)
                for s, st in enumerate(steps)]

    def _ops(self, ops: tuple[BlockOp, ...]) -> tuple[BlockOp, ...]:
        out: list[BlockOp] = []
        new: dict[int, int] = {}
        for j, op in enumerate(ops):
            if isinstance(op, UnaryOp) and op.fn is Unary.CHAIN:
                vals = [new[op.x]]
                for st in self.chains[_number(op.scalar)]:
                    out.append(UnaryOp(st.fn, vals[st.args[0]], st.scalar) if isinstance(st.fn, Unary)
                               else BinaryOp(st.fn, vals[st.args[0]], vals[st.args[1]]))
                    vals.append(len(out) - 1)
            else:
                out.append(renumbered(op, new))
            new[j] = len(out) - 1
        return tuple(out)


def _number(s: Scalar | None) -> int:
    assert isinstance(s, Const), "a chain op carries its number"
    return int(s.value)


def _fresh(name: str, taken: set[str]) -> str:
    while name in taken:
        name = f"_{name}"
    taken.add(name)
    return name


def chains_of(graph: Graph) -> list[tuple[int, tuple[int, ...]]]:
    """(root, ops) of each chain of ``graph``, ops in program order, the last one the chain's value:
    the largest run of element-wise ops ending at an op whose every other op is read only inside the
    run and is no program output, and that reads no tensor but the root (``MIN_CHAIN`` ops at least)."""
    readers = reader_sets(graph)
    outputs = {i for _, i in graph.output_indices}
    taken: set[int] = set()
    found = []
    for top in reversed(range(len(graph.nodes))):
        if top in taken or not _elementwise(graph.nodes[top]):
            continue
        run = _run(graph, top, readers, outputs)
        roots = {a for i in run for a in graph.nodes[i].args if a not in run}
        if len(run) >= MIN_CHAIN and len(roots) == 1:
            taken |= run
            found.append((roots.pop(), tuple(sorted(run))))
    return found[::-1]


def _run(graph: Graph, top: int, readers: dict[int, set[int]], outputs: set[int]) -> set[int]:
    """The element-wise ops ``top`` computes from: each read only by ops of the run, none an output."""
    run = {top}
    grew = True
    while grew:
        grew = False
        for a in {a for i in run for a in graph.nodes[i].args} - run:
            n = graph.nodes[a]
            if _elementwise(n) and a not in outputs and readers.get(a, set()) <= run and n.shape == graph.nodes[top].shape:
                run.add(a)
                grew = True
    return run


def _elementwise(n: Node) -> bool:
    return n.kind is OpKind.UNARY or n.kind is OpKind.BINARY


def collapse(graph: Graph) -> Collapsed | None:
    """``graph`` with each chain (``chains_of``) one ``Unary.CHAIN`` op, or None when it has none."""
    found = chains_of(graph)
    if not found:
        return None
    last = {ops[-1]: k for k, (_, ops) in enumerate(found)}
    inside = {i for _, ops in found for i in ops[:-1]}
    g = Graph()
    new: dict[int, int] = {}
    for i, n in enumerate(graph.nodes):
        if i in inside:
            continue
        if n.kind is OpKind.INPUT:
            new[i] = g.input(n.shape, n.dtype, n.name).index
        elif i in last:
            root = found[last[i]][0]
            new[i] = g._add(Node(OpKind.UNARY, (new[root],), n.shape, n.dtype, fn=Unary.CHAIN,
                                 scalar=Const(float(last[i])))).index
        else:
            new[i] = g._add(replace(n, args=tuple(new[a] for a in n.args), name=None)).index
    for name, i in graph.output_indices:
        g.output(Tensor(g, new[i]), name)
    return Collapsed(g, tuple(_steps(graph, root, ops) for root, ops in found))


def _steps(graph: Graph, root: int, ops: tuple[int, ...]) -> tuple[Step, ...]:
    value = {root: 0, **{i: k + 1 for k, i in enumerate(ops)}}
    return tuple(Step(graph.nodes[i].fn, tuple(value[a] for a in graph.nodes[i].args), graph.nodes[i].scalar)  # type: ignore[arg-type]
                 for i in ops)
