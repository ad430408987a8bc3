"""`modelplane plan PATH... [--change FILE...] [--remove KIND/NAME...] [--fit FILE]`:
what a change would do to the fleet, touching nothing (docs/fleet.md)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from modelplane.api import ModelDeployment
from modelplane.api.base import KubeModel
from modelplane.cli.fleet import (
    add_output,
    columns,
    devices_json,
    devices_table,
    emit,
    fleet_json,
)
from modelplane.cli.inputs import fleet_of, load_valid
from modelplane.cli.main import Exit, verb_help
from modelplane.fleetview.changes import KINDS, ChangeError, Changes, Removal
from modelplane.fleetview.fit import Fit, fit
from modelplane.fleetview.plan import Plan, plan
from modelplane.printable import printable
from modelplane.runtime.wire import explain_wire

EXAMPLE = """\
example:
  modelplane plan examples/ --change drain-us-east-1.yaml
  modelplane plan examples/ --change qwen3-8b-x20.yaml -o json
  modelplane plan examples/ --remove InferenceCluster/ap-south-1
  modelplane plan examples/ --fit examples/deployments/qwen3-8b.yaml
  modelplane plan examples/ --change drain-us-east-1.yaml -o html --out plan.html

A change FILE holds whole documents: each replaces the input object of the same kind,
namespace and name, or joins the input. Scale a deployment by giving it with its new
spec.replicas; drain a cluster by giving it with a NoExecute taint; add a cluster or a
pool by giving the cluster. --remove takes an object out (a ModelDeployment with its
replicas). The fleet before is the input once every replica is running and Ready; the
change is then reconciled round by round, as the control plane would, until it settles.
--fit FILE (one ModelDeployment) says how many more of its replicas fit after the change.
Exit 0 on valid input, 1 on invalid input or change, 2 for a missing PATH.
"""


def register(subparsers: Any) -> None:
    """Add the verb to the command's sub-parsers."""
    parser = subparsers.add_parser(
        "plan",
        help=verb_help("plan"),
        description="Apply proposed changes to the fleet in memory and show what would move, "
        "be placed, be removed or not fit, and the headroom after. Nothing is written "
        "anywhere but the output.",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="a manifest file or a directory")
    parser.add_argument(
        "--change",
        nargs="+",
        action="extend",
        default=[],
        metavar="FILE",
        help="documents that replace or join the input's",
    )
    parser.add_argument(
        "--remove",
        action="append",
        default=[],
        metavar="KIND/NAME",
        help="take an object out of the input: Kind/name, or Kind/namespace/name",
    )
    parser.add_argument(
        "--fit", metavar="FILE", help="a ModelDeployment: how many more replicas fit, and where"
    )
    add_output(parser)
    parser.set_defaults(func=run, quick_exit=True)


def _fail(message: str) -> Exit:
    print(f"modelplane plan: error: {printable(message)}", file=sys.stderr)
    return Exit(1)


def _changes(args: argparse.Namespace) -> Changes:
    objects: list[KubeModel] = []
    if args.change:
        loaded = load_valid("plan", args.change)
        for o in loaded.objects:
            if o.kind not in KINDS:
                raise _fail(f"{o.file}:{o.line}: a plan changes only {', '.join(sorted(KINDS))}")
            objects.append(o.model)
    try:
        removals = tuple(Removal.parse(text) for text in args.remove)
    except ChangeError as err:
        raise _fail(f"--remove {err}") from err
    return Changes(tuple(objects), removals)


def _fit_deployment(path: str) -> ModelDeployment:
    loaded = load_valid("plan", [path])
    found = loaded.of_kind(ModelDeployment)
    if len(found) != 1 or len(loaded.objects) != 1:
        raise _fail(f"--fit {path}: the file must hold exactly one ModelDeployment")
    return found[0]


def run(args: argparse.Namespace) -> int:
    """Load, plan, print; 0 on valid input, 1 on invalid input or change, 2 for a missing PATH."""
    inputs = fleet_of(load_valid("plan", args.paths))
    changes = _changes(args)
    wanted = _fit_deployment(args.fit) if args.fit else None
    try:
        result = plan(inputs, changes)
    except ChangeError as err:
        raise _fail(str(err)) from err
    fitted = fit(result.after, wanted) if wanted is not None else None
    if args.output == "json":
        text = json.dumps(plan_json(result, fitted), indent=2) + "\n"
    elif args.output == "html":
        from modelplane.cli.picture import plan_page

        text = plan_page(result)
    else:
        text = plan_table(result, fitted)
    emit(text, args.out, "plan")
    return 0


