"""`modelplane validate PATH...`: check manifests as the API server would (cli.md)."""

from __future__ import annotations

import argparse
from typing import Any

from modelplane.cli.inputs import load_valid

EXAMPLE = """\
example:
  modelplane validate examples/
  modelplane validate fleet.yaml deployments/

Prints "ok: N objects" and exits 0, or one line per problem on stderr and exits 1:
  <file>:<line>: <Kind> <namespace>/<name>: <field.path>: <message>
"""


def register(subparsers: Any) -> None:
    """Add the verb to the command's sub-parsers."""
    parser = subparsers.add_parser(
        "validate",
        help="check manifests against their schema and validation rules",
        description="Check every document against its schema and every validation rule of "
        "its CRD, and compile every DRA selector. Nothing is written anywhere.",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="a manifest file or a directory")
    parser.set_defaults(func=run, parser=parser)


def run(args: argparse.Namespace) -> int:
    """Validate the PATHs; 0 when all pass, 1 on any problem, 2 for a PATH that names nothing."""
    loaded = load_valid("validate", args.paths)
    print(f"ok: {len(loaded.objects)} objects")
    return 0
