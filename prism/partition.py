"""Predefined plans and partitioning: every program gets a plan, large programs get searched in parts.

* ``predefined_plan(graph)``: the program as one predefined kernel per primitive op (vendor GEMM for
  matmuls, one library kernel per elementwise op or reduction). It is always a candidate, so every
  program the Graph API accepts has a correct plan, and the tuner's choice is never slower than it.
* ``partition(graph)``: the program cut at op boundaries into ``Part``s. Matmuls and transposes are
  parts of their own ("heavy" ops: a vendor GEMM or a generated GEMM); the other ops are grouped
  into connected runs between heavy ops, each cut into chunks of at most ``max_ops`` ops. Parts are
  ordered so that a part only reads tensors of earlier parts (a heavy op increases the *level* of
  what depends on it; ops of one level that touch are one run, so runs of one level never depend on
  each other). An activation or a gate of weight matmuls joins their part (epilogues: ``silu(x @ W1)``,
  ``silu(x @ Wg) * (x @ Wu)``), a norm feeding weight matmuls joins each of them (prologues), and so
  does a weight's transpose (searched without it, planned and tuned with it: docs/off-the-suite.md).
* ``Part.graph``: the part as a program of its own (cut tensors become inputs and outputs), searched
  and cached under its own structure key, so a repeated block is searched once.
* ``stitch(graph, parts, plans)``: one kernel graph of the whole program from one plan per part.

Tensor names inside a stitched plan are the program's own for its inputs and outputs, and fresh
names (never equal to a user's) for the tensors between parts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace

from prism.errors import IRError
from prism.graph import Graph, Node, OpKind, Tensor
from prism.ir import (
    BlockOp,
    Kernel,
    KernelGraph,
    Load,
    PredefinedKernel,
    Save,
    Size,
    UnaryOp,
)
from prism.ops import Const, DimRecip, Scalar, Unary

# Ops per part: the one-kernel search of a part stays within seconds up to about this many primitive
# ops (an RMS norm is six); measured in docs/search-budgets.md.
MAX_PART_OPS = 6
HEAVY = (OpKind.MATMUL, OpKind.TRANSPOSE)


@dataclass(frozen=True)
class Part:
    """A convex set of ops of a program, as a program of its own (``graph``)."""

    index: int
    nodes: tuple[int, ...]  # indices into the program's nodes, in order
    graph: Graph
    heavy: bool  # one matmul / transpose
    reads_transpose: bool = False  # a matmul reading a transpose that code generation cannot fold
    # transposes of weights (program inputs) the part reads as its matmuls' B operand: searched without
    # them (``inner``), planned and tuned with them (``with_transposes``) so that code generation folds
    # them into the loads, in the layout the stitched plan reads
    transposes: tuple[int, ...] = ()
    inner: Graph | None = None  # the part without its ``transposes`` (what the search sees), if any

    @property
    def searchable(self) -> bool:
        """A transpose alone has no block-graph form: only its predefined kernel runs it. A matmul
        reading a transpose that code generation cannot fold into its loads (``prism.codegen.fold``:
        the B operand, a 2-D or 3-D program input) gets the vendor GEMM only: a generated kernel would need
        the transpose materialised (a copy on every call), where the vendor GEMM reads a transposed
        view (``runtime._view_only_transposes``)."""
        return not (self.heavy and (self.graph.nodes[-1].kind is OpKind.TRANSPOSE or self.reads_transpose))


def tensor_names(graph: Graph) -> dict[int, str]:
    """The name of every node's tensor: the user's for inputs and outputs, fresh names otherwise."""
    taken = {t.name for t in graph.inputs} | {t.name for t in graph.outputs}
    names: dict[int, str] = {}
    for i, n in enumerate(graph.nodes):
        if n.kind is OpKind.INPUT:
            names[i] = n.name or ""
    for name, i in graph.output_indices:
        if i not in names:
            names[i] = name
    for i in range(len(graph.nodes)):
        if i not in names:
            base = f"v{i}"
            while base in taken:
                base = f"_{base}"
            taken.add(base)
            names[i] = base
    return names


# ---------------------------------------------------------------------------------- predefined plan


def _predefined_kernel(name: str, node: Node, inputs: tuple[str, ...], output: str) -> PredefinedKernel:
    return PredefinedKernel(name, node.kind, inputs, output, node.fn, node.dim, node.scalar)


def _copy_kernel(name: str, src: str, dst: str) -> PredefinedKernel:
    return PredefinedKernel(name, OpKind.UNARY, (src,), dst, Unary.SCALE, None, Const(1.0))


def predefined_plan(graph: Graph, program: str = "program") -> KernelGraph:
    """The program as predefined kernels only: one per primitive op, in program order."""
    graph.check_complete()
    names = tensor_names(graph)
    kernels: list[Kernel] = []
    for i, n in enumerate(graph.nodes):
        if n.kind is not OpKind.INPUT:
            kernels.append(_predefined_kernel(f"op{i}", n, tuple(names[a] for a in n.args), names[i]))
    kernels.extend(_output_copies(graph, names))
    return KernelGraph.of(graph, program, kernels)


def _output_copies(graph: Graph, names: dict[int, str]) -> list[PredefinedKernel]:
    """Outputs that are an input, or a second name of one tensor, are written by a copy."""
    out = []
    for k, (name, i) in enumerate(graph.output_indices):
        if names[i] != name:
            out.append(_copy_kernel(f"copy{k}", names[i], name))
    return out


# ---------------------------------------------------------------------------------- partition


def _levels(graph: Graph) -> list[int]:
    """Heavy ops on the longest path from the inputs (a heavy op counts itself)."""
    lv: list[int] = []
    for n in graph.nodes:
        base = max((lv[a] for a in n.args), default=0)
        lv.append(base + 1 if n.kind in HEAVY else base)
    return lv


def _runs(graph: Graph, levels: list[int]) -> list[list[int]]:
    """Connected groups of non-heavy ops of one level (union-find over their edges)."""
    parent = {i: i for i, n in enumerate(graph.nodes) if n.kind not in (*HEAVY, OpKind.INPUT)}

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in parent:
        for a in graph.nodes[i].args:
            if a in parent and levels[a] == levels[i]:
                parent[find(a)] = find(i)
    groups: dict[int, list[int]] = {}
    for i in sorted(parent):
        groups.setdefault(find(i), []).append(i)
    return list(groups.values())


def _chunks(graph: Graph, run: list[int], max_ops: int) -> list[list[int]]:
    """A run cut into pieces of at most ``max_ops`` ops, each cut where the fewest values cross it
    (the latest such place: a finished norm hands one tensor on, a half-finished one several)."""
    outputs = {i for _, i in graph.output_indices}
    users: dict[int, set[int]] = {}
    for j, n in enumerate(graph.nodes):
        for a in n.args:
            users.setdefault(a, set()).add(j)
    out: list[list[int]] = []
    rest = list(run)
    def crossing(head: set[int]) -> int:
        return sum(1 for i in head if i in outputs or users.get(i, set()) - head)

    def cut_of(piece: list[int]) -> int:
        return min(range(1, max_ops + 1), key=lambda c: (crossing(set(piece[:c])), -c))

    while len(rest) > max_ops:
        cut = cut_of(rest)
        out.append(rest[:cut])
        rest = rest[cut:]
    return [*out, rest] if rest else out


def partition(graph: Graph, max_ops: int = MAX_PART_OPS, prologues: bool = True, epilogues: bool = True) -> list[Part]:
    """The program's parts in an order where each reads only inputs and earlier parts' tensors.
    ``prologues``: an element-wise chunk takes the matmuls whose values it alone reads into its part
    (``_with_epilogues``), then a matmul takes the chunk that computes its left operand into its part
    (``_with_prologues``), so an activation runs once on a projection's output and an RMS norm and the
    matmul it feeds can become one kernel (unless that leaves one part: the whole program, which its
    own search covers; then without the epilogues, then without either). ``epilogues=False``: prologues
    only (the partition whose matmul part and element-wise tail ``prism.epilogue`` fuses)."""
    if max_ops < 1:
        raise IRError(f"max_ops {max_ops}: a part holds at least one op")
    graph.check_complete()
    levels = _levels(graph)
    keyed: list[tuple[tuple[int, int, int], list[int], bool]] = []
    for i, n in enumerate(graph.nodes):
        if n.kind in HEAVY:
            keyed.append(((levels[i], 0, i), [i], True))
    feeds = _weight_matmul_operands(graph) if prologues else set()
    for run in _runs(graph, levels):
        # a run that feeds a linear layer may keep one op more: a norm with its weight (7 ops) stays whole
        limit = max_ops + 1 if feeds & set(run) else max_ops
        for chunk in _chunks(graph, run, limit):
            keyed.append(((levels[chunk[0]], 1, chunk[0]), chunk, False))
    keyed.sort(key=lambda t: t[0])
    groups = [(nodes, heavy) for _, nodes, heavy in keyed]
    for candidate in _merges(graph, groups, max_ops, epilogues) if prologues else (groups,):
        if len(candidate) > 1:  # one part would be the program itself: its own search covers that
            groups = _ordered(graph, candidate)
            break
    names = tensor_names(graph)
    held = [set(nodes) for nodes, _ in groups]
    return [_part(graph, k, nodes, heavy, names, [h for h in held if h is not held[k]])
            for k, (nodes, heavy) in enumerate(groups)]


def _part(graph: Graph, k: int, nodes: list[int], heavy: bool, names: dict[int, str], others: list[set[int]]) -> Part:
    transposes = tuple(i for i in nodes if graph.nodes[i].kind is OpKind.TRANSPOSE and len(nodes) > 1)
    inner = part_graph(graph, [i for i in nodes if i not in transposes], names, others) if transposes else None
    return Part(k, tuple(nodes), part_graph(graph, nodes, names, others), heavy,
                any(_reads_transpose(graph, i) for i in nodes), transposes, inner)


def _with_weight_transposes(graph: Graph, groups: list[tuple[list[int], bool]]) -> list[tuple[list[int], bool]]:
    """A transpose of a weight (a 2-D or 3-D program input) read only as weight matmuls' B operand joins
    each of their parts: the part is then tuned reading the weight in its own layout, as the stitched
    plan reads it once ``codegen.fold`` has folded the transpose (its own part would leave the matmul
    parts tuned on a transposed copy, a layout that never runs)."""
    owner = {i: g for g, (nodes, _) in enumerate(groups) for i in nodes}
    outputs = {i for _, i in graph.output_indices}
    joins: dict[int, list[int]] = {}  # transpose group -> the matmul groups it joins
    read_by = reader_sets(graph)
    for c, (nodes, heavy) in enumerate(groups):
        t = nodes[0]
        if heavy and len(nodes) == 1 and _folded_weight(graph, t, read_by, outputs):
            joins[c] = sorted({owner[j] for j in read_by[t]})
    return [(sorted([*nodes, *(groups[c][0][0] for c, to in joins.items() if g in to)]), heavy)
            for g, (nodes, heavy) in enumerate(groups) if g not in joins]


def weight_transposes(graph: Graph) -> Part | None:
    """The whole program as a part whose ``inner`` graph has its foldable weight transposes taken out
    (a transpose of a 2-D or 3-D program input, not an output, that every reader reads as a weight
    matmul's B operand: ``K^T`` of an attention, ``W^T`` of a linear layer; or that element-wise ops and
    reductions read too: ``_folded_input``), or None when it has none.
    The whole-program search sees ``inner`` (a block graph has no transpose) and ``with_transposes``
    puts the transposes back in its plans, where code generation folds them into the loads."""
    outputs = {i for _, i in graph.output_indices}
    read_by = reader_sets(graph)
    found = tuple(t for t in range(len(graph.nodes)) if _folded_input(graph, t, read_by, outputs))
    if not found:
        return None
    ops = [i for i, n in enumerate(graph.nodes) if n.kind is not OpKind.INPUT]
    inner = part_graph(graph, [i for i in ops if i not in found], tensor_names(graph))
    return Part(0, tuple(ops), graph, False, False, found, inner)


def _folded_weight(graph: Graph, t: int, read_by: dict[int, set[int]], outputs: set[int]) -> bool:
    """Node ``t`` is a transpose, no output, that every reader reads as a weight matmul's B operand
    (``_weight_matmul``: so it transposes a 2-D or 3-D program input, and code generation folds it)."""
    readers = read_by.get(t)
    return graph.nodes[t].kind is OpKind.TRANSPOSE and t not in outputs and bool(readers) and all(
        _weight_matmul(graph, j) and graph.nodes[j].args[1] == t for j in readers or ())


def _folded_input(graph: Graph, t: int, read_by: dict[int, set[int]], outputs: set[int]) -> bool:
    """Node ``t`` is a transpose of a 2-D or 3-D program input, no output, that element-wise ops and
    reductions read, and matmuls only as their B operand (every ``_folded_weight`` is one): code generation
    reads such a tile in place,
    in the input's layout (``prism.codegen.fold``; ``prism.transposes`` moves transposes onto inputs)."""
    node = graph.nodes[t]
    readers = read_by.get(t)
    if node.kind is not OpKind.TRANSPOSE or t in outputs or not readers:
        return False
    src = graph.nodes[node.args[0]]
    return src.kind is OpKind.INPUT and len(src.shape) in (2, 3) and all(_reads_in_place(graph, j, t) for j in readers)


