"""Bounded memo tables: a dict that starts afresh once it holds ``limit`` entries (the search's and the
screen's memos, whose keys recur within one program's candidates and rarely across programs)."""

from __future__ import annotations


def remember[K, V](table: dict[K, V], limit: int, key: K, value: V) -> V:
    """``value``, stored under ``key`` in a memo ``table`` that starts afresh at ``limit`` entries."""
    if len(table) >= limit:
        table.clear()
    table[key] = value
    return value
