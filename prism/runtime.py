"""Compile a LaunchPlan with CuPy (NVRTC) and run it on torch tensors or CuPy arrays.

    plan = prism.codegen.generate(kg, arch="sm_90")
    fn = prism.runtime.compile_plan(plan)          # OptimizedGraph; compiles and loads every kernel
    out = fn(X, W)                                  # torch tensors -> torch tensor (CuPy -> CuPy)
    fn(X, W, out=O)                                 # write into a preallocated output
    fn(X=X, W=W)                                    # inputs by name

* Compilation: ``cupy.RawModule`` (NVRTC; CuPy adds ``-arch`` for the current device), options
  ``codegen.arch.COMPILE_FLAGS`` and then ``PRISM_NVRTC_OPTIONS``; modules are cached in-process by a
  hash of source + options + device (CuPy also keeps compiled binaries on disk). A rejected source
  raises ``CompileError`` with the source, the NVRTC log and the failing line.
* Calls check device, dtype, shape, contiguity and 16-byte alignment (``InputError`` /
  ``DeviceError``), allocate outputs of the inputs' kind unless ``out=`` is given, and launch on the
  caller's current stream (torch: ``torch.cuda.current_stream()``; CuPy: the current CuPy stream).
* CUDA graphs: intermediate buffers (float32 from generated kernels, the program's dtype from
  predefined ops) are allocated once, at compile time, so a call under
  stream capture allocates nothing but its outputs (none with ``out=``) and never synchronises.
  The intermediates are shared by every call: a call on another stream than the previous call's
  first waits for that call (an event recorded after it; not while capturing a CUDA graph).
* Aliasing: an output (``out=``) that overlaps an input or another output raises ``InputError``
  (the kernels read inputs after outputs are written); so do torch tensors with a lazy neg or
  conj bit (their memory does not hold their values) and non-contiguous tensors. Inputs may
  share memory with each other.
* Without CuPy or a GPU, importing this module works; ``compile_plan`` raises ``DeviceError``.
"""

from __future__ import annotations

import hashlib
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from prism.codegen.arch import COMPILE_FLAGS, SMEM_DEFAULT
from prism.codegen.plan import COUNTER_DTYPE, KernelLaunch, LaunchPlan, PredefinedOp
from prism.errors import CompileError, DeviceError, InputError
from prism.ir import TensorSpec

NVRTC_OPTIONS: tuple[str, ...] = COMPILE_FLAGS
ALIGNMENT = 16

_MODULES: dict[str, Any] = {}  # hash of (source, options, device) -> cupy.RawModule


def _cupy() -> Any:
    try:
        import cupy
    except Exception as e:  # ImportError, or a CuPy that cannot find its CUDA libraries
        raise DeviceError(f"running generated kernels needs CuPy with a working CUDA install ({e})") from e
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:
        raise DeviceError(f"no usable CUDA device: {e}") from e
    if n < 1:
        raise DeviceError("no CUDA device is present")
    return cupy


def _torch() -> Any | None:
    try:
        import torch
    except ImportError:
        return None
    return torch


def _nvrtc_options() -> tuple[str, ...]:
    import os

    extra = os.environ.get("PRISM_NVRTC_OPTIONS", "")
    return NVRTC_OPTIONS + tuple(extra.split())


_LINE = re.compile(r"\((\d+)\): (?:error|catastrophic error)")


def compile_kernel(k: KernelLaunch, *, options: Sequence[str] | None = None) -> Any:
    """Load (compiling if needed) one kernel; returns the CuPy RawKernel (smem attribute set)."""
    cupy = _cupy()
    opts = tuple(options) if options is not None else _nvrtc_options()
    dev = cupy.cuda.Device()
    cc = dev.compute_capability
    key = hashlib.sha256(f"{k.source}\0{opts}\0{cc}\0{dev.id}".encode()).hexdigest()
    mod = _MODULES.get(key)
    try:
        if mod is None:
            mod = cupy.RawModule(code=k.source, options=opts)
        fn = mod.get_function(k.entry)
    except cupy.cuda.compiler.CompileException as e:  # NVRTC rejected the source: its log names the line
        log = e.get_message()
        m = _LINE.search(log)
        raise CompileError(f"NVRTC rejected kernel {k.entry} (sm_{cc})", k.source, log,
                           int(m.group(1)) if m else None) from e
    _MODULES[key] = mod
    if k.smem_bytes > SMEM_DEFAULT:
        limit = cupy.cuda.runtime.deviceGetAttribute(
            cupy.cuda.runtime.cudaDevAttrMaxSharedMemoryPerBlockOptin, dev.id)
        if k.smem_bytes > limit:
            raise DeviceError(f"kernel {k.entry} needs {k.smem_bytes} B of shared memory; device {dev.id} "
                              f"(sm_{cc}) allows {limit} per block")
        fn.max_dynamic_shared_size_bytes = k.smem_bytes
    return fn