def _reads_in_place(graph: Graph, j: int, t: int) -> bool:
    """Node ``j`` reads transpose ``t`` as code generation can in place: element-wise, as a reduction,
    or as a weight matmul's B operand (not its A operand)."""
    r = graph.nodes[j]
    if r.kind is OpKind.MATMUL:  # (``_weight_matmul``: its A operand is no transpose)
        return _weight_matmul(graph, j) and r.args[1] == t
    return r.kind in (OpKind.UNARY, OpKind.BINARY, OpKind.REDUCE)


def with_transposes(graph: Graph, part: Part, plans: Sequence[KernelGraph]) -> tuple[KernelGraph, ...]:
    """Plans of ``part.inner`` as plans of ``part.graph``: its weight transposes first, as predefined
    kernels (code generation folds them into the loads of the matmuls that read them)."""
    if not part.transposes:
        return tuple(plans)
    names = tensor_names(graph)
    pre = [_predefined_kernel(f"transpose{i}", graph.nodes[i], (names[graph.nodes[i].args[0]],), names[i])
           for i in part.transposes]
    return tuple(KernelGraph.of(part.graph, plan.program, [*pre, *plan.kernels]) for plan in plans)


def _weight_matmul(graph: Graph, i: int) -> bool:
    """Matmul ``i`` reads a weight on the right (a program input, or a transpose of one that code
    generation folds) and generated code can run it."""
    m = graph.nodes[i]
    if m.kind is not OpKind.MATMUL or _reads_transpose(graph, i):
        return False
    w = graph.nodes[m.args[1]]
    return w.kind is OpKind.INPUT or (w.kind is OpKind.TRANSPOSE and graph.nodes[w.args[0]].kind is OpKind.INPUT)


