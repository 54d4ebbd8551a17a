"""Equivalence verification of candidate μGraphs (paper §4): terms, axioms, bounded egglog checks.

``import prism.verify`` is cheap: egglog is imported only when a check runs.
"""

from prism.verify.check import Budget, Verdict, check_equivalent, verify_all

__all__ = ["Budget", "Verdict", "check_equivalent", "verify_all"]
