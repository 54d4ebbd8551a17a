"""Settings read from the environment, in one typed place.

PRISM_CACHE_DIR  where verified sGraphs and tuned kernels are cached (default: the user cache dir)
PRISM_JOBS       worker processes for verification / compilation (default: CPU count)
PRISM_NO_CACHE   set to 1 to neither read nor write caches
PRISM_FIRST_ROUND_ASCENT  set to 0: the tuner's first round times each template's drawn size as drawn,
                 not climbed by the static prior (``tune.draw._one_legal``; default on, timed in
                 docs/off-the-suite.md, "The tuner's first round judged a template by a size of 6 blocks")
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Settings:
    cache_dir: Path
    jobs: int
    no_cache: bool
    first_round_ascent: bool = True


def settings() -> Settings:
    """Read the environment now (tests change it between calls)."""
    cache = os.environ.get("PRISM_CACHE_DIR") or _default_cache_dir()
    jobs_text = os.environ.get("PRISM_JOBS", "")
    jobs = int(jobs_text) if jobs_text.isdigit() and int(jobs_text) > 0 else (os.cpu_count() or 1)
    ascent = os.environ.get("PRISM_FIRST_ROUND_ASCENT", "1") != "0"
    return Settings(Path(cache).expanduser(), jobs, _on("PRISM_NO_CACHE"), ascent)


def _on(name: str) -> bool:
    return os.environ.get(name, "") not in ("", "0")


def _default_cache_dir() -> str:
    try:
        import platformdirs
    except ImportError:  # a bare GPU image: fall back to the XDG convention
        return os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "prism")
    return platformdirs.user_cache_dir("prism", appauthor=False)
