"""The fleet as a picture: one self-contained HTML page, inline CSS, no script, no network.

Clusters are boxes, each pool a row of nodes, each node its claimable devices as squares
coloured by the deployment holding them; a free device is a hollow square. Colours are
given per deployment in name order, so before and after pictures of a plan agree.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from html import escape

from modelplane.fleetview.capacity import ClusterCapacity, FleetCapacity, pool_slots
from modelplane.fleetview.plan import Plan
from modelplane.fleetview.state import FleetState, Running

NODES_DRAWN = 32
"""Nodes drawn per pool; the rest are counted in a line below the row."""

# Distinct, colour-blind-friendly hues first (Okabe-Ito and Tableau), then generated ones.
PALETTE = (
    "#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#f0e442",
    "#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#ff9da7", "#9c755f",
)  # fmt: skip
OTHER = "#8a8a8a"  # a replica that carries no deployment label

STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:16px;color:#222;background:#fff}
h1{font-size:20px;margin:0 0 8px}h2{font-size:17px;margin:12px 0 6px}
.sides{display:flex;gap:24px;align-items:flex-start}.side{flex:1;min-width:0}
.fleet{display:flex;flex-wrap:wrap;gap:12px;align-items:flex-start}
.cluster{border:2px solid #444;border-radius:6px;padding:8px 10px;background:#fafafa}
.cluster.notready{border-color:#c33}.cluster h3{margin:0;font-size:15px}
.meta{color:#555;font-size:12px;margin:2px 0 6px}
.pool{margin:4px 0 8px}.pool-name{font-size:12px;color:#333;margin-bottom:2px}
.pool.full .pool-name{color:#c33;font-weight:600}
.nodes{display:flex;flex-wrap:wrap;gap:4px}.node{display:grid;
gap:2px;padding:2px;border:1px solid #bbb;border-radius:3px;background:#fff}
.slot{width:12px;height:12px;border-radius:2px;display:block}
.slot.free{background:#fff;box-shadow:inset 0 0 0 1px #999}
.more{font-size:11px;color:#666}.legend{list-style:none;padding:0;display:flex;flex-wrap:wrap;
gap:10px;margin:6px 0 12px}.legend li{display:flex;align-items:center;gap:4px;font-size:12px}
.totals{font-size:12px;color:#333;margin:0 0 10px}
table.changes{border-collapse:collapse;font-size:12px;margin:4px 0 12px}
table.changes td,table.changes th{border:1px solid #ccc;padding:2px 6px;text-align:left}
"""


def colours(deployments: Iterable[str]) -> dict[str, str]:
    """A colour per deployment, in name order: the palette, then evenly spread hues."""
    out: dict[str, str] = {}
    for i, name in enumerate(sorted(set(deployments))):
        if not name:
            out[name] = OTHER
        elif i < len(PALETTE):
            out[name] = PALETTE[i]
        else:
            out[name] = f"hsl({(i * 137) % 360},55%,50%)"
    return out


def _slot(owner: str | None, palette: Mapping[str, str]) -> str:
    if not owner:
        return '<span class="slot free" title="free"></span>'
    who = escape(owner or "(no deployment)")
    return (
        f'<span class="slot used" data-deployment="{who}" title="{who}" '
        f'style="background:{palette.get(owner, OTHER)}"></span>'
    )


def cluster_box(
    cluster: ClusterCapacity,
    state: FleetState,
    running: Sequence[Running],
    palette: Mapping[str, str],
) -> str:
    """One cluster's box: header, then each pool's nodes slot by slot."""
    view = next(v for v in state.views if v.name == cluster.name)
    taints = ", ".join(cluster.taints) or "no taints"
    ready = "" if cluster.ready == "True" and not cluster.stack_message else " notready"
    parts = [
        f'<div class="cluster{ready}" data-cluster="{escape(cluster.name)}">',
        f"<h3>{escape(cluster.name)}</h3>",
        f'<p class="meta">Ready={escape(cluster.ready)} · {cluster.stack} · {escape(taints)}</p>',
    ]
    if cluster.stack_message:
        parts.append(f'<p class="meta">no new replicas: {escape(cluster.stack_message)}</p>')
    if cluster.pools is None:
        parts.append('<p class="meta">pools unknown</p></div>')
        return "".join(parts)
    capacities = {p.name: p for p in cluster.pools}
    for slots in pool_slots(view, running, NODES_DRAWN):
        pool = capacities[slots.pool.name]
        used = sum(d.used for d in pool.devices)
        total = sum(d.total for d in pool.devices)
        full = " full" if pool.full else ""
        kinds = ", ".join(sorted({d.kind for d in pool.devices})) or "no claimable devices"
        parts.append(
            f'<div class="pool{full}" data-pool="{escape(pool.name)}" data-nodes="{pool.nodes}">'
            f'<div class="pool-name">{escape(pool.name)} · {pool.nodes} nodes · '
            f"{escape(kinds)} · {used}/{total} used{' · full' if full else ''}</div>"
            '<div class="nodes">'
        )
        for node in slots.nodes:
            slots_of = [o for device in node.devices for o in device]
            squares = "".join(_slot(o, palette) for o in slots_of)
            across = max(1, min(4, len(slots_of)))
            parts.append(
                f'<div class="node" style="grid-template-columns:repeat({across},12px)">'
                f"{squares}</div>"
            )
        parts.append("</div>")
        if slots.hidden:
            parts.append(f'<div class="more">+{slots.hidden} more nodes not drawn</div>')
        parts.append("</div>")
    parts.append("</div>")
    return "".join(parts)


