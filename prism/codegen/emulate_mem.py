"""Memory of the lowered-form emulator: shared memory with bounds, alignment, ownership and
cp.async checks, and global tensors with bounds and alignment checks.

Shared memory is byte-addressed: an element lives at its first byte (its value there, float64),
and every byte records the tile that last wrote it. An access is checked against what the GPU
requires or the generator promises:

* within the tile (one copy of it: a ring stage or a partial copy) and within the kernel's dynamic
  shared memory;
* aligned to its width (a 16-byte ldmatrix row or cp.async, an 8-byte ``st_f2``, ...);
* a read finds bytes its own tile wrote (not another live tile's, not uninitialised ones) and no
  cp.async in flight on them (the copy's group not yet waited for).
"""

from __future__ import annotations

import numpy as np

from prism.codegen.lowered import Buf
from prism.errors import CodegenError

type Ints = np.ndarray  # int64 arrays of element offsets / indices


class EmulationError(CodegenError):
    """The lowered kernel does something the GPU would fault on or that reads a wrong value."""


class Smem:
    """The dynamic shared memory of one thread block."""

    def __init__(self, nbytes: int, bufs: dict[str, Buf], where: str) -> None:
        self.nbytes = nbytes
        self.where = where
        self.ids = {name: n for n, name in enumerate(sorted(bufs))}
        self.names = {n: name for name, n in self.ids.items()}
        self.val = np.full(nbytes, np.nan)
        self.owner = np.full(nbytes, -1, dtype=np.int32)
        self.pending = np.zeros(nbytes, dtype=np.int32)  # cp.async copies in flight per byte
        self.groups: list[list[Ints]] = []  # committed cp.async groups (byte addresses)
        self.open: list[Ints] = []  # copies issued since the last commit

    def fail(self, msg: str) -> EmulationError:
        return EmulationError(f"{self.where}: {msg}")

    def _addresses(self, buf: Buf, copy: Ints | int, off: Ints, vec: int, what: str) -> Ints:
        """Byte address of each access's first element, after the bounds and alignment checks."""
        off = np.asarray(off, dtype=np.int64)
        copy = np.broadcast_to(np.asarray(copy, dtype=np.int64), off.shape)
        bad = (off < 0) | (off + vec > buf.span) | (copy < 0) | (copy >= buf.copies)
        if bad.any():
            k = int(np.argmax(bad))
            raise self.fail(f"{what}: element {int(off.flat[k])} (+{vec}) of copy {int(copy.flat[k])} is outside "
                            f"tile {buf.name} ({buf.span} elements, {buf.copies} copies)")
        addr = buf.offset + (copy * buf.copy_elems + off) * buf.esize
        width = vec * buf.esize
        if width > 1 and (mis := addr % width != 0).any():
            raise self.fail(f"{what}: a {width}-byte access to {buf.name} at byte {int(addr[mis][0])} is not "
                            f"{width}-byte aligned")
        if (addr + width > self.nbytes).any():
            raise self.fail(f"{what}: {buf.name} reaches past the {self.nbytes} bytes of dynamic shared memory")
        return addr

    def _bytes(self, addr: Ints, width: int) -> Ints:
        return (addr.reshape(-1, 1) + np.arange(width)).ravel()

    def write(self, buf: Buf, copy: Ints | int, off: Ints, vals: np.ndarray, what: str, *,
              asynchronous: bool = False) -> None:
        """Write ``vals`` (one row of ``vec`` elements per access) at element offsets ``off``."""
        vals = np.asarray(vals, dtype=np.float64).reshape((*np.shape(off), -1))
        vec = vals.shape[-1]
        addr = self._addresses(buf, copy, off, vec, what).ravel()
        byts = self._bytes(addr, vec * buf.esize)
        self.owner[byts] = self.ids[buf.name]
        elem = (addr.reshape(-1, 1) + np.arange(vec) * buf.esize).ravel()
        self.val[elem] = vals.reshape(-1)
        if asynchronous:
            self.pending[byts] += 1
            self.open.append(byts)

    def read(self, buf: Buf, copy: Ints | int, off: Ints, what: str, vec: int = 1) -> np.ndarray:
        """Values at element offsets ``off`` (shape of ``off``, plus a last axis of ``vec`` if > 1)."""
        shape = np.shape(off)
        addr = self._addresses(buf, copy, off, vec, what).ravel()
        byts = self._bytes(addr, vec * buf.esize)
        if (self.pending[byts] > 0).any():
            raise self.fail(f"{what}: reads {buf.name} while a cp.async into it is in flight (no wait)")
        own = self.owner[byts]
        if (wrong := own != self.ids[buf.name]).any():
            other = int(own[wrong][0])
            by = "never written" if other < 0 else f"last written by tile {self.names[other]}"
            raise self.fail(f"{what}: reads {buf.name} at byte {int(byts[wrong][0])}, {by} (overlapping live "
                            "tiles or a missing write)")
        elem = (addr.reshape(-1, 1) + np.arange(vec) * buf.esize).ravel()
        out = self.val[elem]
        return out.reshape(shape) if vec == 1 else out.reshape(*shape, vec)

    def commit(self) -> None:
        self.groups.append(self.open)
        self.open = []

    def wait(self, keep: int) -> None:
        """``cp.async.wait_group keep``: every committed group but the newest ``keep`` has landed."""
        if keep < 0:
            raise self.fail(f"cp.async.wait_group {keep}: a negative group count")
        done = self.groups[: max(len(self.groups) - keep, 0)]
        self.groups = self.groups[len(done):]
        for group in done:
            for byts in group:
                self.pending[byts] -= 1


def global_index(flat: np.ndarray, off: Ints, vec: int, esize: int, what: str, tensor: str) -> Ints:
    """Element offsets of ``vec``-element accesses into a global tensor: in bounds, width-aligned."""
    off = np.asarray(off, dtype=np.int64).ravel()
    if ((off < 0) | (off + vec > flat.size)).any():
        bad = off[(off < 0) | (off + vec > flat.size)][0]
        raise EmulationError(f"{what}: element {int(bad)} (+{vec}) is outside {tensor} ({flat.size} elements)")
    width = vec * esize
    if width in (4, 8, 16) and ((off * esize) % width).any():
        raise EmulationError(f"{what}: a {width}-byte access to {tensor} is not {width}-byte aligned")
    return (off.reshape(-1, 1) + np.arange(vec)).ravel()
