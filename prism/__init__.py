"""Prism: a symbolic superoptimizer for GPU tensor programs."""

from prism.errors import PrismError
from prism.graph import Graph, Tensor, TensorInfo

__all__ = ["Graph", "PrismError", "Tensor", "TensorInfo"]
__version__ = "0.1.0"
