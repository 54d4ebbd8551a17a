"""The captured program: what each PyTorch node becomes in a Prism graph, before any shape is known.

A node of a torch.fx graph maps to one ``Captured`` step (``prism.capture.aten``), whose operands are
other nodes (``Ref``, by their position in the fx graph) or Python numbers. Shapes are bound only
when a region runs (``prism.capture.build``): one capture serves every shape Dynamo sends.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from prism.ops import Binary, Reduce, Unary


class Step(enum.Enum):
    """What a captured node does in the Prism graph of its region."""

    LINEAR = "linear"  # x @ wᵀ (+ bias): the weight transpose is a relabeling inside the graph
    MATMUL = "matmul"
    BINARY = "binary"  # fn: Binary; a number operand makes a scalar op (number first: reversed)
    UNARY = "unary"  # fn: Unary (pow 2 is SQUARE)
    REDUCE = "reduce"  # fn: Reduce over ``dim`` (kept); ``mean`` marks the mean
    SOFTMAX = "softmax"  # safe softmax over ``dim``
    LOG_SOFTMAX = "log_softmax"  # over ``dim``
    LOGSUMEXP = "logsumexp"  # over ``dim``, kept
    CLAMP = "clamp"  # operands (x, lo, hi): numbers, -inf / inf for a missing bound
    ACTIVATION = "activation"  # fn: Activation, a Graph composite; ``scale``: its parameter (None: the default)
    TRANSPOSE = "transpose"  # the last two dims
    IDENTITY = "identity"  # a cast between Prism dtypes, contiguous(), clone(), dropout in eval mode
    SDPA = "sdpa"  # scaled_dot_product_attention without mask (decode: one query row): a region alone


class Activation(enum.Enum):
    """PyTorch activations that are Graph composites (the value is the Graph method's name)."""

    SOFTPLUS = "softplus"  # parameter: beta
    MISH = "mish"
    ELU = "elu"  # parameter: alpha
    LEAKY_RELU = "leaky_relu"  # parameter: negative_slope
    HARDSIGMOID = "hardsigmoid"
    HARDSWISH = "hardswish"
    SOFTSIGN = "softsign"
    LOGSIGMOID = "logsigmoid"


MATMULS = frozenset({Step.LINEAR, Step.MATMUL})  # the steps that make a region a model block (partition)


class Support(enum.Enum):
    """How the partitioner treats a node."""

    NONE = "none"  # runs in PyTorch
    FUSE = "fuse"  # joins the region of its neighbours
    ALONE = "alone"  # a region of its own (its operands are views the runner makes)


@dataclass(frozen=True)
class Ref:
    """An operand that is another node of the fx graph (its position)."""

    node: int


Operand = Ref | float


@dataclass(frozen=True)
class Captured:
    """One fx node as a Prism step. ``index`` is the node's position in the fx graph."""

    index: int
    step: Step
    operands: tuple[Operand, ...]
    fn: Unary | Binary | Reduce | Activation | None = None
    dim: int | None = None  # REDUCE / SOFTMAX / LOG_SOFTMAX / LOGSUMEXP: the dim (negative: from the end)
    mean: bool = False  # REDUCE: a mean rather than a sum
    scale: float | None = None  # SDPA: the logit scale (None: 1/√head_dim); ACTIVATION: its parameter

    @property
    def refs(self) -> tuple[int, ...]:
        return tuple(o.node for o in self.operands if isinstance(o, Ref))

    @property
    def computes(self) -> bool:
        """Does the step do arithmetic (a region of casts only is not worth a kernel)?"""
        return self.step is not Step.IDENTITY


@dataclass(frozen=True)
class Cost:
    """An op's arithmetic and the bytes it moves when it runs alone (eager, unfused)."""

    flops: int
    bytes: int