def fleet_drawing(state: FleetState, fleet: FleetCapacity, palette: Mapping[str, str]) -> str:
    """Every cluster's box, and the fleet's devices by kind above them."""
    by_cluster: dict[str, list[Running]] = {}
    for r in state.running:
        by_cluster.setdefault(r.cluster, []).append(r)
    totals = "; ".join(f"{d.kind}: {d.used}/{d.total} used, {d.free} free" for d in fleet.devices)
    boxes = "".join(
        cluster_box(c, state, by_cluster.get(c.name, []), palette) for c in fleet.clusters
    )
    return f'<p class="totals">{escape(totals or "no devices")}</p><div class="fleet">{boxes}</div>'


def legend(palette: Mapping[str, str]) -> str:
    """Each deployment's colour, then the free square."""
    items = "".join(
        f'<li data-deployment="{escape(name)}"><span class="slot" style="background:{colour}">'
        f"</span>{escape(name or '(no deployment)')}</li>"
        for name, colour in palette.items()
    )
    return f'<ul class="legend">{items}<li><span class="slot free"></span>free</li></ul>'


def page(title: str, body: str) -> str:
    """A complete, self-contained HTML document."""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{STYLE}</style></head>"
        f"<body><h1>{escape(title)}</h1>{body}</body></html>\n"
    )


def fleet_page(state: FleetState, fleet: FleetCapacity) -> str:
    """``fleet -o html``: the legend and the fleet."""
    palette = colours(r.deployment for r in state.running)
    return page("Fleet", legend(palette) + fleet_drawing(state, fleet, palette))


def _changes_table(p: Plan) -> str:
    rows = "".join(
        f"<tr><td>move</td><td>{escape(m.replica)}</td><td>{escape(m.cluster)}</td>"
        f"<td>{escape(m.replacement_cluster or 'keeps serving: nothing fits')}</td>"
        f"<td>{escape(m.cause)}</td></tr>"
        for m in p.moves
    )
    rows += "".join(
        f"<tr><td>place</td><td>{escape(x.replica)}</td><td>-</td><td>{escape(x.cluster)}</td>"
        f"<td>{escape(','.join(x.pools))}</td></tr>"
        for x in p.placed
    )
    rows += "".join(
        f"<tr><td>remove</td><td>{escape(x.replica)}</td><td>{escape(x.cluster)}</td><td>-</td>"
        f"<td>{escape(x.why)}</td></tr>"
        for x in p.removed
    )
    rows += "".join(
        f"<tr><td>short</td><td>{escape(u.deployment)}</td><td>-</td><td>-</td>"
        f"<td>{u.placed} of {u.desired} placed</td></tr>"
        for u in p.unplaced
    )
    if not rows:
        return '<p class="meta">The change moves, places and removes nothing.</p>'
    head = "<tr><th>what</th><th>replica</th><th>from</th><th>to</th><th>why</th></tr>"
    return f'<table class="changes">{head}{rows}</table>'


def plan_page(p: Plan) -> str:
    """``plan -o html``: the changes, then the fleet before and after side by side."""
    palette = colours(r.deployment for s in (p.before, p.after) for r in s.running)
    before = fleet_drawing(p.before, p.before_capacity, palette)
    after = fleet_drawing(p.after, p.after_capacity, palette)
    body = (
        legend(palette)
        + _changes_table(p)
        + '<div class="sides">'
        + f'<div class="side" data-side="before"><h2>Before</h2>{before}</div>'
        + f'<div class="side" data-side="after"><h2>After</h2>{after}</div>'
        + "</div>"
    )
    return page("Plan", body)
