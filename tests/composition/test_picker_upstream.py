"""The default picker against what llm-d-router v0.10.0 itself needs and loads.

The upstream facts are kept here as data, each with the file it was read from at tag v0.10.0
of github.com/llm-d/llm-d-router, so a change to our picker that upstream would not accept
fails here.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from modelplane.composition import compose_replica

from .builders import cluster, manifests, on_cluster, replica, standalone_engine, user_picker
from .shapes import SHAPES

# The Role the picker needs, no more: config/charts/routerlib/templates/_rbac.yaml (pods)
# and config/charts/llm-d-router-gateway/templates/rbac.yaml (the rest) @ v0.10.0; what it
# lists and watches: pkg/epp/server/controller_manager.go and controller_config.go @ v0.10.0
# (InferenceObjective / InferenceModelRewrite from whichever group the server has, llm-d.ai
# first, else inference.networking.x-k8s.io).
UPSTREAM_PICKER_RBAC = {
    (group, resource, verb)
    for group, resources in (
        ("", ("pods",)),
        ("inference.networking.k8s.io", ("inferencepools",)),
        ("inference.networking.x-k8s.io", ("inferenceobjectives", "inferencemodelrewrites")),
        ("llm-d.ai", ("inferenceobjectives", "inferencemodelrewrites")),
    )
    for resource in resources
    for verb in ("get", "list", "watch")
}

# Flags the binary defines (pkg/epp/server/options.go @ v0.10.0, plus the zap logging
# flags); those marked deprecated there fail validation when set.
UPSTREAM_FLAGS = {
    "pool-name",
    "pool-namespace",
    "pool-group",
    "config-file",
    "config-text",
    "grpc-port",
    "grpc-health-port",
    "metrics-port",
    "tracing",
    "secure-serving",
    "metrics-endpoint-auth",
    "zap-encoder",
    "ha-enable-leader-election",
}
DEPRECATED_FLAGS = {
    "total-queued-requests-metric",
    "total-running-requests-metric",
    "kv-cache-usage-percentage-metric",
    "lora-info-metric",
    "cache-info-metric",
}

# Plugin types registered without deprecation (cmd/epp/runner/runner.go @ v0.10.0), the ones
# a default config can use, with the parameters each accepts (plugins parse parameters
# strictly: an unknown field fails startup, release notes PR #1134).
UPSTREAM_PLUGINS: dict[str, set[str]] = {
    "queue-scorer": set(),
    "kv-cache-utilization-scorer": set(),
    # pkg/epp/framework/plugins/scheduling/scorer/prefix/plugin.go @ v0.10.0
    "prefix-cache-scorer": {
        "prefixMatchInfoProducerName",
        "matchLengthWeight",
        "matchLengthScaleTokens",
    },
    # pkg/epp/framework/plugins/datalayer/source/metrics/datasource.go @ v0.10.0
    "metrics-data-source": {
        "scheme",
        "path",
        "port",
        "insecureSkipVerify",
        "caCertPath",
        "clientCertPath",
        "clientKeyPath",
        "interval",
    },
    # pkg/epp/framework/plugins/datalayer/extractor/metrics/README.md @ v0.10.0
    "core-metrics-extractor": {"engineLabelKey", "defaultEngine", "engineConfigs"},
}
DEPRECATED_PLUGINS = {
    "pd-profile-handler",
    "disagg-headers-handler",
    "prefill-header-handler",
    "by-label-selector",
    "by-label",
}
# pkg/epp/config/loader/configloader.go @ v0.10.0: the other group logs a DEPRECATION line.
CONFIG_API_VERSION = "llm-d.ai/v1alpha1"
DEPRECATED_CONFIG_FIELDS = {"saturationDetector", "parser"}

# config/charts/routerlib/templates/_deployment.yaml and values.yaml @ v0.10.0.
HEALTH_PORT = 9003
HEALTH_SERVICE = "inference-extension"
EXT_PROC_PORT = 9002
METRICS_PORT = 9090


def _default() -> dict[str, Any]:
    return on_cluster(compose_replica(replica(), cluster()))


def _rule_set(role: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_picker_role_grants_exactly_what_the_picker_lists_and_watches(shape: str) -> None:
    objs = on_cluster(compose_replica(*SHAPES[shape]))
    role = objs["epp-role"]
    # Every picker runs as the cluster's ServiceAccount, which that Role is bound to.
    pod = objs["epp"]["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == objs["epp-rolebinding"]["subjects"][0]["name"]
    assert objs["epp-rolebinding"]["roleRef"]["name"] == role["metadata"]["name"]
    assert role["kind"] == "Role"  # namespace-scoped: the picker caches one namespace
    assert _rule_set(role) == UPSTREAM_PICKER_RBAC
    for rule in role["rules"]:
        assert set(rule) == {"apiGroups", "resources", "verbs"}  # no resourceNames tricks


def _flags(args: list[str]) -> dict[str, str]:
    out = {}
    for arg in args:
        assert arg.startswith("--") and "=" in arg, arg
        name, _, value = arg[2:].partition("=")
        out[name] = value
    return out


def test_default_picker_flags_are_known_to_the_release_and_none_deprecated() -> None:
    container = _default()["epp"]["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.10.0"
    flags = _flags(container["args"])
    assert set(flags) <= UPSTREAM_FLAGS
    assert not set(flags) & DEPRECATED_FLAGS
    # Tracing defaults on in the binary and would export to localhost:4317.
    assert flags["tracing"] == "false"
    assert not [e for e in container["env"] if e["name"].startswith("OTEL_")]


def test_default_picker_probes_its_grpc_health_service() -> None:
    objs = _default()
    container = objs["epp"]["spec"]["template"]["spec"]["containers"][0]
    flags = _flags(container["args"])
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert int(flags["grpc-health-port"]) == ports["grpc-health"] == HEALTH_PORT
    for probe in ("livenessProbe", "readinessProbe"):
        assert container[probe]["grpc"] == {"port": HEALTH_PORT, "service": HEALTH_SERVICE}
    assert container["readinessProbe"]["periodSeconds"] == 2
    assert container["livenessProbe"]["initialDelaySeconds"] == 5


def test_default_picker_ports_meet_the_pool_and_the_service() -> None:
    objs = _default()
    container = objs["epp"]["spec"]["template"]["spec"]["containers"][0]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    flags = _flags(container["args"])
    assert int(flags["grpc-port"]) == ports["grpc"] == EXT_PROC_PORT
    assert ports["metrics"] == METRICS_PORT
    pool_ref = objs["inference-pool"]["spec"]["endpointPickerRef"]
    assert pool_ref["port"] == {"number": EXT_PROC_PORT}
    service_ports = {p["name"]: p for p in objs["epp-service"]["spec"]["ports"]}
    assert service_ports["grpc-ext-proc"]["targetPort"] == EXT_PROC_PORT
    assert service_ports["grpc-ext-proc"]["appProtocol"] == "kubernetes.io/h2c"
    assert service_ports["http-metrics"]["targetPort"] == METRICS_PORT


def test_default_picker_requests_cpu_and_memory() -> None:
    deployment = _default()["epp"]
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    # The chart refuses to render without both requests.
    assert set(container["resources"]["requests"]) == {"cpu", "memory"}
    assert "cpu" not in container["resources"].get("limits", {})


def test_default_config_loads_on_the_release_without_deprecation() -> None:
    objs = _default()
    text = objs["epp-config"]["data"]["epp-config.yaml"]
    config = json.loads(text)
    assert config["apiVersion"] == CONFIG_API_VERSION
    assert config["kind"] == "EndpointPickerConfig"
    assert not set(config) & DEPRECATED_CONFIG_FIELDS
    declared = set()
    for plugin in config["plugins"]:
        kind = plugin["type"]
        assert kind in UPSTREAM_PLUGINS and kind not in DEPRECATED_PLUGINS, kind
        assert set(plugin.get("parameters", {})) <= UPSTREAM_PLUGINS[kind], kind
        declared.add(plugin.get("name", kind))
    for profile in config["schedulingProfiles"]:
        for ref in profile["plugins"]:
            assert ref["pluginRef"] in declared
    # The config the picker reads is the one the pod template is checksummed with.
    pod = objs["epp"]["spec"]["template"]
    assert (
        pod["metadata"]["annotations"]["modelplane.ai/epp-config-checksum"]
        == hashlib.sha256(text.encode("utf-8")).hexdigest()
    )
    flags = _flags(pod["spec"]["containers"][0]["args"])
    mount = pod["spec"]["containers"][0]["volumeMounts"][0]["mountPath"]
    assert flags["config-file"] == f"{mount}/{next(iter(objs['epp-config']['data']))}"


def test_default_config_no_longer_reads_the_engine_block_size() -> None:
    # v0.10.0's prefix producer auto-tunes the block size from the engine's metrics.
    engine = standalone_engine()
    engine["members"][0]["template"]["spec"]["containers"][0]["args"].append("--block-size=32")
    objs = on_cluster(compose_replica(replica([engine]), cluster()))
    assert "epp-config" not in manifests(compose_replica(replica([engine]), cluster()))
    assert objs["epp-config"] == _default()["epp-config"]


def test_user_picker_keeps_its_own_command_line_and_no_metrics_port() -> None:
    rep = replica(
        serving={"mode": "Unified", "router": "EndpointPicker", "endpointPicker": user_picker()}
    )
    objs = manifests(compose_replica(rep, cluster()))
    container = objs["epp"]["spec"]["template"]["spec"]["containers"][0]
    assert "livenessProbe" not in container and "readinessProbe" not in container
    assert [p["name"] for p in objs["epp-service"]["spec"]["ports"]] == ["grpc-ext-proc"]
    # The same two-picker frame as the default's (tests/composition/test_picker_ha.py).
    assert objs["epp"]["spec"]["strategy"]["type"] == "RollingUpdate"
    assert "epp-disruption-budget" in objs
