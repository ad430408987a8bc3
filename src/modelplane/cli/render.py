"""`modelplane render PATH... [-o yaml|json] [--out DIR]`: one full reconcile, printed (docs/cli.md)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from modelplane.api import (
    InferenceGateway,
    MetricMapping,
    ModelDeployment,
    ModelService,
    TelemetryDestination,
)
from modelplane.api.inferencecluster import InferenceCluster
from modelplane.api.modelservice import ModelServiceStatus
from modelplane.cli.emit import array_pieces, indented_json, yaml_documents, yaml_parts
from modelplane.cli.inputs import add_now, at, collector_off, fleet_of, load_valid
from modelplane.cli.main import verb_help
from modelplane.cli.validate import print_warnings
from modelplane.forked import Child, ChildFailed
from modelplane.manifests import Loaded
from modelplane.printable import printable
from modelplane.reconcile.deployment import Fleet
from modelplane.runtime.local.render import (
    RenderedAutoscaler,
    RenderedCache,
    RenderedCluster,
    RenderedDeployment,
    RenderedDestination,
    RenderedEndpoint,
    RenderedFront,
    clusters_placed,
    render,
    render_autoscalers,
    render_caches,
    render_clusters,
    render_endpoints,
    render_fronts,
    render_telemetry,
)
from modelplane.scheduling.model import namespace_of

EXAMPLE = """\
example:
  modelplane render examples/
  modelplane render examples/ -o json --out out/

