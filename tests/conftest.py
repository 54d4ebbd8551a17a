"""Shared test configuration: GPU tests skip themselves on machines without a usable GPU."""

from __future__ import annotations

import functools
import os
from pathlib import Path

import pytest


def _search_available() -> bool:
    try:
        import egglog  # noqa: F401
        import z3  # noqa: F401
    except ImportError:
        return False
    return True


# Test modules that import the search (z3-solver, egglog) at top level. A GPU machine without those
# (the device image) does not collect them; they need no GPU and run in CI. tests/test_imports.py
# checks that no other test module needs z3 or egglog to import.
NEEDS_SEARCH = ("test_batched_screen.py", "test_dimmatch_bruteforce.py", "test_long_rows.py",
                "test_mapping_assign.py", "test_mapping_search.py", "test_parallel_mapping.py", "test_progress_threads.py",
                "test_safe_softmax.py", "test_screen_then_key.py", "test_screen_unit_sizes.py",
                "test_search_mustfind.py", "test_search_soundness.py", "test_walk_repeats.py",
                "test_walk_long.py")
collect_ignore = [] if _search_available() else list(NEEDS_SEARCH)


@functools.cache
def gpu_available() -> bool:
    try:
        import cupy

        return bool(cupy.cuda.runtime.getDeviceCount() > 0)
    except Exception:
        return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU with CuPy")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


# The searches a GPU test may read: a GPU machine without z3/egglog (the device image) has only the
# searches run on a CPU machine, in the cache folder PRISM_CACHE_DIR names when pytest starts.
_SEARCHES = Path(os.environ["PRISM_CACHE_DIR"]) / "search" if os.environ.get("PRISM_CACHE_DIR") else None


@pytest.fixture(autouse=True)
def _isolated_cache(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test gets its own PRISM_CACHE_DIR so caches never leak between tests; a GPU test's
    searches are those of the PRISM_CACHE_DIR given (linked in), its tunings its own."""
    root = tmp_path_factory.mktemp("prism-cache")
    if "gpu" in request.keywords and _SEARCHES is not None and _SEARCHES.is_dir():
        (root / "search").symlink_to(_SEARCHES.resolve(), target_is_directory=True)
    monkeypatch.setenv("PRISM_CACHE_DIR", str(root))