def _weight_matmul_operands(graph: Graph) -> set[int]:
    return {graph.nodes[i].args[0] for i in range(len(graph.nodes)) if _weight_matmul(graph, i)}


def _merges(graph: Graph, groups: list[tuple[list[int], bool]], max_ops: int,
            epilogues: bool) -> Iterator[list[tuple[list[int], bool]]]:
    """The merged groupings ``partition`` tries, in order (computed as they are asked for): with
    epilogues (``epilogues``) then without, prologues joined in both, each with the weight transposes
    joined, then without them."""
    for base in ((_with_epilogues(graph, groups, max_ops),) if epilogues else ()) + (groups,):
        merged = _with_prologues(graph, base)
        yield _with_weight_transposes(graph, merged)
        yield merged


def _with_epilogues(graph: Graph, groups: list[tuple[list[int], bool]], max_ops: int) -> list[tuple[list[int], bool]]:
    """An element-wise chunk takes into its part the weight matmuls (``_epilogue_matmul``) whose values
    only it reads, as many as fit ``max_ops``: ``silu(x @ W1) @ W2`` becomes ``silu(x @ W1)`` and a plain
    ``@ W2``, ``silu(x @ Wg) * (x @ Wu)`` one part. As the next matmul's prologue the activation would
    run on every tile each block of that matmul loads (once per column block, a pass and a barrier per
    iteration: 16.6 µs for a decode down projection where the plain GEMV takes 11.2, H200,
    docs/off-the-suite.md "Activations as epilogues"); as an epilogue it runs once per output. A chunk
    that also reads another tensor takes its one matmul where ``_biased`` says so."""
    owner = {i: g for g, (nodes, _) in enumerate(groups) for i in nodes}
    outputs = {i for _, i in graph.output_indices}
    readers = reader_sets(graph)
    taken: dict[int, int] = {}  # matmul group -> the chunk group that takes it
    for c, (chunk, heavy) in enumerate(groups):
        if heavy or not all(graph.nodes[i].kind in (OpKind.UNARY, OpKind.BINARY) for i in chunk):
            continue
        inside = set(chunk)
        reads = {a for i in chunk for a in graph.nodes[i].args if a not in inside}
        mms = sorted({owner[a] for a in reads if a in owner and a not in outputs and readers[a] <= inside
                      and _epilogue_matmul(graph, groups[owner[a]])})
        if mms and len(chunk) + len(mms) <= max_ops and (
                reads <= {groups[m][0][0] for m in mms} or _biased(graph, groups, owner, mms)):
            taken.update(dict.fromkeys(mms, c))
    return [(sorted([*nodes, *(groups[m][0][0] for m, to in taken.items() if to == g)]), heavy)
            for g, (nodes, heavy) in enumerate(groups) if g not in taken]


