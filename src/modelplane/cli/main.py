"""Entry point of the `modelplane` command: one sub-command per verb (docs/cli.md)."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import NoReturn, Protocol

from modelplane.errors import ModelplaneError

# Each verb lives in its own module exposing `register(subparsers)`; the parser it adds
# sets `func` (args -> exit code) as a default. Its one-line help is kept here, so the
# command's help and the verbs not chosen need none of the verb modules imported (their
# imports are most of a small command's time).
VERBS: dict[str, tuple[str, str]] = {
    "validate": (
        "modelplane.cli.validate",
        "check manifests against their schema and validation rules",
    ),
    "schedule": (
        "modelplane.cli.schedule",
        "place every deployment's replicas on the fleet and show why",
    ),
    "render": (
        "modelplane.cli.render",
        "reconcile the input and print every object the control plane would compose",
    ),
    "fleet": (
        "modelplane.cli.fleet",
        "show every cluster's and pool's devices, used and free, and who uses them",
    ),
    "plan": (
        "modelplane.cli.plan",
        "show what a change to the fleet or a deployment would move, place and leave free",
    ),
    "crds": ("modelplane.cli.crds", "write the CompositeResourceDefinitions of every kind"),
    "package": ("modelplane.cli.package", "write the Crossplane configuration package"),
    "function": ("modelplane.cli.function", "serve the Crossplane composition functions"),
}


class Exit(ModelplaneError):
    """Ends a verb with ``code``; what it had to say is already on stderr."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class _Verb(Protocol):
    def __call__(self, args: argparse.Namespace) -> int: ...


def verb_help(verb: str) -> str:
    """The one-line help of ``verb`` in the command's list of verbs."""
    return VERBS[verb][1]


def build_parser(chosen: str | None = None) -> argparse.ArgumentParser:
    """The argument parser: every verb registered, or only ``chosen`` in full.

    With ``chosen``, the other verbs get a parser of their name and help alone, so the
    command's help reads the same and argparse refuses what it always refused.
    """
    parser = argparse.ArgumentParser(
        prog="modelplane",
        description="Schedule and compose AI model serving across a fleet of GPU clusters.",
    )
    subparsers = parser.add_subparsers(dest="verb", metavar="VERB")
    for verb, (module, help_text) in VERBS.items():
        if chosen is None or verb == chosen:
            importlib.import_module(module).register(subparsers)
        else:
            subparsers.add_parser(verb, help=help_text)
    return parser


def chosen_verb(argv: Sequence[str]) -> str:
    """The verb argparse will dispatch ``argv`` to ("" when none is named).

    The command's own parser has no option taking a value, so the verb is the first
    argument that is not an option ("-" alone is one, and anything after "--").
    """
    after_dashes = False
    for arg in argv:
        if after_dashes or arg == "-" or not arg.startswith("-"):
            return arg if arg in VERBS else ""
        after_dashes = arg == "--"
    return ""


_KEPT: list[object] = []
"""What a verb keeps until the process leaves (keep_until_exit)."""


def keep_until_exit(value: object) -> None:
    """Keep ``value`` (a loaded fleet) alive until the command ends.

    A verb's locals are freed object by object when it returns, before entry leaves the
    process without a teardown: a loaded fleet of 10,000 replicas takes about 0.12 s to
    free. Kept here, entry's quick exit frees nothing; an in-process ``main`` drops what
    was kept when it returns.
    """
    _KEPT.append(value)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit code (0 ok, 1 invalid input, 2 usage error)."""
    try:
        return _dispatch(argv)[0]
    finally:
        _KEPT.clear()


def _dispatch(argv: Sequence[str] | None) -> tuple[int, argparse.Namespace | None]:
    """The exit code, and the parsed arguments when a verb ran."""
    words = sys.argv[1:] if argv is None else argv
    parser = build_parser(chosen_verb(words))
    args = parser.parse_args(words)
    func: _Verb | None = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return 2, None
    try:
        return func(args), args
    except Exit as stop:
        return stop.code, args
    except BrokenPipeError:
        return 0, args
    except KeyboardInterrupt:
        return 130, args


def entry() -> NoReturn:
    """The process's entry (the console script and ``python -m modelplane``).

    A verb that loaded a fleet (its parser's ``quick_exit``) leaves the process without
    the interpreter's teardown, which would free every loaded object one by one:
    its output is flushed first, and where a flush fails the interpreter's ordinary exit
    reports it as it always did. Only here: an in-process ``main`` returns as usual.
    """
    code, args = _dispatch(None)
    if not getattr(args, "quick_exit", False):
        sys.exit(code)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        sys.exit(code)
    os._exit(code)


if __name__ == "__main__":
    entry()
