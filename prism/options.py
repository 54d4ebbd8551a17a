"""The one place that checks the options a user passes to ``superoptimize``, ``tune`` and the
commands: counts, seeds, time budgets and target architectures.

Each ``check_*`` takes the value as given (any Python object) and the call it was passed to, and
returns it normalised or raises ``OptionError`` naming the option, the call and the bad value.
The ``*_arg`` factories wrap them as argparse types, so a command rejects a bad flag before
anything runs (exit status 2, one line).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

import numpy as np

from prism.codegen.arch import ARCHS
from prism.errors import OptionError
from prism.names import NameKind, name_problem

MAX_SEED = 2**63 - 2**32  # seeds get offsets added (timing, check inputs) and go to NumPy's generator


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _integer(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        return None
    return int(value)


def check_count(name: str, value: object, call: str, *, minimum: int = 1) -> int:
    """An integer option that counts something (``samples``, ``jobs``): at least ``minimum``."""
    n = _integer(value)
    if n is None or n < minimum:
        raise OptionError(f"{call}: {name}={_show(value)} must be an integer >= {minimum}")
    return n


def check_seed(value: object, call: str) -> int:
    """A random seed: an integer in [0, 2^63 - 2^32)."""
    n = _integer(value)
    if n is None or not 0 <= n < MAX_SEED:
        raise OptionError(f"{call}: seed={_show(value)} must be an integer in [0, 2^63 - 2^32)")
    return n


def check_seconds(name: str, value: object, call: str) -> float | None:
    """A time budget in seconds: None (no budget) or a finite number >= 0."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise OptionError(f"{call}: {name}={_show(value)} must be a number of seconds (or None)")
    try:
        seconds = float(value)
    except OverflowError:
        seconds = math.inf
    if not math.isfinite(seconds) or seconds < 0:
        raise OptionError(f"{call}: {name}={_show(value)} must be a finite number of seconds >= 0")
    return seconds


def check_target(value: object, call: str) -> str | None:
    """A target architecture: None (the GPU at hand) or one of ``prism.codegen.arch.ARCHS``."""
    if value is None or (isinstance(value, str) and value in ARCHS):
        return value
    raise OptionError(f"{call}: target={_show(value)} is not a known architecture; use one of {', '.join(ARCHS)}")


def _arg[T](parse: Callable[[str], object], check: Callable[[object], T], what: str) -> Callable[[str], T]:
    """An argparse type: parse the text, then check the value; a bad one is an argparse error."""

    def convert(text: str) -> T:
        try:
            value = parse(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{_show(text)} is not {what}") from None
        try:
            return check(value)
        except OptionError as e:
            raise argparse.ArgumentTypeError(str(e).split(": ", 1)[1]) from None

    return convert


def count_arg(name: str, minimum: int = 1) -> Callable[[str], int]:
    return _arg(int, lambda v: check_count(name, v, "", minimum=minimum), "an integer")


def seed_arg() -> Callable[[str], int]:
    return _arg(int, lambda v: check_seed(v, ""), "an integer")


def seconds_arg(name: str) -> Callable[[str], float]:
    def positive(v: object) -> float:
        s = check_seconds(name, v, "")
        assert s is not None
        return s

    return _arg(float, positive, "a number of seconds")


def target_arg() -> Callable[[str], str]:
    def known(v: object) -> str:
        t = check_target(v, "")
        assert t is not None
        return t

    return _arg(str, known, "an architecture")


def program_name_arg() -> Callable[[str], str]:
    """A program name (``prism.names``: it labels logs, cache entries and library folders)."""
    def valid(v: object) -> str:
        if (why := name_problem(v, NameKind.PROGRAM)) is not None:
            raise OptionError(f": {_show(v)} is not a program name ({why})")
        assert isinstance(v, str)
        return v

    return _arg(str, valid, "a program name")


def add_graph_arguments(p: argparse.ArgumentParser, what: str) -> None:
    """``--graph FILE`` (a program as ``Graph.to_json`` writes it, instead of a benchmark program; ``what``
    says what the command does with it) and ``--name`` (its program name)."""
    p.add_argument("--graph", metavar="FILE", default=None,
                   help=f"instead of a benchmark program: a program as Graph.to_json writes it (JSON), {what}")
    p.add_argument("--name", type=program_name_arg(), default="program",
                   help="with --graph: the program's name in logs and cache entries (default: program)")


def check_one_program(program: str | None, graph: str | None) -> None:
    """A command's program: a benchmark program's name or ``--graph FILE``, exactly one of them."""
    if (program is None) == (graph is None):
        raise OptionError("give a benchmark program or --graph FILE (one of them)")


def check_tuning(call: str, *, samples: object, seed: object, time_budget: object, target: object = None) -> None:
    """The options every tuning entry point shares, checked before any work starts."""
    check_count("samples", samples, call)
    check_seed(seed, call)
    check_seconds("time_budget", time_budget, call)
    check_target(target, call)


def check_program(graph: object, call: str) -> None:
    """``graph`` is a complete ``prism.Graph`` (at least one output)."""
    from prism.graph import Graph

    if not isinstance(graph, Graph):
        raise OptionError(f"{call}: expected a prism.Graph, got {type(graph).__name__} {_show(graph)}")
    graph.check_complete()
