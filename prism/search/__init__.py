"""Symbolic search (paper §2–§3.4): sGraph generation, dimension matching, expression-guided pruning,
mapping instantiation with symmetry breaking, and canonical forms of kernel graphs."""

from __future__ import annotations

from .canonical import canonical_form, canonical_key, structure_key
from .config import SearchConfig
from .mapping import MappingResult, instantiate_mappings
from .search import SearchResult, search
from .sgraph import SGraph

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
