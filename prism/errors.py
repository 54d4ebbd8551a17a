"""Typed exceptions for everything a user of Prism can cause.

Internal invariants use ``assert``; anything reachable from user input raises one of these.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class PrismError(Exception):
    """Base class of every error Prism raises on purpose."""


class GraphError(PrismError):
    """A tensor program is ill-formed. The message names the op, the operands and their shapes."""

    def __init__(self, op: str, message: str) -> None:
        self.op = op
        super().__init__(f"{op}: {message}")


class ShapeError(GraphError):
    """Operand shapes do not fit the op."""


class DTypeError(GraphError):
    """An unsupported dtype, or operands whose dtypes differ."""


class DimError(GraphError):
    """A dimension index out of range for the operand's rank."""


class InputError(PrismError):
    """Values passed to evaluate / a compiled kernel do not match the program's inputs."""


class IRError(PrismError):
    """A μGraph (kernel graph / block graph) is ill-formed."""


class SerializationError(PrismError):
    """A JSON document is not a valid Prism document of the expected format version."""


class WorkloadError(PrismError):
    """An unknown benchmark program or configuration name."""


class SearchError(PrismError):
    """The symbolic search was asked something it cannot do."""


class VerificationError(PrismError):
    """Equivalence checking failed in a way that is not a plain 'not proven'."""


class CodegenError(PrismError):
    """A μGraph cannot be lowered to CUDA with the given sizes and target."""


class CompileError(PrismError):
    """NVRTC or nvcc rejected generated source. Carries the source, the log and the failing line."""

    def __init__(self, message: str, source: str = "", log: str = "", line: int | None = None) -> None:
        self.source = source
        self.log = log
        self.line = line
        detail = f"{message}\n{log}".rstrip()
        if line is not None and source:
            lines = source.splitlines()
            if 1 <= line <= len(lines):
                detail += f"\n  at line {line}: {lines[line - 1].strip()}"
        super().__init__(detail)


class DeviceError(PrismError):
    """No usable GPU, or the tensors passed to a kernel are on the wrong device / layout.

    ``summary``: what was done before the GPU was needed (``superoptimize`` stops after verification
    on a machine without one and says what the search found), or None."""

    def __init__(self, message: str, summary: Mapping[str, Any] | None = None) -> None:
        self.summary = summary
        super().__init__(message)


class CacheError(PrismError):
    """A cache entry could not be written."""


class LibraryError(PrismError):
    """A bad kernel-library spec or manifest, or a kernel the library does not have."""


class TuningError(PrismError):
    """Tuning found no legal size assignment, or no sample compiled, ran and passed the reference check."""


class OptionError(PrismError):
    """A bad option of ``superoptimize``, ``tune`` or a command (samples, seed, time budget, target, an
    output folder). The message names the option, the call and the bad value."""


class CaptureError(PrismError):
    """A captured PyTorch region that cannot run in Prism, or whose Prism kernel disagrees with
    PyTorch's output (raised with ``strict=True``; otherwise the region stays with PyTorch)."""