def _biased(graph: Graph, groups: list[tuple[list[int], bool]], owner: dict[int, int], mms: list[int]) -> bool:
    """A chunk that also reads other tensors (a bias, a residual) takes one matmul (``mms``) as its
    epilogue when nothing would be that matmul's prologue: its left operand is an input, a heavy op's
    value or an element-wise chunk's that reads matmul values (the activation between two projections).
    Such a part's own search finds no one-kernel plan (an input read after the loop must pass through
    an accumulator), but its epilogue plans (``prism.epilogue``, built for parts by
    ``pipeline._search_parts``) are one kernel: ``gelu(x @ W1 + b1)`` and ``h @ W2 + b2`` where the bias
    adds had been the next projection's prologue and a launch of their own. A norm of an input before
    the matmul stays its prologue (one kernel with the projection), the tail a part of its own."""
    if len(mms) != 1:
        return False
    left = graph.nodes[groups[mms[0]][0][0]].args[0]
    if left not in owner or groups[owner[left]][1]:
        return True
    return any(graph.nodes[a].kind is OpKind.MATMUL for i in groups[owner[left]][0] for a in graph.nodes[i].args)


def reader_sets(graph: Graph) -> dict[int, set[int]]:
    """Node -> the nodes that read its value (nodes no one reads are absent)."""
    readers: dict[int, set[int]] = {}
    for j, n in enumerate(graph.nodes):
        for a in n.args:
            readers.setdefault(a, set()).add(j)
    return readers


