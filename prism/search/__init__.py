"""Symbolic search (paper §2–§3.4): sGraph generation, dimension matching, expression-guided pruning,
mapping instantiation with symmetry breaking, and canonical forms of kernel graphs.

``SearchConfig`` and the canonical forms import without z3 (a GPU machine reads search results from
the cache and needs them); mapping instantiation loads z3 on first use."""

from __future__ import annotations

import importlib
from typing import Any

from .canonical import canonical_form, canonical_key, structure_key
from .config import SearchConfig
from .search import SearchResult, search
from .sgraph import SGraph

_LAZY = {"MappingResult", "instantiate_mappings"}  # prism.search.mapping needs z3


def __getattr__(name: str) -> Any:  # PEP 562: mapping instantiation loads z3 on first use
    if name in _LAZY:
        return getattr(importlib.import_module(".mapping", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "MappingResult",
    "SGraph",
    "SearchConfig",
    "SearchResult",
    "canonical_form",
    "canonical_key",
    "instantiate_mappings",
    "search",
    "structure_key",
]
