"""Measurements on the GPU: environment, the two ceilings, and each system's time and error.

Every system of a configuration is checked first: its output on fresh random inputs is compared with
the float64 reference, and a system over the tolerance is reported with its error and not timed. Then
the systems that passed are timed together with :func:`prism.tune.timing.interleaved_time_us` (the
docs/benchmarks.md protocol, their graphs' replays interleaved so that each is timed at the same clocks)
in this one process.
"""

from __future__ import annotations

import datetime
import logging
import platform
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Protocol

import numpy as np

from bench.programs import SDPA_PROGRAMS, TORCH_PROGRAMS
from prism.reference import relative_error
from prism.tune.timing import Timings
from prism.workloads import Config

log = logging.getLogger(__name__)

TOLERANCE = 2e-2
BASELINES = ("eager", "compile", "max_autotune", "sdpa")
SYSTEMS = ("prism", *BASELINES)


@dataclass(frozen=True)
class Ceilings:
    copy_bytes_per_s: float
    matmul_flops_per_s: float
    mma_sync_flops_per_s: float | None = None  # the sm_80 tensor-core path (bench.mma_ceiling); None: not measured


@dataclass(frozen=True)
class SystemResult:
    """One system on one configuration: time (None when not timed), error vs reference, why not timed."""

    us: float | None
    rel_err: float | None
    error: str | None = None


def mma_ceiling() -> float | None:
    """The mma.sync calibration kernel's rate, or None (with a warning) when it cannot run (no CuPy)."""
    from bench.mma_ceiling import mma_sync_rate

    try:
        return mma_sync_rate()
    except Exception as e:  # the other ceilings and every system still get measured
        log.warning("mma.sync ceiling not measured: %s: %s", type(e).__name__, e)
        return None


class NotApplicable(Exception):
    """A baseline that does not exist for a program (SDPA for a non-attention program)."""


class Measurer(Protocol):
    def environment(self) -> dict[str, Any]: ...

    def ceilings(self) -> Ceilings: ...

    def check(self, cfg: Config, system: str, prism_fn: Callable[..., Any] | None) -> Checked: ...

    def time(self, cfg: Config, fns: dict[str, Callable[..., Any]]) -> Timings[str]: ...


@dataclass(frozen=True)
class Checked:
    """One system checked against the reference: its callable when it is to be timed (None: ``result``
    says why not), and the result so far (the relative error, or the error)."""

    fn: Callable[..., Any] | None
    result: SystemResult


def measure_systems(measurer: Measurer, cfg: Config, systems: list[str],
                    prism_fn: Callable[..., Any] | None) -> dict[str, SystemResult]:
    """Every system checked, then those that passed timed together (``Measurer.time``)."""
    checked = {s: measurer.check(cfg, s, prism_fn) for s in systems}
    fns = {s: c.fn for s, c in checked.items() if c.fn is not None}
    timings = measurer.time(cfg, fns) if fns else Timings({}, {})
    out: dict[str, SystemResult] = {}
    for s, c in checked.items():
        error = c.result.error or (f"timing: {timings.errors[s]}" if s in timings.errors else None)
        if error is not None and c.fn is not None:
            log.error("timing %s on %s failed: %s", s, cfg.id, error)
        out[s] = replace(c.result, us=timings.us.get(s), error=error)
    return out


def _run(cmd: list[str]) -> str | None:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=True).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


