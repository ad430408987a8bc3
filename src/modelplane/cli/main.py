"""Entry point of the `modelplane` command: one sub-command per verb (cli.md)."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import Protocol

from modelplane.cli.inputs import Exit

# Each verb lives in its own module exposing `register(subparsers)`; the parser it adds
# sets `func` (args -> exit code) as a default.
VERB_MODULES: tuple[str, ...] = (
    "modelplane.cli.validate",
    "modelplane.cli.schedule",
    "modelplane.cli.render",
    "modelplane.cli.crds",
    "modelplane.cli.package",
    "modelplane.cli.function",
)


class _Verb(Protocol):
    def __call__(self, args: argparse.Namespace) -> int: ...


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every verb registered."""
    parser = argparse.ArgumentParser(
        prog="modelplane",
        description="Schedule and compose AI model serving across a fleet of GPU clusters.",
    )
    subparsers = parser.add_subparsers(dest="verb", metavar="VERB")
    for name in VERB_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit code (0 ok, 1 invalid input, 2 usage error)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    func: _Verb | None = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return func(args)
    except Exit as stop:
        return stop.code
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
