"""The JSON cache: hits and misses, atomic writes, corrupt and stale entries rebuilt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prism.cache import JsonCache
from prism.errors import CacheError


def _decode(p: object) -> dict[str, int]:
    assert isinstance(p, dict) and isinstance(p["n"], int)
    return p


def test_hit_and_miss(tmp_path: Path) -> None:
    c = JsonCache("t", schema=1, root=tmp_path)
    assert c.get("k1", _decode) is None
    c.put("k1", {"n": 3})
    assert c.get("k1", _decode) == {"n": 3}
    assert c.get("k2", _decode) is None
    assert not list((tmp_path / "t").glob(".*.tmp")), "no temp files left behind"


@pytest.mark.parametrize(
    "corrupt",
    [
        lambda text: text[: len(text) // 2],  # truncated
        lambda text: text.replace('"n": 3', '"n": 4'),  # edited payload: checksum mismatch
        lambda text: text.replace('"schema": 1', '"schema": 0'),  # stale schema
        lambda text: text.replace('"key": "k1"', '"key": "other"'),  # another key's entry
        lambda text: "[]",
    ],
)
def test_corrupt_entry_is_rebuilt(tmp_path: Path, corrupt: object) -> None:
    c = JsonCache("t", schema=1, root=tmp_path)
    path = c.put("k1", {"n": 3})
    path.write_text(corrupt(path.read_text()))  # type: ignore[operator]
    assert c.get("k1", _decode) is None
    assert not path.exists()
    c.put("k1", {"n": 3})
    assert c.get("k1", _decode) == {"n": 3}


def test_decoder_rejection_is_a_miss(tmp_path: Path) -> None:
    c = JsonCache("t", schema=1, root=tmp_path)
    c.put("k1", {"n": "three"})
    assert c.get("k1", _decode) is None


def test_bad_key(tmp_path: Path) -> None:
    with pytest.raises(CacheError, match="cache key"):
        JsonCache("t", 1, tmp_path).put("../escape", {})


def test_default_root_from_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRISM_CACHE_DIR", str(tmp_path / "cdir"))
    c = JsonCache("ns", 2)
    c.put("a", {"n": 1})
    assert json.loads((tmp_path / "cdir" / "ns" / "a.json").read_text())["payload"] == {"n": 1}