@dataclass(frozen=True)
class _Arg:
    ptr: int
    kind: str  # "torch" | "cupy"
    obj: Any
    nbytes: int = 0


@dataclass(frozen=True)
class Span:
    """The bytes ``[start, start + nbytes)`` a call argument occupies (contiguous, so exact)."""

    name: str
    role: str  # "input" | "output"
    start: int
    nbytes: int

    def overlaps(self, other: Span) -> bool:
        return self.nbytes > 0 and other.nbytes > 0 and self.start < other.start + other.nbytes \
            and other.start < self.start + self.nbytes


def first_overlap(spans: Sequence[Span]) -> tuple[Span, Span] | None:
    """The first pair of arguments that must not share memory and do: an output with an input or
    with another output (inputs are only read, so they may share memory with each other)."""
    for i, a in enumerate(spans):
        for b in spans[i + 1:]:
            if "output" in (a.role, b.role) and a.overlaps(b):
                return a, b
    return None


class OptimizedGraph:
    """A compiled launch plan: call it with the program's inputs (torch tensors or CuPy arrays)."""

    def __init__(self, plan: LaunchPlan, kernels: dict[str, Any], buffers: dict[str, Any],
                 inputs: tuple[TensorSpec, ...], outputs: tuple[TensorSpec, ...], device: int) -> None:
        self.plan = plan
        self._kernels = kernels
        self._buffers = buffers
        self.inputs = inputs
        self.outputs = outputs
        self.device = device
        self._streams: dict[int, Any] = {}
        self._buffer_views: dict[str, Any] | None = None
        self._has_predefined = any(isinstance(st, PredefinedOp) for st in plan.steps)
        self._view_only = _view_only_transposes(plan)
        self._view_outputs = view_outputs(plan)
        self._last_call: tuple[int, Any] | None = None  # (stream pointer, event recorded after the call)

    @property
    def input_names(self) -> list[str]:
        return [t.name for t in self.inputs]

    @property
    def output_names(self) -> list[str]:
        return [t.name for t in self.outputs]

    def __repr__(self) -> str:
        ks = ", ".join(f"{k.name}{list(k.grid)}" for k in self.plan.kernels)
        return f"OptimizedGraph({self.plan.program}: {ks}; inputs {self.input_names})"

    # ------------------------------------------------------------------ argument checks

    def _bind(self, args: tuple[Any, ...], named: Mapping[str, Any]) -> dict[str, Any]:
        names = self.input_names
        if len(args) > len(names):
            raise InputError(f"{self.plan.program}: {len(args)} positional inputs, the program takes {len(names)} "
                             f"({', '.join(names)})")
        bound = dict(zip(names, args, strict=False))
        for k, v in named.items():
            if k not in names:
                raise InputError(f"{self.plan.program}: no input named {k!r}; inputs are {', '.join(names)}")
            if k in bound:
                raise InputError(f"{self.plan.program}: input {k!r} given twice")
            bound[k] = v
        missing = [n for n in names if n not in bound]
        if missing:
            raise InputError(f"{self.plan.program}: missing inputs {missing}")
        return bound

    def _check(self, spec: TensorSpec, t: Any, role: str) -> _Arg:
        torch = _torch()
        what = f"{self.plan.program}: {role} {spec.name!r}"
        if torch is not None and isinstance(t, torch.Tensor):
            if not t.is_cuda:
                raise DeviceError(f"{what} is on {t.device}; a CUDA tensor on cuda:{self.device} is needed")
            if t.device.index != self.device:
                raise DeviceError(f"{what} is on {t.device}; this graph was compiled for cuda:{self.device}")
            if t.is_neg() or t.is_conj():
                flag, fix = ("neg", "resolve_neg") if t.is_neg() else ("conj", "resolve_conj")
                raise InputError(f"{what} is a lazy {flag} view (its memory does not hold its values); "
                                 f"pass .{fix}()")
            dt = str(t.dtype).removeprefix("torch.")
            ptr, contiguous = t.data_ptr(), t.is_contiguous()
            shape = tuple(t.shape)
            kind = "torch"
            nbytes = t.numel() * t.element_size()
        else:
            cupy = _cupy()
            if not isinstance(t, cupy.ndarray):
                raise InputError(f"{what} is a {type(t).__name__}; pass a torch CUDA tensor or a CuPy array")
            if t.device.id != self.device:
                raise DeviceError(f"{what} is on device {t.device.id}; this graph was compiled for {self.device}")
            dt = str(t.dtype)
            ptr, contiguous = t.data.ptr, t.flags.c_contiguous
            shape = tuple(t.shape)
            kind = "cupy"
            nbytes = int(t.nbytes)
        if dt != spec.dtype:
            raise InputError(f"{what} has dtype {dt}; the plan expects {spec.dtype}")
        if shape != spec.shape:
            raise InputError(f"{what} has shape {list(shape)}; the plan expects {list(spec.shape)}")
        if not contiguous:
            raise InputError(f"{what} is not contiguous (row-major); pass .contiguous()")
        if ptr % ALIGNMENT:
            raise InputError(f"{what} starts at an address that is not {ALIGNMENT}-byte aligned (a view?)")
        return _Arg(ptr, kind, t, nbytes)

    def _check_aliasing(self, ins: Mapping[str, _Arg], outs: Mapping[str, _Arg]) -> None:
        spans = [Span(n, role, a.ptr, a.nbytes) for role, args in (("input", ins), ("output", outs))
                 for n, a in args.items()]
        pair = first_overlap(spans)
        if pair is not None:
            a, b = pair
            raise InputError(f"{self.plan.program}: {b.role} {b.name!r} shares memory with {a.role} {a.name!r}; "
                             "out= must not overlap an input or another output")

    def _order_after_last_call(self, stream: Any) -> None:
        """The intermediates are shared: a call on a new stream waits for the previous call's work."""
        last = self._last_call
        if last is not None and last[0] != stream.ptr and not _capturing(stream):
            stream.wait_event(last[1])

    def _record_call(self, stream: Any) -> None:
        if not self._buffers or _capturing(stream):  # nothing shared, or a graph's own ordering
            return
        if self._last_call is None:
            self._last_call = (stream.ptr, _cupy().cuda.Event(disable_timing=True))
        event = self._last_call[1]
        event.record(stream)  # one event, recorded again after every call
        self._last_call = (stream.ptr, event)

    def _stream(self, kind: str) -> Any:
        cupy = _cupy()
        if kind == "torch":
            torch = _torch()
            assert torch is not None
            handle = torch.cuda.current_stream(self.device).cuda_stream
            s = self._streams.get(handle)
            if s is None:
                with warnings.catch_warnings():  # CuPy 14 deprecates ExternalStream; it still works
                    warnings.simplefilter("ignore", DeprecationWarning)
                    s = cupy.cuda.ExternalStream(handle, self.device) if handle else cupy.cuda.Stream.null
                self._streams[handle] = s
            return s
        return cupy.cuda.get_current_stream()

    def _alloc(self, spec: TensorSpec, kind: str) -> Any:
        if kind == "torch":
            torch = _torch()
            assert torch is not None
            return torch.empty(spec.shape, dtype=getattr(torch, spec.dtype), device=f"cuda:{self.device}")
        cupy = _cupy()
        if spec.dtype == "bfloat16":
            raise InputError(f"{self.plan.program}: CuPy has no bfloat16 arrays; call with torch tensors")
        return cupy.empty(spec.shape, dtype=spec.dtype)

    # ------------------------------------------------------------------ call

    def __call__(self, *args: Any, out: Any = None, **named: Any) -> Any:
        """Run the plan. Returns the output (or a tuple of outputs); ``out`` may be one array or a sequence."""
        cupy = _cupy()
        bound = self._bind(args, named)
        ins = {s.name: self._check(s, bound[s.name], "input") for s in self.inputs}
        kind = next(iter(ins.values())).kind
        if any(a.kind != kind for a in ins.values()):
            raise InputError(f"{self.plan.program}: mix of torch tensors and CuPy arrays; pass one kind")
        views = self._output_views(ins) if out is None else {}
        if out is None:
            outs_obj = [views[s.name] if s.name in views else self._alloc(s, kind) for s in self.outputs]
        else:
            outs_obj = list(out) if isinstance(out, list | tuple) else [out]
            if len(outs_obj) != len(self.outputs):
                raise InputError(f"{self.plan.program}: out= has {len(outs_obj)} arrays for {len(self.outputs)} outputs")
        outs = {s.name: self._check(s, o, "output") for s, o in zip(self.outputs, outs_obj, strict=True)
                if s.name not in views}
        self._check_aliasing(ins, outs)
        ptrs: dict[str, int] = {n: a.ptr for n, a in (*ins.items(), *outs.items())}
        for n, b in self._buffers.items():
            ptrs[n] = b.data.ptr
        stream = self._stream(kind)
        tensors = self._torch_views(ins, outs) if kind == "torch" and self._has_predefined else {}
        with cupy.cuda.Device(self.device), stream:
            self._order_after_last_call(stream)
            for step in self.plan.steps:
                if isinstance(step, PredefinedOp) and step.output in views:
                    continue  # a view of an input, as PyTorch returns it: nothing to compute
                if isinstance(step, KernelLaunch):
                    fn = self._kernels[step.entry]
                    fn(step.grid, step.block, tuple(np.uint64(ptrs[a]) for a in step.args),
                       shared_mem=step.smem_bytes)
                elif kind == "torch":
                    _run_predefined_torch(step, tensors, as_view=step.output in self._view_only)
                else:
                    _run_predefined(step, ptrs, self._spec_of)
            self._record_call(stream)
        return outs_obj[0] if len(outs_obj) == 1 else tuple(outs_obj)

    def _output_views(self, ins: Mapping[str, _Arg]) -> dict[str, Any]:
        """The outputs that are transposes of an input (``view_outputs``), as views of it (torch tensors
        and CuPy arrays both have ``swapaxes`` and ``[...]``)."""
        return {o: ins[src].obj.swapaxes(-1, -2) if odd else ins[src].obj[...]
                for o, (src, odd) in self._view_outputs.items()}

    def _torch_views(self, ins: Mapping[str, _Arg], outs: Mapping[str, _Arg]) -> dict[str, Any]:
        """Every tensor of the plan as a torch tensor (intermediates: views of the CuPy buffers)."""
        if self._buffer_views is None:
            torch = _torch()
            assert torch is not None
            views = {}
            for spec in self.plan.buffers:
                if spec.dtype == COUNTER_DTYPE:
                    continue  # a fused kernel's arrival counters: no predefined op reads them
                v = torch.as_tensor(self._buffers[spec.name], device=f"cuda:{self.device}")
                views[spec.name] = v.view(torch.bfloat16) if spec.dtype == "bfloat16" else v
            self._buffer_views = views
        return {**self._buffer_views, **{n: a.obj for n, a in (*ins.items(), *outs.items())}}  # a fresh dict per call

    def _spec_of(self, name: str) -> tuple[tuple[int, ...], str]:
        for t in (*self.inputs, *self.outputs):
            if t.name == name:
                return t.shape, t.dtype
        spec = next(b for b in self.plan.buffers if b.name == name)
        return tuple(spec.shape), spec.dtype


