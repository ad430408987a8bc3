"""``python -m tools.crdcost FILE...``: fail the build when a CRD's rules are over budget.

The shell around the estimator: it reads XRDs (converted as Crossplane does,
:mod:`tools.crdcost.xcrd`) or CRDs from YAML files (``-`` is standard input, so
``modelplane crds | python -m tools.crdcost -`` works), estimates every rule as a
Kubernetes API server of the package's floor would, and prints one line per CRD version.
Exit 0 when everything is within the targets of docs/crd-cost.md, 1 with one line per
problem on standard error when not, 2 when an input cannot be read.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from modelplane.packaging import KUBERNETES_FLOOR

from .budget import CRD_TARGET, RULE_TARGET, problems, shown_cost
from .estimate import VersionCost, estimate_crd
from .xcrd import CROSSPLANE_RELEASES, crd_for_xrd

__all__ = ["InputError", "main", "read_crds"]

PROG = "python -m tools.crdcost"
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_MINOR = re.compile(r"^1\.\d+$")


class InputError(Exception):
    """An input that is not a readable CRD or XRD; the message says where."""


def _documents(name: str, text: str) -> Iterator[tuple[str, Any]]:
    try:
        for n, doc in enumerate(yaml.load_all(text, Loader=_LOADER), start=1):
            if doc is not None:
                yield f"{name}: document {n}", doc
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise InputError(f"{name}: {line}not valid YAML: {problem}") from None


def _read(path: str) -> tuple[str, str]:
    if path == "-":
        return "<stdin>", sys.stdin.read()
    try:
        return path, Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        reason = getattr(err, "strerror", None) or str(err)
        raise InputError(f"{path}: cannot read: {reason}") from None


def _as_crd(where: str, doc: Any, crossplane: str) -> dict[str, Any]:
    """The CRD the API server is given for ``doc``: an XRD's as Crossplane converts it."""
    kind = doc.get("kind") if isinstance(doc, Mapping) else None
    try:
        if kind == "CompositeResourceDefinition":
            return crd_for_xrd(doc, crossplane)
        if kind == "CustomResourceDefinition":
            return dict(doc)
    except (KeyError, TypeError, AttributeError) as err:
        raise InputError(f"{where}: a {kind} without a well-formed spec ({err!r})") from None
    raise InputError(
        f"{where}: kind {kind!r} is neither a CompositeResourceDefinition nor a "
        "CustomResourceDefinition"
    )


def read_crds(paths: Sequence[str], crossplane: str) -> list[tuple[str, dict[str, Any]]]:
    """Every CRD of ``paths``, each with where it was read (``FILE: document N``)."""
    out: list[tuple[str, dict[str, Any]]] = []
    for path in paths:
        name, text = _read(path)
        out.extend(
            (where, _as_crd(where, doc, crossplane)) for where, doc in _documents(name, text)
        )
    return out


def _estimate(where: str, crd: Mapping[str, Any], kubernetes: str) -> list[VersionCost]:
    try:
        return estimate_crd(crd, kubernetes=kubernetes)
    except (KeyError, TypeError, AttributeError) as err:
        raise InputError(f"{where}: a CRD without a well-formed spec ({err!r})") from None


def _summary(v: VersionCost) -> str:
    costliest = max(v.rules, key=lambda r: r.total, default=None)
    most = (
        f"; costliest rule {shown_cost(costliest.total)} at {costliest.path} "
        f"(target {RULE_TARGET:,})"
        if costliest is not None
        else ""
    )
    rules = f"{len(v.rules)} rule" + ("" if len(v.rules) == 1 else "s")
    return (
        f"{v.crd} {v.version}: {rules}, total {shown_cost(v.total)} (target {CRD_TARGET:,}){most}"
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Estimate every x-kubernetes-validations rule of CRDs or Crossplane XRDs "
        "as the Kubernetes API server does, and fail when one is over the package's targets "
        f"(per rule {RULE_TARGET:,}, per CRD version {CRD_TARGET:,}: half the server's "
        "limits; docs/crd-cost.md).",
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="YAML of XRDs or CRDs; - is stdin")
    parser.add_argument(
        "--kubernetes",
        default=KUBERNETES_FLOOR,
        help="the API server's minor version (default: the package's floor, %(default)s)",
    )
    parser.add_argument(
        "--crossplane",
        default=CROSSPLANE_RELEASES[-1],
        choices=CROSSPLANE_RELEASES,
        help="the Crossplane release converting XRDs (default: %(default)s, which keeps the "
        "most of an XRD and so costs the most)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the check; the exit status (0 within budget, 1 over, 2 unreadable input)."""
    args = _parser().parse_args(argv)
    if not _MINOR.match(args.kubernetes):
        print(f"{PROG}: error: --kubernetes {args.kubernetes!r}: expected 1.N", file=sys.stderr)
        return 2
    try:
        crds = read_crds(args.files, args.crossplane)
        estimated = [(where, _estimate(where, crd, args.kubernetes)) for where, crd in crds]
    except InputError as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return 2
    found = [f"{where}: {line}" for where, versions in estimated for line in problems(versions)]
    for _, versions in estimated:
        for v in versions:
            print(_summary(v))
    if found:
        for line in found:
            print(line, file=sys.stderr)
        print(
            f"{PROG}: {len(found)} CRD rule problem(s) on a Kubernetes {args.kubernetes} API "
            "server; the targets are half the server's limits (docs/crd-cost.md)",
            file=sys.stderr,
        )
        return 1
    return 0
