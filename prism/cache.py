"""A small on-disk JSON cache: atomic writes, checksummed entries, corrupt or stale entries rebuilt.

An entry is ``<root>/<namespace>/<key>.json`` holding ``{"schema", "key", "checksum", "payload"}``.
On read, anything unexpected (unparsable JSON, other schema, other key, checksum mismatch, a
payload the caller's ``decode`` rejects) is logged, deleted and reported as a miss: the caller
recomputes and writes a fresh entry. Nothing read from disk is trusted unchecked.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from prism.errors import CacheError
from prism.settings import settings

log = logging.getLogger(__name__)
T = TypeVar("T")


def _checksum(payload: Any) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


class JsonCache:
    def __init__(self, namespace: str, schema: int, root: Path | None = None) -> None:
        self.root = (root or settings().cache_dir) / namespace
        self.schema = schema
        self.namespace = namespace

    def path(self, key: str) -> Path:
        if not key or any(c not in "0123456789abcdefghijklmnopqrstuvwxyz_-." for c in key):
            raise CacheError(f"cache key {key!r} must be lower-case letters, digits, '_', '-', '.'")
        return self.root / f"{key}.json"

    def get(self, key: str, decode: Callable[[Any], T]) -> T | None:
        """The decoded payload, or None on a miss (a bad entry is deleted and counts as a miss)."""
        path = self.path(key)
        try:
            if not path.is_file():
                return None
            doc = json.loads(path.read_text())
            if not isinstance(doc, dict):
                raise ValueError("not a JSON object")
            if doc.get("schema") != self.schema:
                raise ValueError(f"schema {doc.get('schema')!r}, expected {self.schema}")
            if doc.get("key") != key:
                raise ValueError(f"entry is for key {doc.get('key')!r}")
            if doc.get("checksum") != _checksum(doc.get("payload")):
                raise ValueError("checksum mismatch")
            return decode(doc["payload"])
        except Exception as e:  # any defect: rebuild, never trust
            self.evict(key, f"corrupt or stale ({e})")
            return None

    def evict(self, key: str, reason: str) -> None:
        """Delete an entry that decoded but proved wrong (or did not decode), so it is rebuilt;
        an entry that cannot be deleted (a read-only cache) is left, with a warning."""
        path = self.path(key)
        log.warning("cache %s: entry %s is %s; rebuilding it", self.namespace, path, reason)
        try:
            path.unlink(missing_ok=True)
        except OSError as e:
            log.warning("cache %s: cannot delete %s (%s)", self.namespace, path, e)

    def put_or_warn(self, key: str, payload: Any) -> Path | None:
        """``put``, but a cache that cannot be written (read-only, not a folder) is a warning, not an
        error: what was computed is still returned to the caller."""
        try:
            return self.put(key, payload)
        except CacheError as e:
            log.warning("%s; the result is not cached (check PRISM_CACHE_DIR)", e)
            return None

    def put(self, key: str, payload: Any) -> Path:
        """Write atomically (temp file in the same directory, then rename)."""
        path = self.path(key)
        doc = {"schema": self.schema, "key": key, "checksum": _checksum(payload), "payload": payload}
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{key}.", suffix=".tmp")
            with os.fdopen(fd, "w") as f:
                json.dump(doc, f, sort_keys=True)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except OSError as e:
            raise CacheError(f"cannot write cache entry {path}: {e}") from e
        return path
