"""The captured graph around its regions, compiled by TorchInductor: what is not a region (the KV-cache
``cat``, ``neg``, layout copies) is fused as ``torch.compile`` fuses it, and each region is one opaque
call of the custom op ``prism::region`` (its runner: a Prism kernel, or the region's own Inductor
kernels when those are faster).

Inductor sees a region through its fake implementation: the region's PyTorch ops run on fake tensors,
outputs made contiguous, as the runner's real outputs are (``contiguous`` below), so the layouts that
Inductor plans around match what runs. Runners are found by an integer key in ``RUNNERS`` (an op's
schema takes tensors and numbers, not Python objects). The table holds them weakly: the callable the
backend returns keeps its runners alive (``Holding``), so a graph Dynamo drops frees its regions'
kernels and GraphModules. torch is imported only inside these functions.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from prism.capture.aten import VIEWS, op_name
from prism.errors import CaptureError

log = logging.getLogger(__name__)
# key -> the region's runner (its ``eager`` ops run on fake tensors for Inductor); weak: see Holding
RUNNERS: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()
_KEYS = itertools.count()
_OP: list[Any] = []  # the registered custom op, once per process


def region_op() -> Any:
    """``torch.ops.prism.region`` (registered on first use): ``(key, inputs) -> outputs``."""
    if _OP:
        return _OP[0]
    import torch  # optional dependency: only the backend needs torch

    # the schema is spelled out: this module's annotations are strings (``from __future__``)
    @torch.library.custom_op("prism::region", mutates_args=(), schema="(int key, Tensor[] inputs) -> Tensor[]")
    def region(key: int, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
        return [contiguous(t) for t in _live(key)(*inputs)]

    @region.register_fake
    def _(key: int, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
        return [torch.empty_like(t, memory_format=torch.contiguous_format) for t in _live(key).eager(*inputs)]

    _OP.append(torch.ops.prism.region.default)
    return _OP[0]


def register(runner: Any) -> int:
    """A new key for ``runner`` (a ``RegionRunner``: called by the op, its ``eager`` ops by the fake)."""
    key = next(_KEYS)
    RUNNERS[key] = runner
    return key


def _live(key: int) -> Any:
    runner = RUNNERS.get(key)
    if runner is None:
        raise CaptureError(f"prism::region {key}: its runner is gone (the compiled graph that held it was freed)")
    return runner


class Holding:
    """A compiled graph that keeps its regions' runners alive; otherwise it is the graph itself
    (attributes such as Inductor's calling convention pass through)."""

    def __init__(self, fn: Callable[..., Any], keep: Sequence[Any]) -> None:
        self.fn, self.keep = fn, list(keep)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:  # only for names Holding itself lacks
        if "fn" not in self.__dict__:
            raise AttributeError(name)
        return getattr(self.__dict__["fn"], name)


def contiguous(t: Any) -> Any:
    return t if t.is_contiguous() else t.contiguous()


def wants_inductor(example_inputs: Sequence[Any]) -> bool:
    """Inductor compiles the graph for inference only: not when autograd must see through it."""
    import torch  # optional dependency: only the backend needs torch

    return not (torch.is_grad_enabled() and any(getattr(t, "requires_grad", False) for t in example_inputs))


def first_run(fn: Callable[..., Any], nodes: Sequence[Any], example_inputs: Sequence[Any]) -> list[Any] | None:
    """Run ``fn`` (the graph with its runners) on the example inputs, so that each region decides between
    its Prism kernel and PyTorch at their shapes before Inductor compiles the graph; the arguments it
    ran on, or None (nothing run) when that is not safe: a node writes in place (running twice would
    apply it twice), an example input is a fake tensor (no values to run on) or a symbolic size
    without a concrete hint."""
    import torch  # optional dependency: only the backend needs torch
    from torch._subclasses.fake_tensor import is_fake
    from torch.fx.experimental.symbolic_shapes import size_hint

    if any(writes_in_place(n) for n in nodes) or any(isinstance(t, torch.Tensor) and is_fake(t) for t in example_inputs):
        return None
    try:  # Dynamo passes a dynamic size as a SymInt: its hint is the value seen
        args = [size_hint(a) if isinstance(a, torch.SymInt) else a for a in example_inputs]
    except Exception:  # no hint (a data-dependent size): nothing to run on
        return None
    with isolated():
        fn(*args)
    return args


@contextlib.contextmanager
def isolated() -> Iterator[None]:
    """Running compiled code from inside Dynamo's compile of a frame: no autograd, and outside Dynamo's
    tracing context (a region that Inductor compiles here must not add symbols to the frame's shapes)."""
    import torch  # optional dependency: only the backend needs torch
    from torch._guards import compile_context, tracing

    with torch.no_grad(), tracing(None), compile_context(None):
        yield


def on_gpu(args: Sequence[Any]) -> bool:
    import torch  # optional dependency: only the backend needs torch

    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    return bool(tensors) and all(t.is_cuda for t in tensors)


def whole_times(with_prism: Callable[..., Any], plain: Callable[..., Any],
                args: Sequence[Any]) -> tuple[float, float] | None:
    """(the graph with Prism's regions, Inductor's graph alone) µs per call by CUDA-graph replay of
    ``args`` (on a GPU), as the tuner times, the two graphs' replays interleaved (``interleaved_time_us``);
    None when either cannot be timed so."""
    from prism.tune.timing import Timed, interleaved_time_us

    try:
        with isolated():
            got = interleaved_time_us({"prism": Timed(with_prism, lambda i: args), "plain": Timed(plain, lambda i: args)})
    except Exception as e:  # no GPU timing at all: the graph with Prism's regions stays
        log.info("prism: the compiled graphs were not timed (%s: %s)", type(e).__name__, e)
        return None
    if got.errors:  # not capturable: the graph with Prism's regions stays
        log.info("prism: the compiled graphs were not timed (%s)", got.failures())
        return None
    return got.us["prism"], got.us["plain"]


# Python's in-place operators (``x &= y`` traces to ``operator.iand``); ``operator.and_``, ``or_``
# and ``not_`` end in "_" only to avoid keywords: a transformers model's mask has them
_OPERATOR_IN_PLACE = frozenset({"setitem", "iadd", "isub", "imul", "itruediv", "ifloordiv", "imod", "ipow",
                                "imatmul", "iand", "ior", "ixor", "ilshift", "irshift"})


def external_write(node: Any) -> str | None:
    """What an in-place write of ``node`` reaches outside the graph: the name of the graph input or
    attribute (a parameter, a buffer, a cache tensor) it writes, through views; None where it writes
    only a tensor the graph made."""
    if not writes_in_place(node):
        return None
    target: Any = node.kwargs["out"] if "out" in node.kwargs else (node.args[0] if node.args else None)
    while getattr(target, "op", None) in ("call_function", "call_method") and op_name(target) in VIEWS:
        target = target.args[0] if target.args else None
    return str(target.target) if getattr(target, "op", None) in ("placeholder", "get_attr") else None


def writes_in_place(node: Any) -> bool:
    """Whether an FX node writes a tensor in place (``add_``, ``x[i] = v``, ``out=``, ``inplace=True``)."""
    if node.op not in ("call_function", "call_method"):
        return False
    if node.op == "call_function" and getattr(node.target, "__module__", None) in ("_operator", "operator"):
        return node.target.__name__ in _OPERATOR_IN_PLACE
    name = node.target if node.op == "call_method" else getattr(node.target, "__name__", "")
    trailing = name.endswith("_") and not name.endswith("__")
    return trailing or name in ("setitem", "__setitem__") or bool(node.kwargs.get("inplace")) or "out" in node.kwargs


def inductor(gm: Any, example_inputs: Sequence[Any]) -> Callable[..., Any]:
    """Inductor's compiled ``gm`` (the contract of ``torch.compile``'s default backend)."""
    from torch._inductor.compile_fx import compile_fx  # optional dependency: only the backend needs torch

    return compile_fx(gm, list(example_inputs))  # type: ignore[no-any-return]
