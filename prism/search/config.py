"""The declared limits of the symbolic search: one frozen object, defaults that cover the benchmarks."""

from __future__ import annotations

from dataclasses import dataclass

from prism.errors import SearchError

MAP_KINDS: tuple[str, ...] = ("imap", "fmap", "omap")


@dataclass(frozen=True)
class SearchConfig:
    """Limits of the sGraph generator.

    ``max_block_ops`` counts every op of one block graph (loads and saves included); None means
    "the fewest ops any single-kernel graph of the program needs, plus ``extra_ops``, but no more
    than ``auto_block_ops_cap`` unless the fewest is itself larger" (the program's own size decides;
    the slack shrinks for large programs, whose block-graph space grows fastest with it).
    ``max_kernels`` bounds custom kernels per kernel graph; a later kernel may read tensors written by
    an earlier one (at most ``max_intermediates`` such tensors in a graph) and may reuse an earlier
    kernel's grid size as its own loop or grid size (``share_sizes``). ``max_intermediates`` None
    is 2; a running max handed on beside rescaled partials (a split online softmax) is not
    counted.
    ``split_only`` keeps only the multi-kernel graphs whose later kernel loops over an earlier
    kernel's grid size (split-K / split-KV: partial results reduced by the next kernel); a plain
    kernel pipeline that fuses less is left out of the space.
    ``loop_one`` also builds every one-kernel graph with no for-loop (loop size 1): a program with
    nothing to reduce (an elementwise chain) has no mapping that is right for every loop size.
    ``last_loop_one`` does the same for the later kernel of a pipeline (``split_only`` off): the
    element-wise kernel after column statistics reads its rows by its grid, not by a loop.
    ``check_feasible`` asks z3, for every candidate, whether any mapping satisfies all constraints
    (off by default: mapping instantiation answers the same question, a candidate without mappings
    then simply yields none).
    ``concrete_maps`` is the paper's Table-4 ablation: the named map kinds are enumerated during the
    search instead of being kept as symbolic Boolean variables.
    ``op_budget`` optionally caps how often an op kind (``"unary:exp"``, ``"binary:mul"``,
    ``"matmul"``, ``"reduce:sum"``, ``"accum"``) may occur in one block graph: it narrows the
    structural space (the soundness tests use it to keep brute force small); None means no cap.
    ``max_candidates`` stops the search, incomplete as at its time budget, once it holds that many
    candidates: mapping instantiation covers a few thousand a minute, so a longer tail is never
    mapped and only costs memory (qknorm_gqa: 280,009 candidates in 300 s held 1.1 GiB).
    ``rank_variants`` drops a block graph when an algebraic variant with the same loads and saved
    values does no more work on every size (``dominance``: a split softmax's combine that divides
    two sums beats one that squares, multiplies and divides); off, every variant within the op
    bound is kept (the soundness tests compare the search against brute force that way).
    ``long_dims`` names (program input position, dim) pairs longer than any block's shared memory holds:
    a mapping whose tile of such an input holds such a dim whole (neither a grid dim nor the loop splits
    it) cannot be generated at those shapes and is dropped before the numeric screen (the two-kernel
    pipelines of a 128K-vocabulary softmax, searched only because its rows fit no block).
    ``least_work_first`` maps the candidates the fewest kernels and block ops first, instead of in the
    generator's order: where the mapping's deadline cuts a budget-bound search, it drops the plans that do
    the most. The pipeline search sets it (only its cheapest two-kernel pairs fit; docs/search-speed.md,
    "The mapping's order"); the default search keeps the generator's order (the same order reaches many
    times the plans of a decode attention's two-kernel part, whose cached plans are screened again in every
    process that loads them).
    """

    max_block_ops: int | None = None
    extra_ops: int = 2
    auto_block_ops_cap: int = 16
    max_kernels: int = 2
    min_grid_dims: int = 1
    max_grid_dims: int = 3
    max_intermediates: int | None = None
    share_sizes: bool = True
    split_only: bool = True
    loop_one: bool = False
    last_loop_one: bool = False
    check_feasible: bool = False
    time_budget_s: float = 600.0
    max_candidates: int = 100_000
    concrete_maps: frozenset[str] = frozenset()
    op_budget: tuple[tuple[str, int], ...] | None = None
    rank_variants: bool = True
    long_dims: tuple[tuple[int, int], ...] = ()
    least_work_first: bool = False
    progress: bool = False

    def __post_init__(self) -> None:
        if not 1 <= self.min_grid_dims <= self.max_grid_dims <= 3:
            raise SearchError(f"grid dims {self.min_grid_dims}..{self.max_grid_dims}: a block graph has 1 to 3")
        bad_ops = self.max_block_ops is not None and self.max_block_ops < 2
        bad_inter = self.max_intermediates is not None and self.max_intermediates < 0
        if bad_ops or self.extra_ops < 0 or self.max_kernels < 1 or bad_inter:
            raise SearchError("max_block_ops >= 2, max_kernels >= 1 and max_intermediates >= 0 are required")
        bad = set(self.concrete_maps) - set(MAP_KINDS)
        if bad:
            raise SearchError(f"concrete_maps {sorted(bad)}: known map kinds are {', '.join(MAP_KINDS)}")
        if self.max_kernels > 2:
            raise SearchError("this generator builds kernel graphs of at most 2 custom kernels")
        if self.time_budget_s <= 0:
            raise SearchError("time_budget_s must be positive")
        if self.max_candidates < 1:
            raise SearchError(f"max_candidates {self.max_candidates}: must be at least 1")

    def budget(self, kind: str) -> int | None:
        if self.op_budget is None:
            return None
        return dict(self.op_budget).get(kind, 0)
