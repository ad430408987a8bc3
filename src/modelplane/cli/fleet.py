"""`modelplane fleet PATH... [-o table|json|html] [--out FILE]`: the fleet's capacity (docs/fleet.md)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from modelplane.cli.inputs import fleet_of, load_valid
from modelplane.cli.main import Exit, verb_help
from modelplane.fleetview.capacity import (
    ClusterCapacity,
    DeploymentUse,
    DeviceUse,
    FleetCapacity,
    capacity,
)
from modelplane.fleetview.state import reconciled
from modelplane.printable import printable

EXAMPLE = """\
example:
  modelplane fleet examples/
  modelplane fleet examples/ -o json
  modelplane fleet examples/ -o html --out fleet.html

Reconciles the input once, as render does, and shows what every cluster and pool holds:
devices by kind (total, used, free), replicas and devices per deployment, readiness,
stack (and why a serving stack not ready takes no new replica) and taints. On a live
control plane, export the objects first:
  kubectl get inferenceclusters,inferenceclasses,modeldeployments,modelreplicas,modelcaches \\
    -A -o yaml > fleet.yaml
Exit 0 on valid input, 1 on invalid input, 2 for a missing PATH.
"""


def register(subparsers: Any) -> None:
    """Add the verb to the command's sub-parsers."""
    parser = subparsers.add_parser(
        "fleet",
        help=verb_help("fleet"),
        description="Show the capacity of every cluster and pool after one reconcile of the "
        "input. Nothing is written anywhere but the output.",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="a manifest file or a directory")
    add_output(parser)
    parser.set_defaults(func=run, quick_exit=True)


def add_output(parser: argparse.ArgumentParser) -> None:
    """``-o table|json|html`` and ``--out FILE`` (fleet and plan)."""
    parser.add_argument(
        "-o",
        "--output",
        choices=("table", "json", "html"),
        default="table",
        help="table for people (default), json for programs, html for a picture",
    )
    parser.add_argument("--out", metavar="FILE", help="write the output to FILE, not stdout")


