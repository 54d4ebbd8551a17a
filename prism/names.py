"""The one place that says which names Prism accepts, and how a name becomes a C identifier.

Every way a program enters (the Graph API, ``KernelGraph.from_json`` for cache entries and the
library manifest, the library spec) checks its names here, and code generation mangles every name
it writes into CUDA with ``c_ident``, so no name can inject source text, escape a folder or clash
with a C/CUDA keyword, a built-in or one of the generator's own identifiers.

* A **tensor**, **kernel** or **size** name is a Python identifier (letters of any script, digits,
  ``_``; not starting with a digit) of at most ``MAX_NAME`` characters.
* A **program** name (it labels generated code, logs, cache entries and library folders) may also
  contain ``.`` and ``-`` after its first character (``swiglu``, ``gqa.p0``), never ``..``.

Nothing else: no spaces, newlines, quotes, slashes or backslashes, so a name is safe in a ``//``
comment, a file name and a log line.
"""

from __future__ import annotations

import enum

MAX_NAME = 100


class NameKind(enum.Enum):
    TENSOR = "tensor"
    KERNEL = "kernel"
    SIZE = "size"
    PROGRAM = "program"


def name_problem(name: object, kind: NameKind) -> str | None:
    """Why ``name`` is not a valid name of this kind (None when it is)."""
    if not isinstance(name, str):
        return f"a {kind.value} name must be a string, not {type(name).__name__}"
    if not name:
        return f"a {kind.value} name must not be empty"
    if len(name) > MAX_NAME:
        return f"a {kind.value} name has at most {MAX_NAME} characters (this one has {len(name)})"
    if kind is not NameKind.PROGRAM:
        if not name.isidentifier():
            return f"a {kind.value} name must be an identifier (letters, digits, '_'; not starting with a digit)"
        return None
    head, rest = name[0], name[1:].replace(".", "").replace("-", "")
    if not (head.isidentifier() or head.isdigit()) or not all(c.isidentifier() or c.isdigit() for c in rest):
        return "a program name has letters, digits, '_', and after the first character '.' and '-'"
    if ".." in name:
        return "a program name must not contain '..'"
    return None


def show(name: object) -> str:
    """A bad name for an error message: its repr, shortened (control characters stay escaped)."""
    text = repr(name)
    return text if len(text) <= 60 else text[:57] + "..."


# ---------------------------------------------------------------------------------- mangling


def c_ident(name: str) -> str:
    """``name`` as the tail of a C identifier: ASCII letters and digits stay, ``_`` becomes ``__``
    and any other character ``_x<hex>_``. Injective, and no image is followed by ``_`` and a
    character other than ``_`` or ``x`` (so suffixes like ``_ring`` or ``_2`` never make two names
    meet). Callers put a fixed prefix in front (``t_``, ``s_``), so the result is never a keyword,
    a built-in or a generator local."""
    out: list[str] = []
    for c in name:
        if c.isascii() and c.isalnum():
            out.append(c)
        elif c == "_":
            out.append("__")
        else:
            out.append(f"_x{ord(c):x}_")
    return "".join(out)


def c_label(text: str) -> str:
    """``text`` squeezed to ASCII letters, digits and ``_`` (for readable symbol names that a hash
    makes unique; not injective)."""
    return "".join(c if c.isascii() and c.isalnum() else "_" for c in text)
