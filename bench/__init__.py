"""Prism's benchmark suite (BENCHMARKS.md): ``python -m bench`` or ``make bench``."""