def _epilogue_matmul(graph: Graph, group: tuple[list[int], bool]) -> bool:
    """``group`` is one weight matmul (its value read by the chunk alone: ``_with_epilogues`` checks).
    (A norm computing its left operand then runs as a part of its own, not as the matmul's prologue: a
    decode Llama MLP block's gate and up projections as one part with their activation, 19-21 µs,
    against two norm-prologue GEMVs of 12.6 µs each and the activation's pass in the down projection,
    H200.)"""
    nodes, heavy = group
    return heavy and len(nodes) == 1 and _weight_matmul(graph, nodes[0])


def _with_prologues(graph: Graph, groups: list[tuple[list[int], bool]]) -> list[tuple[list[int], bool]]:
    """A chunk whose values are read outside it only as the left operand of weight matmuls
    (``_weight_matmul``) joins each of them: an RMS norm feeding the q, k and v projections is
    recomputed in all three parts (one search serves them: same structure), so each can be one
    kernel that reads ``x`` and streams its weight. A part with a second output (the chunk's value
    for another reader) would leave the one-kernel plan out of reach, so such chunks stay apart."""
    owner = {i: g for g, (nodes, _) in enumerate(groups) for i in nodes}
    outputs = {i for _, i in graph.output_indices}
    joins: dict[int, list[int]] = {}  # chunk group -> the matmul groups it joins
    read_by = reader_sets(graph)
    for c, (chunk, heavy) in enumerate(groups):
        inside = set(chunk)
        readers = {j for i in chunk for j in read_by.get(i, ())} - inside
        if heavy or not readers or inside & outputs or any(graph.nodes[i].kind in HEAVY for i in chunk):
            continue  # (a part an epilogue made holds its matmuls: it is no prologue)
        if all(_weight_matmul(graph, j) and graph.nodes[j].args[1] not in inside and groups[owner[j]][1]
               for j in readers):
            joins[c] = sorted({owner[j] for j in readers})
    out = []
    for g, (nodes, heavy) in enumerate(groups):
        if g in joins:
            continue
        prologue = [i for c, to in joins.items() if g in to for i in groups[c][0]]
        out.append((sorted([*nodes, *prologue]), heavy and not prologue))
    return out


