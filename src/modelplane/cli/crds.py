"""`modelplane crds [--out DIR]`: the CompositeResourceDefinitions of the ten kinds (docs/cli.md)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from modelplane.api.crds import render_xrds, xrd_file_name, xrds
from modelplane.cli.main import verb_help

EXAMPLE = """\
example:
  modelplane crds | kubectl apply -f -
  modelplane crds --out xrds/
"""


def register(subparsers: Any) -> None:
    """Add the verb to the command's sub-parsers."""
    parser = subparsers.add_parser(
        "crds",
        help=verb_help("crds"),
        description="Write the apiextensions.crossplane.io/v2 CompositeResourceDefinition of "
        "every kind Modelplane serves, generated from the typed models.",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--out",
        metavar="DIR",
        help="write one file per XRD, DIR/<plural>.modelplane.ai.yaml, instead of printing",
    )
    parser.set_defaults(func=run, parser=parser)


def run(args: argparse.Namespace) -> int:
    """Print the XRDs as one YAML stream, or write one file each under --out."""
    if args.out is None:
        sys.stdout.write(render_xrds(xrds()))
        return 0
    try:
        os.makedirs(args.out, exist_ok=True)
        for xrd in xrds():
            path = os.path.join(args.out, xrd_file_name(xrd))
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(render_xrds([xrd]))
    except OSError as err:
        print(f"modelplane crds: error: {err}", file=sys.stderr)
        return 1
    return 0
