"""``python -m prism``: one subcommand per stage. Each lives in its stage's module, which provides
``add_arguments(parser)`` and ``run(args) -> int``; this file only wires them up."""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence
from typing import NoReturn

from prism.errors import PrismError

# name -> (module, one-line help). Modules must import without z3/egglog/torch/cupy at top level.
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("prism.demo", "build the benchmark programs, evaluate them, run a fused plan (the README's first command)"),
    "search": ("prism.search.cli", "symbolic search (+ mapping instantiation and verification) of a benchmark "
               "program, or of any program written by Graph.to_json (--graph)"),
    "emit": ("prism.codegen.cli", "write generated CUDA sources and launch plans for a benchmark configuration"),
    "optimize": ("prism.tune.cli", "superoptimize a benchmark configuration end to end, or any program (--graph)"),
    "library": ("prism.library", "build or inspect the kernel library under prism/kernels/"),
}


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (exit status 2), naming the bad flag or value."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="prism", description="Prism: a symbolic superoptimizer for GPU tensor programs.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_) in COMMANDS.items():
        p = sub.add_parser(name, help=help_, description=help_)
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as e:  # e.g. z3/egglog absent on a GPU-only machine
            p.set_defaults(_unavailable=f"'{name}' is not available here: module {e.name!r} is not installed")
            continue
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    if not args.verbose:  # the prover's own progress is noise at INFO; stage progress has bars
        logging.getLogger("egglog").setLevel(logging.WARNING)
    if args.command is None:
        parser.print_help()
        return 0
    if getattr(args, "_unavailable", None):
        print(f"prism: {args._unavailable}", file=sys.stderr)
        return 2
    try:
        return int(args._run(args))
    except PrismError as e:
        print(f"prism {args.command}: error: {e}", file=sys.stderr)
        return 1
    except OSError as e:  # a file or folder the command was told to use cannot be read or written
        where = f" {e.filename!r}" if e.filename else ""
        print(f"prism {args.command}: error: {e.strerror or e}{where}", file=sys.stderr)
        return 1