def _ordered(graph: Graph, groups: list[tuple[list[int], bool]]) -> list[tuple[list[int], bool]]:
    """The groups in an order where each reads only inputs and earlier groups (Kahn's algorithm,
    ties in the given order). A node recomputed in several groups is read by none of the others."""
    owner = {i: g for g, (nodes, _) in enumerate(groups) for i in nodes}
    deps = [{owner[a] for i in nodes for a in graph.nodes[i].args if a in owner and a not in nodes}
            for nodes, _ in groups]
    done: set[int] = set()
    order: list[int] = []
    while len(order) < len(groups):
        g = next((g for g in range(len(groups)) if g not in done and deps[g] <= done), None)
        if g is None:  # cannot happen for parts of an acyclic program; a typed error if it ever does
            raise IRError(f"partition: parts {sorted(set(range(len(groups))) - done)} depend on each other")
        done.add(g)
        order.append(g)
    return [groups[g] for g in order]


def _reads_transpose(graph: Graph, i: int) -> bool:
    """Matmul ``i`` reads a transpose that generated code would have to copy: one that is its A
    operand, or of something other than a 2-D or 3-D program input (see ``Part.searchable``)."""
    n = graph.nodes[i]
    if n.kind is not OpKind.MATMUL:
        return False
    a, b = (graph.nodes[x] for x in n.args)
    src = graph.nodes[b.args[0]] if b.kind is OpKind.TRANSPOSE else None
    return a.kind is OpKind.TRANSPOSE or (src is not None and (src.kind is not OpKind.INPUT or len(src.shape) not in (2, 3)))