def _capturing(stream: Any) -> bool:
    try:
        return bool(stream.is_capturing())
    except Exception:  # a CuPy without the query, or the null stream under a global capture
        return True


def _wrap(ptr: int, shape: tuple[int, ...], dtype: str) -> Any:
    cupy = _cupy()
    nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    mem = cupy.cuda.UnownedMemory(ptr, nbytes, None)
    return cupy.ndarray(shape, dtype=dtype, memptr=cupy.cuda.MemoryPointer(mem, 0))


def _cupy_erf(x: Any) -> Any:
    import cupyx.scipy.special  # (imported where an exact GELU runs on the CuPy fallback)

    return cupyx.scipy.special.erf(x)


def _run_predefined(op: PredefinedOp, ptrs: Mapping[str, int], spec_of: Any) -> None:
    """A library op on whole tensors (CuPy, float32 math). Allocates temporaries: not capture-safe."""
    cupy = _cupy()
    args = []
    for name in op.inputs:
        shape, dt = spec_of(name)
        if dt == "bfloat16":
            raise DeviceError(f"pre-defined op {op.name}: bfloat16 tensors are not supported by the CuPy fallback")
        args.append(_wrap(ptrs[name], shape, dt).astype(cupy.float32))
    c = op.scalar if op.scalar is not None else 0.0
    unary = {
        "exp": cupy.exp, "sqrt": cupy.sqrt, "rsqrt": lambda x: 1.0 / cupy.sqrt(x), "square": lambda x: x * x,
        "neg": lambda x: -x, "scale": lambda x: x * c, "add_scalar": lambda x: x + c,
        "silu": lambda x: x / (1.0 + cupy.exp(-x)),
        "gelu": lambda x: 0.5 * x * (1.0 + cupy.tanh(0.7978845608 * (x + 0.044715 * x**3))),
        "relu": lambda x: cupy.maximum(x, 0.0), "abs": cupy.abs, "tanh": cupy.tanh,
        "sigmoid": lambda x: 1.0 / (1.0 + cupy.exp(-x)), "log": cupy.log,
        "gelu_erf": lambda x: 0.5 * x * (1.0 + _cupy_erf(x * 0.7071067811865476)),
        "max_scalar": lambda x: cupy.maximum(x, c), "min_scalar": lambda x: cupy.minimum(x, c), "erf": _cupy_erf,
    }
    binary = {"add": cupy.add, "sub": cupy.subtract, "mul": cupy.multiply, "div": cupy.divide,
              "maximum": cupy.maximum, "minimum": cupy.minimum}
    match op.kind:
        case "unary":
            res = unary[str(op.fn)](args[0])
        case "binary":
            res = binary[str(op.fn)](args[0], args[1])
        case "reduce":
            res = (cupy.sum if op.fn == "sum" else cupy.max)(args[0], axis=op.dim, keepdims=True)
        case "matmul":
            res = cupy.matmul(args[0], args[1])
        case "transpose":
            res = cupy.swapaxes(args[0], -1, -2)
        case _:
            raise DeviceError(f"pre-defined op kind {op.kind!r} has no runtime implementation")
    shape, dt = spec_of(op.output)
    if dt == "bfloat16":
        raise DeviceError(f"pre-defined op {op.name}: bfloat16 tensors are not supported by the CuPy fallback")
    dst = _wrap(ptrs[op.output], shape, dt)
    dst[...] = res.astype(dt)