class TorchMeasurer:
    """The real thing: torch on the current CUDA device."""

    def __init__(self, *, seed: int = 0) -> None:
        from prism.errors import DeviceError

        try:
            import torch
            import torch._dynamo
        except ImportError as e:
            raise DeviceError("bench needs PyTorch with CUDA (pip install 'prism[gpu]')") from e
        if not torch.cuda.is_available():
            raise DeviceError("bench needs an NVIDIA GPU (torch.cuda.is_available() is False)")
        for knob in ("cache_size_limit", "recompile_limit"):  # renamed across torch versions
            if hasattr(torch._dynamo.config, knob):
                setattr(torch._dynamo.config, knob, max(64, getattr(torch._dynamo.config, knob)))
        self.torch = torch
        self.seed = seed
        self._compiled: dict[tuple[str, str], Callable[..., Any]] = {}

    # ---------------------------------------------------------------- environment and ceilings
    def environment(self) -> dict[str, Any]:
        torch = self.torch
        env: dict[str, Any] = {
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "gpu": torch.cuda.get_device_name(),
            "driver": _run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]),
            "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "python": platform.python_version(),
            "l2_bytes": int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0)) or None,
        }
        try:
            import cupy

            env["cupy"] = cupy.__version__
            env["cuda_runtime"] = cupy.cuda.runtime.runtimeGetVersion()
        except Exception:  # cupy missing or broken: not needed for the baselines
            env["cupy"] = None
        try:
            import triton

            env["triton"] = triton.__version__
        except ImportError:
            env["triton"] = None
        return env

    def ceilings(self) -> Ceilings:
        from prism.tune.timing import copy_bandwidth, matmul_rate

        return Ceilings(copy_bandwidth(), matmul_rate(), mma_ceiling())

    # ---------------------------------------------------------------- systems
    def _system_fn(self, cfg: Config, system: str, prism_fn: Callable[..., Any] | None) -> Callable[..., Any]:
        if system == "prism":
            if prism_fn is None:
                raise ValueError("no Prism kernel for this configuration")
            return prism_fn
        if system == "sdpa":
            if cfg.program not in SDPA_PROGRAMS:
                raise NotApplicable(f"{cfg.program} is not attention")
            return SDPA_PROGRAMS[cfg.program]
        base = TORCH_PROGRAMS[cfg.program]
        if system == "eager":
            return base
        key = (cfg.id, system)
        if key not in self._compiled:
            mode = {"compile": None, "max_autotune": "max-autotune-no-cudagraphs"}[system]
            self._compiled[key] = self.torch.compile(base, mode=mode, dynamic=False)
        return self._compiled[key]

    def _inputs(self, cfg: Config, values: dict[str, np.ndarray]) -> list[Any]:
        torch = self.torch
        dt = getattr(torch, cfg.dtype)
        return [torch.from_numpy(values[t.name]).to(device="cuda", dtype=dt).contiguous() for t in cfg.build().inputs]

    def _copy(self, cfg: Config, i: int) -> list[Any]:
        """The i-th timing copy of the inputs, drawn on the GPU: N(0,1)·scale in the config's dtype."""
        torch = self.torch
        gen = torch.Generator(device="cuda").manual_seed(1000 + i)
        dt = getattr(torch, cfg.dtype)
        return [
            (torch.randn(t.shape, device="cuda", generator=gen, dtype=torch.float32) * cfg.scales.get(t.name, 1.0)).to(dt)
            for t in cfg.build().inputs
        ]

    def check(self, cfg: Config, system: str, prism_fn: Callable[..., Any] | None) -> Checked:
        graph = cfg.build()
        try:
            fn = self._system_fn(cfg, system, prism_fn)
        except NotApplicable as e:
            return Checked(None, SystemResult(None, None, f"not applicable: {e}"))
        try:
            values = cfg.random_inputs(self.seed, graph)
            ref = graph.evaluate(values)[graph.outputs[0].name]
            out = fn(*self._inputs(cfg, values))
            if isinstance(out, dict):
                out = out[graph.outputs[0].name]
            elif isinstance(out, list | tuple):
                out = out[0]
            self.torch.cuda.synchronize()
            err = relative_error(out.double().cpu().numpy(), ref)
        except Exception as e:  # a broken system is a result, not a crash of the suite
            log.error("%s on %s failed: %s", system, cfg.id, e)
            return Checked(None, SystemResult(None, None, f"{type(e).__name__}: {e}"))
        if not err < TOLERANCE:
            log.error("%s on %s: relative error %.3g over %.0e: not timed", system, cfg.id, err, TOLERANCE)
            return Checked(None, SystemResult(None, err, f"relative error {err:.3g} over {TOLERANCE:.0e}"))
        return Checked(fn, SystemResult(None, err))

    def time(self, cfg: Config, fns: dict[str, Callable[..., Any]]) -> Timings[str]:
        from prism.tune.timing import Timed, interleaved_time_us

        return interleaved_time_us({s: Timed(fn, lambda i: self._copy(cfg, i)) for s, fn in fns.items()})
