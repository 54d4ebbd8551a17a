"""Stage 7, tuning: legal sizes for the concrete shapes and GPU, uniform sampling across templates,
parallel compilation, profiling with one timing primitive, and a reference-checked winner.

Importable without torch, CuPy or a GPU; those are imported when a GPU backend is used.
"""

from prism.codegen.sizes import Usage, is_legal, iter_legal_sizes, legal_sizes
from prism.tune.backends import Backend, CudaBackend, InterpreterBackend
from prism.tune.sampler import Sample, sample
from prism.tune.tuner import SampleRecord, TuneResult, input_scales, random_inputs, tune

__all__ = [
    "Backend",
    "CudaBackend",
    "InterpreterBackend",
    "Sample",
    "SampleRecord",
    "TuneResult",
    "Usage",
    "input_scales",
    "is_legal",
    "iter_legal_sizes",
    "legal_sizes",
    "random_inputs",
    "sample",
    "tune",
]
