"""`modelplane validate PATH...`: check manifests as the API server would (docs/cli.md)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from modelplane.api import ModelDeployment
from modelplane.cli.inputs import load_valid
from modelplane.cli.main import verb_help
from modelplane.composition.serving_warnings import serving_warnings
from modelplane.manifests import Loaded
from modelplane.printable import printable

EXAMPLE = """\
example:
  modelplane validate examples/
  modelplane validate fleet.yaml deployments/

Prints "ok: N objects" and exits 0, or one line per problem on stderr and exits 1:
  <file>:<line>: <Kind> <namespace>/<name>: <field.path>: <message>
A deployment that is valid but cannot serve (a gang whose workers never name the leader,
decode pods without a routing sidecar, NIXL without a side-channel host, a vLLM image built
for another accelerator than the member selects, a cached engine that names no model) gets a
warning
line on stderr; the exit code stays 0:
  <file>:<line>: <Kind> <namespace>/<name>: <field.path>: warning: <message>
"""


def register(subparsers: Any) -> None:
    """Add the verb to the command's sub-parsers."""
    parser = subparsers.add_parser(
        "validate",
        help=verb_help("validate"),
        description="Check every document against its schema and every validation rule of "
        "its CRD, and compile every DRA selector. Nothing is written anywhere.",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="a manifest file or a directory")
    parser.set_defaults(func=run, parser=parser, quick_exit=True)


def run(args: argparse.Namespace) -> int:
    """Validate the PATHs; 0 when all pass, 1 on any problem, 2 for a PATH that names nothing."""
    loaded = load_valid("validate", args.paths)
    print_warnings(loaded)
    print(f"ok: {len(loaded.objects)} objects")
    return 0


def warning_lines(loaded: Loaded) -> list[str]:
    """One located line per serving warning of every loaded ModelDeployment, input order."""
    return [
        printable(
            f"{obj.file}:{obj.line}: {obj.kind} {obj.namespace}/{obj.name}: {w.path}: "
            f"warning: {w.message}"
        )
        for obj in loaded.loaded_of_kind(ModelDeployment)
        if isinstance(obj.model, ModelDeployment)
        for w in serving_warnings(obj.model)
    ]


def print_warnings(loaded: Loaded) -> None:
    """Print the serving warnings on stderr (they never change the exit code)."""
    for line in warning_lines(loaded):
        print(line, file=sys.stderr)
