"""`modelplane package [--out DIR]`: the Crossplane configuration package (docs/crossplane.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from modelplane.cli.main import verb_help
from modelplane.packaging import package_files

DEFAULT_OUT = "package"
EXAMPLE = """\
example:
  modelplane package                      # writes package/configuration, package/function, package/install
  crossplane xpkg build --package-root package/configuration
"""


def register(subparsers: Any) -> None:
    """Add the verb to the command's sub-parsers."""
    parser = subparsers.add_parser(
        "package",
        help=verb_help("package"),
        description="Write the Crossplane configuration package: the XRDs and Compositions of "
        "every kind (DIR/configuration), the function package's metadata (DIR/function) and "
        "the Function object (DIR/install). Existing files of the package are overwritten; "
        "nothing else is touched.",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--out",
        metavar="DIR",
        default=DEFAULT_OUT,
        help=f"output directory (default: {DEFAULT_OUT})",
    )
    parser.set_defaults(func=run)


def write_package(out: Path) -> list[Path]:
    """Write every package file under ``out``; returns the paths written."""
    written: list[Path] = []
    for relative, text in package_files().items():
        path = out / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def run(args: argparse.Namespace) -> int:
    """Write the package; exit 1 when a file cannot be written."""
    try:
        write_package(Path(args.out))
    except OSError as err:
        print(f"modelplane package: error: {err}", file=sys.stderr)
        return 1
    return 0
