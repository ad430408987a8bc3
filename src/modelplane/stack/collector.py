"""The OpenTelemetry collector each sending cluster runs: its generated configuration and values.

Pure: the cluster's name, the TelemetryDestinations that select it and every MetricMapping
in; the collector's configuration (what the chart's ``alternateConfig`` takes) and the Helm
values around it out. It scrapes engines, pickers, the gateway's proxies and the DCGM
exporter, stamps each series with the cluster and the deployment, replica, engine and role
of the pod it came from (a GPU series through the pod dcgm-exporter attributes it to),
renames onto the vocabulary (``stack/vocabulary.py``) and exports only the vocabulary, plus
what a destination passes through (docs/telemetry.md).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from modelplane.api.metricmapping import MetricMapping
from modelplane.api.telemetrydestination import TelemetryDestination
from modelplane.naming import (
    DEPLOYMENT_LABEL,
    DEPLOYMENT_NAMESPACE_LABEL,
    ENGINE_LABEL,
    GATEWAY_NAME,
    REPLICA_LABEL,
    ROLE_LABEL,
    SERVING_LABEL,
)
from modelplane.stack.vocabulary import (
    BASE_UNITS,
    BUILTIN_MAPPINGS,
    UNIT_FACTORS,
    VOCABULARY_BY_NAME,
)

# The collector-contrib release the chart runs (its appVersion) and the component types of
# that release we configure. Types are each component's metadata.yaml ``type`` at v0.158.0
# (open-telemetry/opentelemetry-collector and -contrib); the modules are in
# open-telemetry/opentelemetry-collector-releases v0.158.0
# distributions/otelcol-contrib/manifest.yaml (tests/stack/test_collector.py pins both).
COLLECTOR_RELEASE: Final = "0.158.0"
COLLECTOR_IMAGE: Final = "otel/opentelemetry-collector-contrib"
RECEIVERS: Final = frozenset({"prometheus"})
PROCESSORS: Final = frozenset(
    {"memory_limiter", "groupbyattrs", "transform", "k8s_attributes", "filter", "batch"}
)
EXPORTERS: Final = frozenset({"otlp_grpc", "otlp_http", "prometheus_remote_write"})
CONNECTORS: Final = frozenset({"forward"})
EXTENSIONS: Final = frozenset({"health_check"})
# What each destination exporter type names in the collector.
EXPORTER_TYPES: Final[Mapping[str, str]] = MappingProxyType(
    {
        "OTLPGRPC": "otlp_grpc",
        "OTLPHTTP": "otlp_http",
        "PrometheusRemoteWrite": "prometheus_remote_write",
    }
)

SCRAPE_INTERVAL: Final = "15s"
# dcgm-exporter's pod attribution labels (NVIDIA/dcgm-exporter 4.5.3-4.8.2
# internal/pkg/transformation/const.go).
DCGM_POD_LABEL: Final = "pod"
DCGM_NAMESPACE_LABEL: Final = "namespace"
# The labels every series leaves with: where it ran and whose it is.
IDENTITY: Final[tuple[tuple[str, str], ...]] = (
    ("deployment", DEPLOYMENT_LABEL),
    ("namespace", DEPLOYMENT_NAMESPACE_LABEL),
    ("replica", REPLICA_LABEL),
    ("engine", ENGINE_LABEL),
    ("role", ROLE_LABEL),
)
CLUSTER_ATTRIBUTE: Final = "cluster"
_NOT_LABEL = re.compile(r"[^a-zA-Z0-9_]")


def _sd_label(label: str) -> str:
    """A pod label as Prometheus service discovery names it."""
    return "__meta_kubernetes_pod_label_" + _NOT_LABEL.sub("_", label)


def _keep(source: str, regex: str) -> dict[str, object]:
    return {"source_labels": [source], "action": "keep", "regex": regex}


def _identity_relabels() -> list[dict[str, object]]:
    return [{"source_labels": [_sd_label(label)], "target_label": name} for name, label in IDENTITY]


def _job(name: str, keeps: list[dict[str, object]], path: str = "/metrics") -> dict[str, object]:
    return {
        "job_name": name,
        "scrape_interval": SCRAPE_INTERVAL,
        "metrics_path": path,
        "kubernetes_sd_configs": [{"role": "pod"}],
        "relabel_configs": keeps,
    }


def scrape_configs() -> list[dict[str, object]]:
    """What the collector scrapes: engines, pickers, the gateway's proxies, DCGM exporters."""
    port = "__meta_kubernetes_pod_container_port_name"
    return [
        # Engines: our serving pods, on the port the engine container names http.
        _job(
            "modelplane-engines",
            [_keep(_sd_label(SERVING_LABEL), ".+"), _keep(port, "http"), *_identity_relabels()],
        ),
        # Pickers: a deployment's pods without the serving label, on the port named metrics.
        _job(
            "modelplane-pickers",
            [
                _keep(_sd_label(DEPLOYMENT_LABEL), ".+"),
                {"source_labels": [_sd_label(SERVING_LABEL)], "action": "drop", "regex": ".+"},
                _keep(port, "metrics"),
                *_identity_relabels(),
            ],
        ),
        # The inference gateway's Envoy proxies (envoyproxy/gateway v1.8.3: the owning-gateway
        # label, the port named metrics, /stats/prometheus).
        _job(
            "modelplane-gateway",
            [
                _keep(_sd_label("gateway.envoyproxy.io/owning-gateway-name"), GATEWAY_NAME),
                _keep(port, "metrics"),
            ],
            "/stats/prometheus",
        ),
        # DCGM exporters, as their chart (app.kubernetes.io/name dcgm-exporter, port metrics)
        # or the GPU Operator (app nvidia-dcgm-exporter, port gpu-metrics) runs them.
        _job(
            "modelplane-dcgm",
            [
                {
                    "source_labels": [
                        _sd_label("app.kubernetes.io/name"),
                        _sd_label("app"),
                    ],
                    "separator": ";",
                    "action": "keep",
                    "regex": "dcgm-exporter;.*|.*;nvidia-dcgm-exporter",
                },
                _keep(port, "metrics|gpu-metrics"),
            ],
        ),
    ]


