"""Progress bars of the pipeline's stages: a count (with a total, tqdm shows the rate and an ETA) and
the stage's own counters beside it, such as ``mappings=465`` while candidates are instantiated.

A disabled bar does nothing, so callers need no ``if progress`` around every update. No tqdm
monitor thread is started: mapping workers are forked from this process, which needs it to run no
other thread.
"""

from __future__ import annotations

import time
from typing import Any


class StageBar:
    """One stage's bar: ``advance`` the count, ``note`` counters (shown at most every ``every`` s)."""

    def __init__(self, desc: str, *, total: int | None = None, unit: str = "", enabled: bool = True,
                 every: float = 0.5) -> None:
        self._bar: Any = None
        self._every = every
        self._shown = 0.0
        self._counts: dict[str, object] = {}
        if enabled:
            from tqdm import tqdm

            tqdm.monitor_interval = 0
            self._bar = tqdm(total=total, desc=desc, unit=unit, leave=False, dynamic_ncols=True)

    def advance(self, n: int = 1, **counts: object) -> None:
        """Add ``n`` to the count and update the counters."""
        if self._bar is None:
            return
        self._counts.update(counts)
        now = time.monotonic()
        if counts and now - self._shown >= self._every:
            self._bar.set_postfix(self._counts, refresh=False)
            self._shown = now
        self._bar.update(n)

    def close(self) -> None:
        if self._bar is not None:
            if self._counts:
                self._bar.set_postfix(self._counts, refresh=False)
            self._bar.close()
            self._bar = None

    def __enter__(self) -> StageBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