HALF = ("float16", "bfloat16")


def view_outputs(plan: LaunchPlan) -> dict[str, tuple[str, bool]]:
    """Program outputs that are a program input seen through predefined transposes and nothing else:
    output -> (the input, whether the transposes are odd). PyTorch returns such an output as a view
    of the input without a kernel, and so does a call without ``out=``."""
    inputs = {t.name for t in plan.inputs}
    base: dict[str, tuple[str, bool]] = {n: (n, False) for n in inputs}
    for st in plan.steps:
        if isinstance(st, PredefinedOp) and st.kind == "transpose" and st.inputs[0] in base:
            src, odd = base[st.inputs[0]]
            base[st.output] = (src, not odd)
    read = {a for k in plan.kernels for a in k.args} | {
        a for st in plan.steps if isinstance(st, PredefinedOp) for a in st.inputs}
    return {t.name: base[t.name] for t in plan.outputs
            if t.name in base and t.name not in inputs and t.name not in read}


def _view_only_transposes(plan: LaunchPlan) -> frozenset[str]:
    """Transposes whose every reader is a predefined op (and not a program output): they can be a
    torch view, as in PyTorch, instead of a copy (cuBLAS takes the transposed operand as it is)."""
    custom_reads = {a for k in plan.kernels for a in k.args}
    outputs = {t.name for t in plan.outputs}
    return frozenset(st.output for st in plan.steps if isinstance(st, PredefinedOp) and st.kind == "transpose"
                     and st.output not in custom_reads and st.output not in outputs)