Prints, per ModelDeployment in (namespace, name) order: the deployment with its computed
status, its ModelReplicas, the Objects composed for each replica's cluster, and its
ModelEndpoints; then, per InferenceCluster in name order, its provider configs, its serving
stack as it stands once converged (Releases and Objects in install order, or a Provided
cluster's checks), the Usages ordering its teardown, and the Objects it composes once for
every replica (the pickers' ServiceAccount, RBAC and default config);
then, per ModelCache in (namespace, name) order, the cache with its
computed status and the Objects staging it on each cluster; then, per ModelEndpoint (composed
or given) in (namespace, name) order, its Envoy Gateway Backend and AIServiceBackend (and,
with a credential, the BackendSecurityPolicy attaching its key); then each InferenceGateway
with its Gateway and each ModelService with its AIGatewayRoute and retries; then, per
TelemetryDestination, the destination with its status and the collector Release of each
cluster it selects; then the KEDA ScaledObject of each deployment that opts in.
A short summary goes to stderr, ending with the fleet address and a curl line per ModelService,
after any warning about a deployment that would compose but cannot serve (as validate
prints them; the exit code stays 0). Feed the output back (only its modelplane.ai
kinds, with ModelReplica status.conditions Ready=True) to model later reconciles.
"""


def register(subparsers: Any) -> None:
    """Add the verb to the command's sub-parsers."""
    parser = subparsers.add_parser(
        "render",
        help=verb_help("render"),
        description="One full local reconcile of the input: exactly what the control plane "
        "would compose.",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="a manifest file or a directory")
    parser.add_argument("-o", "--output", choices=("yaml", "json"), default="yaml")
    parser.add_argument(
        "--out", metavar="DIR", help="write control-plane.<ext> and cluster-<name>.<ext> files"
    )
    add_now(parser)
    parser.set_defaults(func=run, quick_exit=True)


def run(args: argparse.Namespace) -> int:
    """Load, reconcile, print; 0 on valid input, 1 on invalid input, 2 for a missing PATH."""
    loaded = load_valid("render", args.paths)
    print_warnings(loaded)
    with collector_off():
        return _composed(args, loaded)


def _composed(args: argparse.Namespace, loaded: Loaded) -> int:
    """Reconcile the valid input and print it (``run``'s rest, with the collector off)."""
    fleet = at(fleet_of(loaded), args.now)
    cut = _clusters_cut(fleet, args.output)
    # Started before the deployments are reconciled: the child's clusters compose the same
    # without them, all but the few they place a replica on (see _printed).
    child = _start_clusters(fleet, cut[1], args.output) if cut[1] and not args.out else None
    try:
        return _reconciled(args, loaded, fleet, cut, child)
    finally:
        if child is not None:
            child.close()


def _reconciled(
    args: argparse.Namespace, loaded: Loaded, fleet: Fleet, cut: _Cut, child: Child | None
) -> int:
    """_composed's reconcile and print, ``child`` composing the later clusters of ``cut``."""
    rendered = render(fleet)
    caches = render_caches(fleet)
    backends = render_endpoints(fleet, rendered)
    fronts = render_fronts(
        loaded.of_kind(InferenceGateway), loaded.of_kind(ModelService), backends, fleet.clusters
    )
    destinations = loaded.of_kind(TelemetryDestination)
    telemetry = render_telemetry(destinations, loaded.of_kind(MetricMapping), fleet.clusters)
    scalers = render_autoscalers(loaded.of_kind(ModelDeployment), destinations)
    if args.out:
        clusters = render_clusters(fleet, rendered)
        write_files(
            rendered,
            args.out,
            args.output,
            caches,
            [*backends, *fronts],
            clusters,
            [*telemetry, *scalers],
        )
        clusters_summary = _clusters_summary(clusters)
    else:
        rest = [o for c in caches for o in c.in_order()]
        rest.extend(o for b in backends for o in b.in_order())
        rest.extend(o for f in fronts for o in f.in_order())
        rest.extend(o for t in telemetry for o in t.in_order())
        rest.extend(o for a in scalers for o in a.in_order())
        pieces, clusters_summary = _printed(fleet, rendered, rest, args.output, cut, child)
        # One write, as before: text the stream cannot encode fails it before any is written.
        sys.stdout.write("".join(pieces))
    print(
        summary(rendered, caches)
        + clusters_summary
        + _endpoints_summary(backends)
        + _fronts_summary(fronts)
        + _telemetry_summary(telemetry, scalers)
        + _try_it_summary(fronts),
        file=sys.stderr,
    )
    return 0


# From this many clusters, a forked child composes and writes most of them
# (docs/performance.md, "Composing and writing `render`'s output"); below, forking costs
# more than it saves.
FORK_FROM = 64

_ClusterPart = tuple[str, str, str]
"""A cluster's name, its printed text (as followed by more documents) and its summary line."""


_Cut = tuple[list[InferenceCluster], list[InferenceCluster]]
"""The clusters in name order: those this process composes, and the child's."""


def _clusters_cut(fleet: Fleet, output: str) -> _Cut:
    """The clusters in name order: those this process composes, and the child's (none
    below FORK_FROM clusters)."""
    ordered = sorted(fleet.clusters, key=lambda c: c.metadata.name or "")
    if len(ordered) < FORK_FROM:
        return ordered, []
    cut = len(ordered) * _OWN_SHARE[output] // 100
    return ordered[:cut], ordered[cut:]


# The percentage of the clusters (the first in name order) this process composes and
# writes; the child, which starts while this process reconciles the deployments, the rest.
# Writing YAML takes about four times as long as JSON (1,000 clusters' stacks: about 1.2 s
# against 0.3 s), so this process takes more of it after the reconcile.
_OWN_SHARE = {"json": 25, "yaml": 35}


def _start_clusters(fleet: Fleet, later: list[InferenceCluster], output: str) -> Child | None:
    """A forked child composing and writing ``later`` as if no deployment placed a replica
    on them (None where no child can start)."""
    return Child.start(lambda send: send(_cluster_parts(fleet, (), later, output)))


def _cluster_parts(
    fleet: Fleet,
    rendered: Sequence[RenderedDeployment],
    clusters: Sequence[InferenceCluster],
    output: str,
) -> list[_ClusterPart]:
    """Each cluster composed and written on its own (as followed by more), in order."""
    composed = render_clusters(fleet, rendered, clusters)
    objects = [list(c.in_order()) for c in composed]
    texts = yaml_parts(objects) if output == "yaml" else [indented_json(o) for o in objects]
    return [(c.name, text, _clusters_summary([c])) for c, text in zip(composed, texts, strict=True)]


def _printed(
    fleet: Fleet,
    rendered: Sequence[RenderedDeployment],
    rest: list[dict[str, Any]],
    output: str,
    cut: _Cut,
    child: Child | None,
) -> tuple[list[str], str]:
    """The printed text in pieces (the deployments' objects, the clusters', then ``rest``)
    and the clusters' summary lines.

    Where there are FORK_FROM clusters or more, ``child`` composed the later ones of
    ``cut``, in name order, each written on its own, while this process reconciled the deployments: as if no
    deployment placed a replica on them. That is what each composes unless a rendered
    deployment placed one there (its team namespace then joins the cluster's objects:
    ``clusters_placed``), so those few are composed again here. Each part is written as
    followed by more documents: every object is a mapping, whose YAML text is the same at
    the stream's end (only a scalar document is followed by ``...`` there), so the parts
    joined are the whole stream's. A child that cannot start, fails or answers wrongly is
    no child: its clusters are composed here, with the same errors.
    """
    first, later = cut
    head = [o for r in rendered for o in r.in_order()]
    own = render_clusters(fleet, rendered, first)
    head.extend(o for c in own for o in c.in_order())
    written = _written(head, output, True)  # while the child still writes its part
    parts = _answer(child, [c.metadata.name or "" for c in later])
    if parts is None:
        parts = _cluster_parts(fleet, rendered, later, output)
    else:
        placed = clusters_placed(rendered)
        parts = [
            _cluster_parts(fleet, rendered, [cluster], output)[0] if part[0] in placed else part
            for part, cluster in zip(parts, later, strict=True)
        ]
    texts = [written, *(text for _, text, _ in parts)]
    texts.append(_written(rest, output, False))
    summaries = _clusters_summary(own) + "".join(line for _, _, line in parts)
    pieces = [*array_pieces(texts), "\n"] if output == "json" else texts
    return pieces, summaries


def _written(objects: list[dict[str, Any]], output: str, followed: bool) -> str:
    """A part of the printed text: a JSON array's, or a YAML stream's (``followed``: more
    documents come after it)."""
    if output == "json":
        return indented_json(objects)
    return yaml_documents(objects, followed)


def _answer(child: Child | None, names: list[str]) -> list[_ClusterPart] | None:
    """The child's parts, one per cluster of ``names`` in order; None: no child, or no
    right answer."""
    if child is None:
        return None
    try:
        answer = child.receive()
    except ChildFailed:
        return None
    if (
        type(answer) is list
        and len(answer) == len(names)
        and all(
            type(part) is tuple and len(part) == 3 and all(type(x) is str for x in part)
            for part in answer
        )
        and [part[0] for part in answer] == names
    ):
        return [(name, text, line) for name, text, line in answer]
    return None


def serialise(objects: Sequence[dict[str, Any]], output: str) -> str:
    """A YAML stream or a JSON array; byte-identical for the same objects."""
    if output == "json":
        return indented_json(list(objects)) + "\n"
    return yaml_documents(objects)


def write_files(
    rendered: Sequence[RenderedDeployment],
    directory: str,
    output: str,
    caches: Sequence[RenderedCache] = (),
    backends: Sequence[RenderedEndpoint | RenderedFront] = (),
    shared: Sequence[RenderedCluster] = (),
    telemetry: Sequence[RenderedDestination | RenderedAutoscaler] = (),
) -> None:
    """control-plane.<ext> and one cluster-<name>.<ext> per cluster with Objects (docs/cli.md)."""
    os.makedirs(directory, exist_ok=True)
    per_cluster: dict[str, list[dict[str, Any]]] = {}
    parts: list[
        RenderedDeployment
        | RenderedCluster
        | RenderedCache
        | RenderedEndpoint
        | RenderedFront
        | RenderedDestination
        | RenderedAutoscaler
    ] = [
        *rendered,
        *shared,
        *caches,
        *backends,
        *telemetry,
    ]
    for r in parts:
        for cluster, obj in r.remote:
            per_cluster.setdefault(cluster, []).append(obj)
    files = {f"control-plane.{output}": [o for r in parts for o in r.control_plane()]}
    files.update({f"cluster-{c}.{output}": objs for c, objs in sorted(per_cluster.items())})
    for name, objects in files.items():
        with open(os.path.join(directory, name), "w", encoding="utf-8") as handle:
            handle.write(serialise(objects, output))


def _telemetry_summary(
    telemetry: Sequence[RenderedDestination], scalers: Sequence[RenderedAutoscaler]
) -> str:
    """One line per destination (the clusters sending), one per refused autoscaling opt-in."""
    lines = []
    for t in telemetry:
        sending = [c.name for c in t.result.status.clusters or ()]
        name = t.wire["metadata"]["name"]
        lines.append(f"\n{name} (TelemetryDestination): clusters {', '.join(sending) or 'none'}")
    for a in scalers:
        if a.result.problem is not None:
            meta = a.deployment.metadata
            lines.append(
                f"\n{namespace_of(meta.namespace)}/{meta.name} (ModelDeployment): no autoscaling: "
                f"{a.result.problem}"
            )
    return "".join(lines)


def summary(rendered: Sequence[RenderedDeployment], caches: Sequence[RenderedCache] = ()) -> str:
    """A few lines for people: replicas per cluster and the conditions, per deployment."""
    if not rendered:
        return "render: no ModelDeployments in the input" + _caches_summary(caches)
    replicas = sum(len(r.replicas) for r in rendered)
    clusters = {c for r in rendered for c, _ in r.remote}
    objects = sum(len(r.remote) for r in rendered)
    endpoints = sum(len(r.endpoints) for r in rendered)
    lines = [
        f"\nrender: {len(rendered)} deployments, {replicas} replicas, {objects} objects for "
        f"{len(clusters)} clusters, {endpoints} endpoints"
    ]
    for r in rendered:
        lines.extend(_deployment_summary(r))
    return "\n".join(lines) + _caches_summary(caches)


def _clusters_summary(clusters: Sequence[RenderedCluster]) -> str:
    """One line per InferenceCluster: its stack mode and phase, its objects, its components."""
    lines = []
    for c in clusters:
        status = c.stack.status
        names = ", ".join(i.name for i in status.items) or "none"
        lines.append(
            f"\n{printable(c.name)} (InferenceCluster): {status.components} stack {status.phase}, "
            f"{len(c.objects)} objects: {names}"
        )
    return "".join(lines)


def _endpoints_summary(backends: Sequence[RenderedEndpoint]) -> str:
    """One line per ModelEndpoint whose backend is not routable (an invalid URL)."""
    lines = []
    for b in backends:
        routing = b.result.conditions[0]
        if routing.status != "True":
            meta = b.endpoint.metadata
            lines.append(
                f"\n{namespace_of(meta.namespace)}/{meta.name} (ModelEndpoint): "
                f"{routing.reason}: {routing.message}"
            )
    return "".join(lines)


def _fronts_summary(fronts: Sequence[RenderedFront]) -> str:
    """One line per InferenceGateway and ModelService: its address and its conditions."""
    lines = []
    for f in fronts:
        meta = f.model.metadata
        ident = (
            meta.name
            if f.model.kind == "InferenceGateway"
            else (f"{namespace_of(meta.namespace)}/{meta.name}")
        )
        where = f.result.status.address or "no address yet"
        states = "; ".join(
            f"{c.type} {c.reason}: {printable(c.message or '')}" for c in f.result.conditions
        )
        lines.append(f"\n{printable(ident or '')} ({f.model.kind}): {printable(where)}; {states}")
    return "".join(lines)


def _try_it_summary(fronts: Sequence[RenderedFront]) -> str:
    """Last: the fleet's address and, per routed ModelService, a curl line to paste."""
    lines: list[str] = []
    for f in fronts:
        status = f.result.status
        if f.model.kind != "ModelService" or not isinstance(status, ModelServiceStatus):
            continue
        if not status.address or not status.model:
            continue
        body = json.dumps(
            {"model": status.model, "messages": [{"role": "user", "content": "Hello!"}]},
            separators=(",", ":"),
        )
        if not lines:
            lines.append(f"\nfleet address: {printable(status.address)}")
        lines.append(
            f"\ncurl {printable(status.address)}/v1/chat/completions "
            f"-H 'content-type: application/json' -d '{printable(body)}'"
        )
    return "".join(lines)


def _caches_summary(caches: Sequence[RenderedCache]) -> str:
    """One line per ModelCache: ready clusters and the ArtifactReady reason."""
    lines = []
    for c in caches:
        meta = c.model.metadata
        artifact = c.result.conditions[-1]
        ready = c.result.status.summary.ready if c.result.status.summary else ""
        lines.append(
            f"\n{namespace_of(meta.namespace)}/{meta.name} (ModelCache): {len(c.remote)} objects, {ready} clusters staged, "
            f"{artifact.reason}: {printable(artifact.message or '')}"
        )
    return "".join(lines)


def _deployment_summary(r: RenderedDeployment) -> list[str]:
    deployment = r.result.deployment
    status = r.result.status
    per_cluster: dict[str, int] = {}
    for replica in (d.object for d in r.result.replicas):
        name = replica.spec.cluster_name
        per_cluster[name] = per_cluster.get(name, 0) + 1
    where = ", ".join(f"{c} ({n})" for c, n in sorted(per_cluster.items())) or "no cluster"
    ident = f"{namespace_of(deployment.metadata.namespace)}/{deployment.metadata.name}"
    desired = deployment.spec.replicas
    lines = [f"{ident}: {status.total} of {desired} replicas on {where}"]
    # A condition message can quote observed input: escaped, so a row stays one line.
    rows = [
        (c.type, c.status, c.reason or "", printable(c.message or "")) for c in status.conditions
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        cells = [row[i].ljust(widths[i]) for i in range(3)] + [row[3]]
        lines.append(("  " + "  ".join(cells)).rstrip())
    return lines
