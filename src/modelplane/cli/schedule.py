"""`modelplane schedule PATH... [-o table|json] [--explain]`: preview placements (docs/cli.md)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from modelplane.cli.inputs import add_now, at, collector_off, fleet_of, load_valid
from modelplane.cli.main import verb_help
from modelplane.printable import printable
from modelplane.reconcile.deployment import DeploymentResult, reconcile_fleet
from modelplane.runtime.wire import condition_wire, explain_wire
from modelplane.scheduling import Placement
from modelplane.scheduling.explain import move_message
from modelplane.scheduling.model import Superseded, namespace_of

EXAMPLE = """\
example:
  modelplane schedule examples/
  modelplane schedule fleet/ deployments/qwen3-8b.yaml -o json --explain

Schedules every ModelDeployment of the input, in (namespace, name) order, against the
InferenceClusters, InferenceClasses, ModelCaches and observed ModelReplicas of the input.
Exit 0 when the input is valid (even if nothing could be placed), 1 on invalid input.
"""


def register(subparsers: Any) -> None:
    """Add the verb to the command's sub-parsers."""
    parser = subparsers.add_parser(
        "schedule",
        help=verb_help("schedule"),
        description="Run the fleet scheduler for every ModelDeployment in the input against the "
        "fleet in the input. Nothing is written anywhere.",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="a manifest file or a directory")
    parser.add_argument(
        "-o",
        "--output",
        choices=("table", "json"),
        default="table",
        help="table for people (default), json for programs",
    )
    parser.add_argument(
        "--explain",
        action="store_true",
        help="say, per deployment, why each cluster that got no new replica was passed over",
    )
    add_now(parser)
    parser.set_defaults(func=run, parser=parser, quick_exit=True)


def run(args: argparse.Namespace) -> int:
    """Load, schedule and print; 0 on valid input, 1 on invalid input, 2 for a missing PATH."""
    loaded = load_valid("schedule", args.paths)
    with collector_off():
        results = reconcile_fleet(at(fleet_of(loaded), args.now))
        if args.output == "json":
            out = to_json(results, explain=args.explain)
            sys.stdout.write(json.dumps(out, indent=2) + "\n")
        else:
            sys.stdout.write(to_table(results, explain=args.explain))
    return 0


# ---------------------------------------------------------------------------------------------
# JSON (docs/cli.md)


def _placement_json(p: Placement) -> dict[str, Any]:
    return {
        "name": p.name,
        "cluster": p.cluster,
        "index": p.index,
        "retained": p.retained,
        "engines": [
            {
                "name": e.name,
                "members": [
                    {
                        "role": m.role,
                        "pool": m.pool,
                        "nodes": m.pods,  # the name the JSON has always used for the pods charged
                        "devices": [
                            {
                                "name": r.name,
                                "deviceClassName": r.device_class_name,
                                "count": r.count,
                            }
                            for r in m.device_requests
                        ],
                    }
                    for m in e.members
                ],
            }
            for e in p.engines
        ],
    }


def _move_json(move: Superseded) -> dict[str, Any]:
    p = move.placement
    return {
        "name": p.name,
        "cluster": p.cluster,
        "index": p.index,
        "cause": move.cause.value,
        "retiring": move.retiring,
        "replacement": move.replacement or None,
        "message": move_message(move),
    }


def _splits(p: Placement) -> list[tuple[str, str]]:
    """(engine, why its split is allowed) for each engine of a replica split across pools."""
    return [(e.name, e.split) for e in p.engines if e.split]


def _split_json(p: Placement) -> list[dict[str, Any]]:
    return [
        {"replica": p.name, "cluster": p.cluster, "engine": engine, "message": message}
        for engine, message in _splits(p)
    ]


def to_json(results: Sequence[DeploymentResult], *, explain: bool) -> dict[str, Any]:
    """The ``-o json`` document of docs/cli.md."""
    deployments = []
    for result in results:
        status = result.status
        item: dict[str, Any] = {
            "namespace": namespace_of(result.deployment.metadata.namespace),
            "name": result.deployment.metadata.name,
            "desired": result.schedule.desired,
            "replicas": [_placement_json(p) for p in result.schedule.replicas],
            "conditions": [condition_wire(c) for c in status.conditions],
        }
        if explain:
            item["explain"] = explain_wire(result.schedule.explain)
            item["superseded"] = [_move_json(m) for m in result.schedule.superseded]
            item["splits"] = [s for p in result.schedule.replicas for s in _split_json(p)]
        deployments.append(item)
    return {"deployments": deployments}


# ---------------------------------------------------------------------------------------------
# Table


def _columns(cells: Sequence[Sequence[str]]) -> str:
    # A condition message can quote observed input: escaped, so a row stays one line.
    rows = [[printable(cell) for cell in row] for row in cells]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    return "\n".join(lines) + "\n"


def _state(p: Placement) -> str:
    if p.revised:
        return "updating"  # its template revision changes in this reconcile
    if p.held:
        return "held"
    return "retained" if p.retained else "new"


def to_table(results: Sequence[DeploymentResult], *, explain: bool) -> str:
    """One row per replica, then one summary line per deployment (and its explain section)."""
    rows: list[list[str]] = [
        ["DEPLOYMENT", "REPLICA", "CLUSTER", "INDEX", "STATE", "ENGINE/MEMBER -> POOL"]
    ]
    for result in results:
        ident = f"{namespace_of(result.deployment.metadata.namespace)}/{result.deployment.metadata.name}"
        rollout = result.schedule.rollout
        outdated = set(rollout.outdated) if rollout is not None else set()
        for p in result.schedule.replicas:
            members = ", ".join(
                f"{e.name}/{m.role} -> {m.pool}" for e in p.engines for m in e.members
            )
            state = "outdated" if p.name in outdated else _state(p)
            rows.append([ident, p.name, p.cluster, str(p.index), state, members])
        for move in result.schedule.superseded:
            p = move.placement
            members = ", ".join(
                f"{e.name}/{m.role} -> {m.pool}" for e in p.engines for m in e.members
            )
            state = "retiring" if move.retiring else "superseded"
            rows.append([ident, p.name, p.cluster, str(p.index), state, members])
    out = _columns(rows) if len(rows) > 1 else "No replicas placed.\n"
    for result in results:
        status = result.status
        deployment = result.deployment
        ident = f"{namespace_of(deployment.metadata.namespace)}/{deployment.metadata.name}"
        out += f"\n{ident}: {result.schedule.total} of {result.schedule.desired} replicas placed\n"
        out += _indent(
            _columns(
                [[c.type, c.status, c.reason or "", c.message or ""] for c in status.conditions]
            )
        )
        if explain:
            entries = [[e.cluster, e.reason, e.message] for e in result.schedule.explain]
            out += "  explain:\n"
            out += (
                _indent(_indent(_columns(entries))) if entries else "    (no cluster passed over)\n"
            )
            moves = result.schedule.superseded
            if moves:
                out += "  superseded:\n"
                out += "".join(f"    {printable(move_message(m))}\n" for m in moves)
            splits = [
                f"{p.name} on {p.cluster}: engine {engine} {message}"
                for p in result.schedule.replicas
                for engine, message in _splits(p)
            ]
            if splits:
                out += "  splits:\n"
                out += "".join(f"    {printable(line)}\n" for line in splits)
    return out


def _indent(text: str) -> str:
    return "".join(f"  {line}\n" for line in text.splitlines())