def _run_predefined_torch(op: PredefinedOp, t: dict[str, Any], *, as_view: bool = False) -> None:
    """A predefined op with torch on the current stream (capturable in a CUDA graph), one kernel
    writing its output in place where torch has one, as PyTorch eager would run it: a matmul is the
    vendor GEMM (cuBLAS) in the operands' half dtype with float32 accumulation; elementwise ops and
    reductions compute in the dtype torch promotes their operands to. With ``as_view`` a transpose
    only rebinds its output name to a view of its input for the later predefined ops of this call."""
    torch = _torch()
    assert torch is not None
    args = [t[n] for n in op.inputs]
    if as_view:
        t[op.output] = torch.transpose(args[0], -1, -2)
        return
    dst = t[op.output]
    if op.kind == "matmul":
        half = next((a.dtype for a in args if str(a.dtype).removeprefix("torch.") in HALF), torch.float32)
        a, b = (x if x.dtype == half else x.to(half) for x in args)
        if dst.dtype == half:
            torch.matmul(a, b, out=dst)
        else:
            dst.copy_(torch.matmul(a, b))
        return
    _torch_elementwise(torch, op, args, dst)


# unary ops that are one torch function of the same name with an ``out=``
_TORCH_UNARY = frozenset({"exp", "sqrt", "rsqrt", "neg", "abs", "tanh", "sigmoid", "log", "erf"})