@dataclass(frozen=True, slots=True)
class Rename:
    """One rename the collector applies, built in or from a MetricMapping."""

    source: str
    target: str
    from_unit: str | None


def renames(mappings: Sequence[MetricMapping]) -> tuple[Rename, ...]:
    """The built-in renames, then every MetricMapping's, by name: a later one of the same
    source wins, since it runs last."""
    out = [Rename(m.source, m.target, m.from_unit) for m in BUILTIN_MAPPINGS]
    for mapping in sorted(mappings, key=lambda m: m.metadata.name or ""):
        out.extend(Rename(r.source, r.to, r.from_unit) for r in mapping.spec.metrics)
    return tuple(out)


def _quoted(text: str) -> str:
    # Names are held to metric-name characters by the API: no quote or backslash to escape.
    return '"' + text + '"'


def _names(rename: Rename) -> list[str]:
    """The names the source may arrive under: a counter by its family name and its sample."""
    known = VOCABULARY_BY_NAME.get(rename.target)
    if known is not None and known.type == "counter":
        stem = rename.source.removesuffix("_total")
        return [stem, stem + "_total"]
    return [rename.source]


def _where(rename: Rename) -> str:
    return " or ".join(f"metric.name == {_quoted(n)}" for n in _names(rename))


def vocabulary_statements(all_renames: Sequence[Rename]) -> list[str]:
    """OTTL metric statements: convert each source to its base unit, then rename it."""
    out: list[str] = []
    for rename in all_renames:
        where = _where(rename)
        if rename.from_unit is not None:
            factor = UNIT_FACTORS[rename.from_unit]
            unit = BASE_UNITS[rename.from_unit]
            out.append(f"scale_metric({factor!r}, {_quoted(unit)}) where {where}")
        out.append(f"set(metric.name, {_quoted(rename.target)}) where {where}")
    return out


def identity_statements(cluster: str) -> list[str]:
    """OTTL datapoint statements: the pod's identity found for a GPU series, and the cluster."""
    out = [
        f'set(datapoint.attributes["{name}"], resource.attributes["{name}"]) '
        f'where resource.attributes["{name}"] != nil'
        for name, _ in IDENTITY
    ]
    out.append(f'set(datapoint.attributes["{CLUSTER_ATTRIBUTE}"], {_quoted(cluster)})')
    return out


def env_name(destination_index: int, header_index: int) -> str:
    """The collector's environment variable carrying one header of one destination."""
    return f"MODELPLANE_DESTINATION_{destination_index}_HEADER_{header_index}"


def exporter_id(destination: TelemetryDestination) -> str:
    """The collector's id of a destination's exporter."""
    kind = EXPORTER_TYPES[destination.spec.exporter.type]
    return f"{kind}/{destination.metadata.name}"


def _exporter(index: int, destination: TelemetryDestination) -> dict[str, object]:
    spec = destination.spec.exporter
    config: dict[str, object] = {"endpoint": spec.endpoint}
    if spec.headers:
        config["headers"] = {
            h.name: "${env:" + env_name(index, j) + "}" for j, h in enumerate(spec.headers)
        }
    if spec.type == "PrometheusRemoteWrite":
        # Without it the identity the k8s_attributes step puts on the resource is dropped.
        config["resource_to_telemetry_conversion"] = {"enabled": True}
    return config


def _filter(destination: TelemetryDestination) -> dict[str, object]:
    """Drop every metric outside the vocabulary and the destination's passthrough."""
    keep = ['IsMatch(metric.name, "^modelplane_")']
    keep.extend(f"metric.name == {_quoted(n)}" for n in destination.spec.passthrough or ())
    return {"error_mode": "ignore", "metrics": {"metric": [f"not ({' or '.join(keep)})"]}}


def ordered(destinations: Sequence[TelemetryDestination]) -> list[TelemetryDestination]:
    """Destinations in name order: the order of their exporters and environment variables."""
    return sorted(destinations, key=lambda d: d.metadata.name or "")