def part_graph(graph: Graph, nodes: Sequence[int], names: dict[int, str],
               others: Sequence[set[int]] = ()) -> Graph:
    """The ops ``nodes`` of ``graph`` as a program: what they read from outside becomes inputs,
    what the rest of the program (or its outputs) reads becomes outputs, except what a reader's
    own part recomputes (``others``: the other parts' nodes; a prologue joins several parts)."""
    inside = set(nodes)
    g = Graph()
    local: dict[int, Tensor] = {}
    for i in nodes:
        for a in graph.nodes[i].args:
            if a not in inside and a not in local:
                src = graph.nodes[a]
                local[a] = g.input(src.shape, src.dtype, names[a])
        n = graph.nodes[i]
        local[i] = g._add(replace(n, args=tuple(local[a].index for a in n.args), name=None,
                                  scalar=_portable(n.scalar, graph, [a for a in local if a not in inside], names)))
    used_outside = {a for j, n in enumerate(graph.nodes) if j not in inside for a in n.args
                    if not any(j in o and a in o for o in others)}
    used_outside |= {i for _, i in graph.output_indices}
    for i in nodes:
        if i in used_outside:
            g.output(local[i], names[i])
    return g


def _portable(s: Scalar | None, graph: Graph, part_inputs: list[int], names: dict[int, str]) -> Scalar | None:
    """A mean's 1/n names a program input's dim; in a part it names the part input's dim that has the
    same extent by the program's shapes (so the part's search stays size-free), else the number."""
    if not isinstance(s, DimRecip):
        return s
    for a in part_inputs:
        for d in range(len(graph.nodes[a].shape)):
            if graph.dim_origin(a, d) == (s.tensor, s.dim):
                return DimRecip(names[a], d)
    return Const(s.resolve({t.name: t.shape for t in graph.inputs}))


# ---------------------------------------------------------------------------------- canonical names

def canonical(graph: Graph) -> tuple[Graph, dict[str, str]]:
    """``graph`` with its inputs and outputs named by position (``in0``…, ``out0``…) and the map
    back to its own names. Parts of one structure then share a search (the cache key names the
    inputs): a norm recomputed before the k and the v projection, whose inputs the program names
    differently, is searched once."""
    g = Graph()
    local: dict[int, Tensor] = {}
    back: dict[str, str] = {}
    for i, n in enumerate(graph.nodes):
        if n.kind is OpKind.INPUT:
            local[i] = g.input(n.shape, n.dtype, f"in{len(back)}")
            back[f"in{len(back)}"] = n.name or ""
    ren = {v: k for k, v in back.items()}
    for i, n in enumerate(graph.nodes):
        if n.kind is not OpKind.INPUT:
            scalar = DimRecip(ren[n.scalar.tensor], n.scalar.dim) if isinstance(n.scalar, DimRecip) else n.scalar
            local[i] = g._add(replace(n, args=tuple(local[a].index for a in n.args), name=None, scalar=scalar))
    for k, (name, i) in enumerate(graph.output_indices):
        g.output(local[i], f"out{k}")
        back[f"out{k}"] = name
    return g, back


def renamed(kg: KernelGraph, names: dict[str, str]) -> KernelGraph:
    """``kg`` with its tensors renamed by ``names`` (others keep theirs, moved aside from the new ones)."""
    taken = set(names.values())

    def t(name: str) -> str:
        if name in names:
            return names[name]
        new = name
        while new in taken:
            new = f"_{new}"
        return new

    def sc(s: Scalar | None) -> Scalar | None:
        return DimRecip(t(s.tensor), s.dim) if isinstance(s, DimRecip) else s

    kernels = [_with_tensors(k, t, sc) for k in kg.kernels]
    return replace(kg, inputs=tuple(replace(x, name=t(x.name)) for x in kg.inputs),
                   outputs=tuple(replace(x, name=t(x.name)) for x in kg.outputs), kernels=tuple(kernels))


# ---------------------------------------------------------------------------------- stitching