def _torch_elementwise(torch: Any, op: PredefinedOp, args: list[Any], dst: Any) -> None:
    c = op.scalar if op.scalar is not None else 0.0
    x = args[0]
    aten = torch.ops.aten
    match op.kind, op.fn:
        case "unary", fn if str(fn) in _TORCH_UNARY:  # torch.<fn>(x, out=dst)
            getattr(torch, str(fn))(x, out=dst)
        case "unary", "square":
            torch.mul(x, x, out=dst)
        case "unary", "scale":
            torch.mul(x, c, out=dst)
        case "unary", "add_scalar":
            torch.add(x, c, out=dst)
        case "unary", "silu":
            aten.silu.out(x, out=dst) if x.dtype == dst.dtype else dst.copy_(torch.nn.functional.silu(x))
        case "unary", "gelu":
            if x.dtype == dst.dtype:
                aten.gelu.out(x, approximate="tanh", out=dst)
            else:
                dst.copy_(torch.nn.functional.gelu(x, approximate="tanh"))
        case "unary", "relu":
            torch.clamp(x, min=0.0, out=dst)
        case "unary", "max_scalar":
            torch.clamp(x, min=c, out=dst)
        case "unary", "min_scalar":
            torch.clamp(x, max=c, out=dst)
        case "unary", "gelu_erf":
            aten.gelu.out(x, out=dst) if x.dtype == dst.dtype else dst.copy_(torch.nn.functional.gelu(x))
        case "binary", fn:
            {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div, "maximum": torch.maximum,
             "minimum": torch.minimum}[str(fn)](x, args[1], out=dst)
        case "reduce", "sum":
            torch.sum(x, dim=op.dim, keepdim=True, dtype=dst.dtype, out=dst)
        case "reduce", "max":
            torch.amax(x, dim=op.dim, keepdim=True, out=dst) if x.dtype == dst.dtype else \
                dst.copy_(torch.amax(x, dim=op.dim, keepdim=True))
        case "transpose", _:
            dst.copy_(torch.transpose(x, -1, -2))
        case _:
            raise DeviceError(f"pre-defined op {op.name}: {op.kind} {op.fn} has no runtime implementation")


def compile_plan(plan: LaunchPlan, *, inputs: Sequence[str] | None = None, outputs: Sequence[str] | None = None,
                 options: Sequence[str] | None = None) -> OptimizedGraph:
    """Compile every kernel of ``plan`` on the current CuPy device and allocate its intermediates.

    ``inputs`` / ``outputs`` (names) reorder the call signature; default: the program's order.
    """
    cupy = _cupy()
    by_name = {t.name: t for t in plan.inputs}
    out_by_name = {t.name: t for t in plan.outputs}
    try:
        ins = tuple(by_name[n] for n in inputs) if inputs is not None else plan.inputs
        outs = tuple(out_by_name[n] for n in outputs) if outputs is not None else plan.outputs
    except KeyError as e:
        raise InputError(f"{plan.program}: no tensor {e.args[0]!r} in the plan") from e
    if inputs is not None and len(ins) != len(plan.inputs):
        raise InputError(f"{plan.program}: inputs= must name all of {list(by_name)}")
    if outputs is not None and len(outs) != len(plan.outputs):
        raise InputError(f"{plan.program}: outputs= must name all of {list(out_by_name)}")
    device = cupy.cuda.Device().id
    kernels = {k.entry: compile_kernel(k, options=options) for k in plan.kernels}
    # CuPy has no bfloat16: such a buffer is raw 16-bit storage, viewed as bfloat16 by torch
    # zeroed: a fused kernel's arrival counters must start at 0 (they reset themselves after each call)
    buffers = {b.name: cupy.zeros(b.shape, dtype="uint16" if b.dtype == "bfloat16" else b.dtype) for b in plan.buffers}
    return OptimizedGraph(plan, kernels, buffers, ins, outs, device)
