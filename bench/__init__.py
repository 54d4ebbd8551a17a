"""Prism's benchmark suite (docs/benchmarks.md): ``python -m bench`` or ``make bench``."""
