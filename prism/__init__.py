"""Prism: a symbolic superoptimizer for GPU tensor programs.

    g = prism.Graph(); X = g.input((8, 4096), "float16", "X"); ...; g.output(O)
    fast = prism.superoptimize(g)        # search → verify → tune → callable on torch/CuPy tensors
    kernel = prism.library.load("rmsnorm_linear", {"n": 8, "d": 4096})   # no search needed
    fast = prism.compile(model, example_inputs=(x,))   # PyTorch code: its supported parts in Prism
"""

from prism import library
from prism.capture import compile
from prism.errors import PrismError
from prism.graph import Graph, Tensor, TensorInfo
from prism.pipeline import search_and_verify, superoptimize

__all__ = ["Graph", "PrismError", "Tensor", "TensorInfo", "compile", "library", "search_and_verify", "superoptimize"]
__version__ = "0.1.0"