def stitch(graph: Graph, parts: Sequence[Part], plans: Sequence[KernelGraph], program: str = "program") -> KernelGraph:
    """One kernel graph of ``graph`` from one plan per part (kernels, intermediates and symbols of
    part k are renamed ``p{k}_…`` so that parts never collide)."""
    if len(parts) != len(plans):
        raise IRError(f"{program}: {len(plans)} plans for {len(parts)} parts")
    taken = {t.name for t in graph.inputs} | {t.name for t in graph.outputs}
    kernels: list[Kernel] = []
    names = tensor_names(graph)
    scalar = _program_scalar(graph, names)
    for part, plan in zip(parts, plans, strict=True):
        boundary = {t.name for t in plan.inputs} | {t.name for t in plan.outputs}
        kernels.extend(_renamed(k, f"p{part.index}_", boundary, taken, scalar) for k in plan.kernels)
    kernels.extend(_output_copies(graph, names))
    whole = KernelGraph.of(graph, program, kernels)
    tails = {p.tail for p in plans if p.tail is not None}
    if len(tails) > 1:  # (``stitchable``)
        raise IRError(f"{program}: parts padded to different tails {sorted(map(str, tails))}")
    return whole.padded(tails.pop()) if tails else whole  # (the lowering refuses what a tail reaches unmasked)


def stitchable(plans: Sequence[KernelGraph]) -> bool:
    """Whether the parts' plans make one plan: those padded to a tile multiple padded alike (a part's
    plan runs at its own padded extent, so parts tuned to different paddings have no common one)."""
    return len({p.tail for p in plans if p.tail is not None}) <= 1


def _fresh(name: str, prefix: str, boundary: set[str], taken: set[str]) -> str:
    if name in boundary:
        return name
    new = f"{prefix}{name}"
    while new in taken:
        new = f"_{new}"
    return new


def _program_scalar(graph: Graph, names: dict[int, str]) -> Callable[[Scalar | None], Scalar | None]:
    """A part's 1/n names a cut tensor's dim; in the whole program it names the input dim it comes
    from (or becomes the number)."""
    inputs = {t.name for t in graph.inputs}
    node_of = {name: i for i, name in names.items()}

    def fix(s: Scalar | None) -> Scalar | None:
        if not isinstance(s, DimRecip) or s.tensor in inputs:
            return s
        a = node_of[s.tensor]
        origin = graph.dim_origin(a, s.dim)
        return DimRecip(*origin) if origin is not None else Const(1.0 / graph.nodes[a].shape[s.dim])

    return fix


def _with_tensors(k: Kernel, t: Callable[[str], str], scalar: Callable[[Scalar | None], Scalar | None]) -> Kernel:
    """``k`` reading and writing the tensors ``t`` names, with its scalars mapped by ``scalar``."""
    if isinstance(k, PredefinedKernel):
        return replace(k, inputs=tuple(t(n) for n in k.inputs), output=t(k.output), scalar=scalar(k.scalar))

    def op_of(op: BlockOp) -> BlockOp:
        if isinstance(op, Load | Save):
            return replace(op, tensor=t(op.tensor))
        return replace(op, scalar=scalar(op.scalar)) if isinstance(op, UnaryOp) else op

    return replace(k, ops=tuple(op_of(op) for op in k.ops))


def _renamed(k: Kernel, prefix: str, boundary: set[str], taken: set[str],
             scalar: Callable[[Scalar | None], Scalar | None]) -> Kernel:
    k = _with_tensors(k, lambda name: _fresh(name, prefix, boundary, taken), scalar)
    if isinstance(k, PredefinedKernel):
        return replace(k, name=f"{prefix}{k.name}")

    def size(s: Size) -> Size:
        return f"{prefix}{s}" if isinstance(s, str) else s

    return replace(k, name=f"{prefix}{k.name}", grid=tuple(size(s) for s in k.grid), loop=size(k.loop))