def collector_config(
    cluster: str,
    destinations: Sequence[TelemetryDestination],
    mappings: Sequence[MetricMapping],
) -> dict[str, object]:
    """The collector's whole configuration for one cluster (chart value ``alternateConfig``)."""
    chosen = ordered(destinations)
    processors: dict[str, object] = {
        "memory_limiter": {
            "check_interval": "5s",
            "limit_percentage": 80,
            "spike_limit_percentage": 25,
        },
        # A DCGM series names the pod holding its GPU as data-point labels; the pod lookup
        # reads resource attributes, so they are moved there first.
        "groupbyattrs/gpu-pods": {"keys": [DCGM_POD_LABEL, DCGM_NAMESPACE_LABEL]},
        "transform/gpu-pods": {
            "error_mode": "ignore",
            "metric_statements": [
                'set(resource.attributes["k8s.pod.name"], resource.attributes["pod"]) '
                'where resource.attributes["pod"] != nil',
                'set(resource.attributes["k8s.namespace.name"], resource.attributes["namespace"]) '
                'where resource.attributes["pod"] != nil',
            ],
        },
        "k8s_attributes/gpu-pods": {
            "auth_type": "serviceAccount",
            "passthrough": False,
            "pod_association": [
                {
                    "sources": [
                        {"from": "resource_attribute", "name": "k8s.pod.name"},
                        {"from": "resource_attribute", "name": "k8s.namespace.name"},
                    ]
                }
            ],
            "extract": {
                "metadata": [],
                "labels": [
                    {"tag_name": name, "key": label, "from": "pod"} for name, label in IDENTITY
                ],
            },
        },
        "transform/identity": {
            "error_mode": "ignore",
            "metric_statements": identity_statements(cluster),
        },
        "transform/vocabulary": {
            "error_mode": "ignore",
            "metric_statements": vocabulary_statements(renames(mappings)),
        },
        "batch": {},
    }
    exporters: dict[str, object] = {}
    pipelines: dict[str, object] = {
        "metrics/collect": {
            "receivers": ["prometheus"],
            "processors": [
                "memory_limiter",
                "groupbyattrs/gpu-pods",
                "transform/gpu-pods",
                "k8s_attributes/gpu-pods",
                "transform/identity",
                "transform/vocabulary",
            ],
            "exporters": ["forward/vocabulary"],
        }
    }
    for index, destination in enumerate(chosen):
        name = destination.metadata.name or ""
        exporters[exporter_id(destination)] = _exporter(index, destination)
        processors[f"filter/{name}"] = _filter(destination)
        pipelines[f"metrics/{name}"] = {
            "receivers": ["forward/vocabulary"],
            "processors": [f"filter/{name}", "batch"],
            "exporters": [exporter_id(destination)],
        }
    return {
        "extensions": {"health_check": {"endpoint": "${env:MY_POD_IP}:13133"}},
        "receivers": {"prometheus": {"config": {"scrape_configs": scrape_configs()}}},
        "processors": processors,
        "connectors": {"forward/vocabulary": {}},
        "exporters": exporters,
        "service": {"extensions": ["health_check"], "pipelines": pipelines},
    }


def collector_env(destinations: Sequence[TelemetryDestination]) -> list[dict[str, object]]:
    """The collector container's environment: each header from its Secret, by reference."""
    out: list[dict[str, object]] = []
    for index, destination in enumerate(ordered(destinations)):
        for j, header in enumerate(destination.spec.exporter.headers or ()):
            ref = header.secret_key_ref
            out.append(
                {
                    "name": env_name(index, j),
                    "valueFrom": {"secretKeyRef": {"name": ref.name, "key": ref.key}},
                }
            )
    return out


# What the collector reads of the cluster: pods to scrape (service discovery) and, for the
# GPU join, pods, namespaces and ReplicaSets (the k8s_attributes processor's needs).
def cluster_role_rules() -> list[dict[str, object]]:
    """The collector's read-only ClusterRole rules (fresh data on every call)."""
    verbs = ["get", "list", "watch"]
    return [
        {"apiGroups": [""], "resources": ["pods", "namespaces"], "verbs": list(verbs)},
        {"apiGroups": ["apps"], "resources": ["replicasets"], "verbs": list(verbs)},
    ]


def collector_values(
    cluster: str,
    destinations: Sequence[TelemetryDestination],
    mappings: Sequence[MetricMapping],
) -> dict[str, object]:
    """The per-cluster Helm values: the generated configuration and the credentials' env."""
    values: dict[str, object] = {
        "alternateConfig": collector_config(cluster, destinations, mappings),
        "clusterRole": {"create": True, "rules": cluster_role_rules()},
    }
    env = collector_env(destinations)
    if env:
        values["extraEnvs"] = env
    return values


def component_types(config: Mapping[str, object]) -> dict[str, set[str]]:
    """Every component type a configuration names, by section (an id's part before ``/``)."""
    out: dict[str, set[str]] = {}
    for section in ("receivers", "processors", "exporters", "connectors", "extensions"):
        block = config.get(section) or {}
        assert isinstance(block, Mapping)
        out[section] = {str(key).split("/", 1)[0] for key in block}
    return out