# ---------------------------------------------------------------------------------------------
# JSON


def fit_json(f: Fit) -> dict[str, Any]:
    """The ``fit`` member of ``plan -o json``."""
    return {
        "deployment": f.deployment,
        "running": f.running,
        "more": f.more,
        "atLimit": f.at_limit,
        "where": [{"cluster": c, "pools": list(p), "replicas": n} for c, p, n in f.where],
        "explain": explain_wire(f.explain),
    }


def plan_json(p: Plan, fitted: Fit | None = None) -> dict[str, Any]:
    """The ``-o json`` document of ``plan``."""
    out: dict[str, Any] = {
        "rounds": len(p.rounds),
        "settled": p.settled,
        "moves": [
            {
                "deployment": m.deployment,
                "replica": m.replica,
                "cluster": m.cluster,
                "cause": m.cause,
                "message": m.message,
                "replacement": m.replacement or None,
                "replacementCluster": m.replacement_cluster or None,
                "replacementPools": list(m.replacement_pools),
                "round": m.round,
            }
            for m in p.moves
        ],
        "placed": [
            {"deployment": x.deployment, "replica": x.replica, "cluster": x.cluster,
             "pools": list(x.pools), "round": x.round}
            for x in p.placed
        ],
        "removed": [
            {"deployment": x.deployment, "replica": x.replica, "cluster": x.cluster, "why": x.why}
            for x in p.removed
        ],
        "unplaced": [
            {"deployment": u.deployment, "placed": u.placed, "desired": u.desired,
             "explain": explain_wire(u.explain)}
            for u in p.unplaced
        ],
        "before": {"devices": devices_json(p.before_capacity.devices)},
        "after": fleet_json(p.after_capacity),
    }  # fmt: skip
    if fitted is not None:
        out["fit"] = fit_json(fitted)
    return out


# ---------------------------------------------------------------------------------------------
# Table


def _section(title: str, rows: list[list[str]], empty: str) -> str:
    if len(rows) == 1:
        return f"{title}: {empty}\n"
    return f"{title}:\n" + columns(rows, "  ")


def fit_table(f: Fit) -> str:
    """How many more replicas fit, where, and why the other clusters take none."""
    more = f"at least {f.more}" if f.at_limit else str(f.more)
    out = f"fit {f.deployment}: {more} more replicas fit beside its {f.running} running\n"
    rows = [["CLUSTER", "POOLS", "REPLICAS"]]
    rows += [[c, ",".join(p), str(n)] for c, p, n in f.where]
    out += columns(rows, "  ") if len(rows) > 1 else ""
    if f.explain:
        out += "  no more on:\n" + columns(
            [[e.cluster, e.reason, e.message] for e in f.explain], "    "
        )
    return out


def plan_table(p: Plan, fitted: Fit | None = None) -> str:
    """Moves, placements, removals, shortfalls, then the devices before and after."""
    settled = "settles" if p.settled else "does not settle"
    out = f"plan: the change {settled} in {len(p.rounds)} reconciles\n\n"
    moves = [["REPLICA", "FROM", "CAUSE", "REPLACEMENT", "TO", "POOLS", "ROUND"]]
    moves += [
        [m.replica, m.cluster, m.cause, m.replacement or "(none: keeps serving)",
         m.replacement_cluster or "-", ",".join(m.replacement_pools) or "-", str(m.round)]
        for m in p.moves
    ]  # fmt: skip
    out += _section("moves (make-before-break)", moves, "none")
    placed = [["REPLICA", "CLUSTER", "POOLS", "ROUND"]]
    placed += [[x.replica, x.cluster, ",".join(x.pools), str(x.round)] for x in p.placed]
    out += _section("placed", placed, "none")
    removed = [["REPLICA", "CLUSTER", "WHY"]]
    removed += [[x.replica, x.cluster, x.why] for x in p.removed]
    out += _section("removed", removed, "none")
    if p.unplaced:
        out += "does not fit:\n"
        for u in p.unplaced:
            out += f"  {printable(u.deployment)}: {u.placed} of {u.desired} replicas placed\n"
            out += columns([[e.cluster, e.reason, e.message] for e in u.explain], "    ")
    else:
        out += "does not fit: nothing, every deployment has its replicas\n"
    out += "\ndevices before:\n" + devices_table(p.before_capacity.devices, "  ")
    out += "devices after (headroom):\n" + devices_table(p.after_capacity.devices, "  ")
    if fitted is not None:
        out += "\n" + fit_table(fitted)
    return out
