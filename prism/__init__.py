"""Prism: a symbolic superoptimizer for GPU tensor programs.

    g = prism.Graph(); X = g.input((8, 4096), "float16", "X"); ...; g.output(O)
    fast = prism.superoptimize(g)        # search → verify → tune → callable on torch/CuPy tensors
    kernel = prism.library.load("rmsnorm_linear", {"n": 8, "d": 4096})   # no search needed
"""

from prism import library
from prism.errors import PrismError
from prism.graph import Graph, Tensor, TensorInfo
from prism.pipeline import search_and_verify, superoptimize

__all__ = ["Graph", "PrismError", "Tensor", "TensorInfo", "library", "search_and_verify", "superoptimize"]
__version__ = "0.1.0"