def emit(text: str, out: str | None, verb: str) -> None:
    """Write ``text`` to stdout or to ``out``; an unwritable file is a located error."""
    if not out:
        sys.stdout.write(text)
        return
    try:
        with open(out, "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as err:
        print(f"modelplane {verb}: error: {out}: {err.strerror or err}", file=sys.stderr)
        raise Exit(1) from err


def run(args: argparse.Namespace) -> int:
    """Load, reconcile, print; 0 on valid input, 1 on invalid input, 2 for a missing PATH."""
    state = reconciled(fleet_of(load_valid("fleet", args.paths)))
    fleet = capacity(state)
    if args.output == "json":
        text = json.dumps(fleet_json(fleet), indent=2) + "\n"
    elif args.output == "html":
        from modelplane.cli.picture import fleet_page

        text = fleet_page(state, fleet)
    else:
        text = fleet_table(fleet)
    emit(text, args.out, "fleet")
    return 0


# ---------------------------------------------------------------------------------------------
# JSON


def devices_json(devices: Sequence[DeviceUse]) -> list[dict[str, Any]]:
    """Devices by kind as JSON."""
    return [
        {
            "kind": d.kind,
            "deviceClassName": d.device_class,
            "total": d.total,
            "used": d.used,
            "free": d.free,
        }
        for d in devices
    ]


def _uses_json(uses: Sequence[DeploymentUse]) -> list[dict[str, Any]]:
    return [
        {"deployment": u.deployment, "replicas": u.replicas, "ready": u.ready, "devices": u.devices}
        for u in uses
    ]


def cluster_json(cluster: ClusterCapacity) -> dict[str, Any]:
    """One cluster as JSON (``pools`` null when its pools are unknown; ``stackPhase`` null
    without a published ``status.stack``, ``stackMessage`` null unless that stack is not
    ready)."""
    return {
        "name": cluster.name,
        "ready": cluster.ready,
        "stack": cluster.stack,
        "taints": list(cluster.taints),
        "stackPhase": cluster.stack_phase,
        "stackMessage": cluster.stack_message or None,
        "devices": devices_json(cluster.devices),
        "deployments": _uses_json(cluster.deployments),
        "pools": None
        if cluster.pools is None
        else [
            {
                "name": p.name,
                "nodes": p.nodes,
                "full": p.full,
                "devices": devices_json(p.devices),
                "deployments": _uses_json(p.deployments),
            }
            for p in cluster.pools
        ],
    }


def fleet_json(fleet: FleetCapacity) -> dict[str, Any]:
    """The ``-o json`` document: the fleet's devices by kind, then every cluster."""
    return {
        "devices": devices_json(fleet.devices),
        "clusters": [cluster_json(c) for c in fleet.clusters],
        "stray": list(fleet.stray),
    }


# ---------------------------------------------------------------------------------------------
# Table


def columns(cells: Sequence[Sequence[str]], indent: str = "") -> str:
    """Left-aligned columns, one line per row; cells escaped so a row stays one line."""
    rows = [[printable(cell) for cell in row] for row in cells]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "".join(
        indent + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() + "\n"
        for row in rows
    )


def devices_table(devices: Sequence[DeviceUse], indent: str = "") -> str:
    """Devices by kind: total, used, free."""
    rows = [["DEVICE", "CLASS", "TOTAL", "USED", "FREE"]]
    rows += [[d.kind, d.device_class, str(d.total), str(d.used), str(d.free)] for d in devices]
    return columns(rows, indent) if devices else f"{indent}(no devices)\n"


def cluster_table(cluster: ClusterCapacity) -> str:
    """One cluster's section: its header line, pools, deployments."""
    taints = ", ".join(cluster.taints) or "none"
    out = (
        f"cluster {printable(cluster.name)}  Ready={cluster.ready}  stack={cluster.stack}  "
        f"taints: {printable(taints)}\n"
    )
    if cluster.stack_message:
        out += f"  no new replicas: {printable(cluster.stack_message)}\n"
    if cluster.pools is None:
        out += "  pools unknown: it publishes none and none can be derived\n"
    else:
        rows = [["POOL", "NODES", "DEVICE", "CLASS", "TOTAL", "USED", "FREE", ""]]
        for p in cluster.pools:
            for d in p.devices or (DeviceUse("-", "-", 0, 0),):
                full = "full" if p.full else ""
                rows.append(
                    [p.name, str(p.nodes), d.kind, d.device_class, str(d.total), str(d.used),
                     str(d.free), full]
                )  # fmt: skip
        out += columns(rows, "  ")
    rows = [["DEPLOYMENT", "POOL", "REPLICAS", "READY", "DEVICES"]]
    for p in cluster.pools or ():
        rows += [
            [u.deployment or "(no deployment)", p.name, str(u.replicas), str(u.ready),
             str(u.devices)]
            for u in p.deployments
        ]  # fmt: skip
    if cluster.pools is None:
        rows += [
            [u.deployment or "(no deployment)", "?", str(u.replicas), str(u.ready), "?"]
            for u in cluster.deployments
        ]
    out += columns(rows, "  ") if len(rows) > 1 else "  no replicas\n"
    return out


def fleet_table(fleet: FleetCapacity) -> str:
    """Every cluster's section, then the fleet's devices by kind."""
    sections = [cluster_table(c) for c in fleet.clusters]
    replicas = sum(u.replicas for c in fleet.clusters for u in c.deployments)
    summary = f"fleet: {len(fleet.clusters)} clusters, {replicas} replicas\n"
    summary += devices_table(fleet.devices, "  ")
    if fleet.stray:
        summary += f"  {len(fleet.stray)} replicas on clusters not in the input: "
        summary += printable(", ".join(fleet.stray[:10]))
        summary += (", ..." if len(fleet.stray) > 10 else "") + "\n"
    return "\n".join([*sections, summary])
