"""PyTorch capture: run the supported parts of PyTorch functions and modules as Prism kernels.

    fast = prism.compile(model, example_inputs=(x,))   # or torch.compile(model, backend="prism")

Stages (one module each): ``aten`` (fx node → Prism step), ``partition`` (the largest convex regions
of supported nodes), ``build`` (a region as a Graph at a call's shapes), ``runner`` (superoptimize,
check against PyTorch, launch; PyTorch — Inductor or eager — when anything fails or is faster),
``backend`` (the torch.compile backend and ``compile``), ``report`` (what was captured). Design
notes: docs/capture.md. torch is imported only when a capture runs.
"""

from prism.capture.backend import BACKEND_NAME, Compiled, compile, prism_backend, register
from prism.capture.report import CaptureReport
from prism.capture.runner import CaptureOptions, CaptureWarning, Fallback

__all__ = ["BACKEND_NAME", "CaptureOptions", "CaptureReport", "CaptureWarning", "Compiled", "Fallback", "compile",
           "prism_backend", "register"]
