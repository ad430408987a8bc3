"""The collector each sending cluster runs: only components of the pinned release, only names
the pinned engines, picker, gateway and DCGM exporter really export, credentials by
reference only, and the KEDA recipe valid against KEDA's CRD."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from modelplane.api import InferenceCluster, MetricMapping, ModelDeployment, TelemetryDestination
from modelplane.cli.main import main
from modelplane.reconcile.autoscaling import autoscaler
from modelplane.reconcile.cluster import ClassLookups, compose_cluster
from modelplane.reconcile.telemetry import reconcile_destination
from modelplane.stack.collector import (
    COLLECTOR_RELEASE,
    collector_config,
    component_types,
    renames,
    vocabulary_statements,
)
from modelplane.stack.components import component
from modelplane.stack.table_doc import END, TELEMETRY_BEGIN, telemetry_generated
from modelplane.stack.vocabulary import BUILTIN_MAPPINGS, SOURCES_BY_NAME, VOCABULARY
from tests.builders import seed_deployment
from tests.composition.schemas import validate_manifest
from tests.paths import EXAMPLES, REPO

FIXTURE = REPO / "tests" / "fixtures" / "telemetry"
# The values of the Secrets the fixture's destination names (mimir-write on each cluster,
# mimir-read in ml-team): the platform creates them; no rendered object may carry one.
SECRET_VALUES = ("Bearer s3cr3t-write-token", "s3cr3t-read-token")

# Every component type the generated configuration may name, with the module that provides
# it in open-telemetry/opentelemetry-collector-releases v0.158.0
# distributions/otelcol-contrib/manifest.yaml. Types: each module's metadata.yaml `type` at
# v0.158.0 (open-telemetry/opentelemetry-collector v0.158.0: otlp_grpc, deprecated otlp;
# otlp_http, deprecated otlphttp; batch; memory_limiter; forward). Contrib: k8s_attributes
# (renamed from k8sattributes; the opentelemetry-collector chart 0.170.0 _helpers.tpl rewrites
# the old name for this appVersion), prometheus_remote_write (renamed from
# prometheusremotewrite, opentelemetry-collector-contrib pull request 48705, merged
# 2026-05-27, before v0.158.0), health_check, prometheus, transform, filter, groupbyattrs.
PINNED: dict[str, dict[str, str]] = {
    "receivers": {"prometheus": "contrib/receiver/prometheusreceiver"},
    "processors": {
        "memory_limiter": "collector/processor/memorylimiterprocessor",
        "batch": "collector/processor/batchprocessor",
        "groupbyattrs": "contrib/processor/groupbyattrsprocessor",
        "transform": "contrib/processor/transformprocessor",
        "k8s_attributes": "contrib/processor/k8sattributesprocessor",
        "filter": "contrib/processor/filterprocessor",
    },
    "exporters": {
        "otlp_grpc": "collector/exporter/otlpexporter",
        "otlp_http": "collector/exporter/otlphttpexporter",
        "prometheus_remote_write": "contrib/exporter/prometheusremotewriteexporter",
    },
    "connectors": {"forward": "collector/connector/forwardconnector"},
    "extensions": {"health_check": "contrib/extension/healthcheckextension"},
}

# What each pinned release exports, as read at its source (stack/vocabulary.py SOURCES).
EXPORTED: dict[str, frozenset[str]] = {
    # vllm/v1/metrics/loggers.py PrometheusStatLogger (counters by family name).
    "vllm": frozenset(
        {
            "vllm:num_requests_running",
            "vllm:num_requests_waiting",
            "vllm:kv_cache_usage_perc",
            "vllm:prefix_cache_hits",
            "vllm:num_preemptions",
            "vllm:prompt_tokens",
            "vllm:generation_tokens",
            "vllm:time_to_first_token_seconds",
            "vllm:time_per_output_token_seconds",
            "vllm:e2e_request_latency_seconds",
            "vllm:request_queue_time_seconds",
            "vllm:request_prefill_time_seconds",
            "vllm:request_decode_time_seconds",
        }
    ),
    # python/sglang/srt/metrics/collector.py.
    "sglang": frozenset(
        {
            "sglang:num_running_reqs",
            "sglang:num_queue_reqs",
            "sglang:token_usage",
            "sglang:time_to_first_token_seconds",
            "sglang:e2e_request_latency_seconds",
        }
    ),
    # llm-d/llm-d-router v0.10.0 pkg/epp/metrics/llm_d_router_metrics.go: subsystem llm_d_epp.
    "picker": frozenset(
        {
            "llm_d_epp_request_total",
            "llm_d_epp_request_error_total",
            "llm_d_epp_request_duration_seconds",
            "llm_d_epp_request_ttft_seconds",
            "llm_d_epp_ready_endpoints",
            "llm_d_epp_scheduler_e2e_duration_seconds",
            "llm_d_epp_average_queue_size",
        }
    ),
    # envoyproxy/gateway v1.8.3 charts/gateway-addons-helm/dashboards (Envoy's own stats).
    "gateway": frozenset(
        {
            "envoy_http_downstream_rq",  # served as envoy_http_downstream_rq_total
            "envoy_http_downstream_rq_time",
            "envoy_cluster_upstream_rq_time",
            "envoy_cluster_upstream_rq",
        }
    ),
    # NVIDIA/dcgm-exporter 4.5.3-4.8.2 etc/default-counters.csv.
    "dcgm": frozenset(
        {
            "DCGM_FI_DEV_GPU_UTIL",
            "DCGM_FI_DEV_FB_USED",
            "DCGM_FI_DEV_GPU_TEMP",
            "DCGM_FI_DEV_POWER_USAGE",
            "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
            "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        }
    ),
}


def _load(kind: type, path: str) -> list:
    docs = yaml.safe_load_all((FIXTURE / path).read_text())
    return [kind.model_validate(d) for d in docs if d["kind"] == kind.__name__]


DESTINATIONS: list[TelemetryDestination] = _load(TelemetryDestination, "telemetry.yaml")
MAPPINGS: list[MetricMapping] = _load(MetricMapping, "telemetry.yaml")


def _rendered(capsys: pytest.CaptureFixture[str]) -> list[dict]:
    assert main(["render", str(EXAMPLES / "fleet"), str(FIXTURE)]) == 0
    return list(yaml.safe_load_all(capsys.readouterr().out))


def test_the_chart_runs_the_release_whose_components_are_pinned() -> None:
    collector = component("otel-collector")
    assert collector.chart is not None and collector.chart.version == "0.170.0"
    assert collector.release == f"v{COLLECTOR_RELEASE}" == "v0.158.0"
    assert collector.wait


def test_the_generated_config_names_only_components_of_the_pinned_release() -> None:
    config = collector_config("eu-west-1", DESTINATIONS, MAPPINGS)
    for section, types in component_types(config).items():
        assert types <= PINNED[section].keys(), (section, types - PINNED[section].keys())
    # Every pipeline names only components the config defines.
    defined = {k for s in ("receivers", "processors", "exporters", "connectors") for k in config[s]}
    for pipeline in config["service"]["pipelines"].values():
        for part in ("receivers", "processors", "exporters"):
            assert set(pipeline[part]) <= defined


@pytest.mark.parametrize("exporter", ["OTLPGRPC", "OTLPHTTP", "PrometheusRemoteWrite"])
def test_every_exporter_type_is_a_pinned_component(exporter: str) -> None:
    destination = DESTINATIONS[0].model_copy(
        update={
            "spec": DESTINATIONS[0].spec.model_copy(
                update={
                    "exporter": DESTINATIONS[0].spec.exporter.model_copy(update={"type": exporter})
                }
            )
        }
    )
    types = component_types(collector_config("c", [destination], []))
    assert types["exporters"] <= PINNED["exporters"].keys()


@pytest.mark.parametrize("mapping", BUILTIN_MAPPINGS, ids=lambda m: m.source)
def test_every_builtin_mapping_maps_a_metric_its_release_exports(mapping: object) -> None:
    assert mapping.component in SOURCES_BY_NAME  # type: ignore[attr-defined]
    assert mapping.source in EXPORTED[mapping.component]  # type: ignore[attr-defined]
    assert mapping.target in {m.name for m in VOCABULARY}  # type: ignore[attr-defined]


def test_every_vocabulary_name_has_a_builtin_source() -> None:
    assert {m.name for m in VOCABULARY} == {m.target for m in BUILTIN_MAPPINGS}


def test_a_unit_is_converted_before_the_rename_and_user_mappings_run_last() -> None:
    statements = vocabulary_statements(renames(MAPPINGS))
    ttft = [s for s in statements if "my_engine_ttft_ms" in s]
    assert ttft == [
        'scale_metric(0.001, "s") where metric.name == "my_engine_ttft_ms"',
        'set(metric.name, "modelplane_request_ttft_seconds") where metric.name == "my_engine_ttft_ms"',
    ]
    assert statements[-1].endswith('"my_engine_ttft_ms"')
    dcgm = [s for s in statements if "DCGM_FI_DEV_FB_USED" in s]
    assert dcgm[0].startswith("scale_metric(1048576.0")


def test_only_the_vocabulary_and_the_passthrough_leave_the_cluster() -> None:
    config = collector_config("eu-west-1", DESTINATIONS, MAPPINGS)
    drop = config["processors"]["filter/mimir"]["metrics"]["metric"]
    assert drop == [
        'not (IsMatch(metric.name, "^modelplane_") or metric.name == "vllm:num_requests_swapped")'
    ]


def test_gpu_series_are_joined_to_the_pod_dcgm_exporter_attributes_them_to() -> None:
    config = collector_config("eu-west-1", DESTINATIONS, [])
    processors = config["processors"]
    assert processors["groupbyattrs/gpu-pods"] == {"keys": ["pod", "namespace"]}
    labels = processors["k8s_attributes/gpu-pods"]["extract"]["labels"]
    assert [label["tag_name"] for label in labels] == [
        "deployment",
        "namespace",
        "replica",
        "engine",
        "role",
    ]
    identity = processors["transform/identity"]["metric_statements"]
    assert identity[-1] == 'set(datapoint.attributes["cluster"], "eu-west-1")'


def _collectors(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The collector Releases among everything rendered (each cluster's stack has others)."""
    return [
        o
        for o in objects
        if o["kind"] == "Release"
        and o["spec"]["forProvider"]["chart"]["name"] == "opentelemetry-collector"
    ]


def test_render_shows_a_collector_only_on_the_selected_managed_clusters(
    capsys: pytest.CaptureFixture[str],
) -> None:
    objects = _rendered(capsys)
    releases = _collectors(objects)
    # tier=production selects us-east-1 (a GKE source: not run here) and eu-west-1;
    # ap-south-1 (tier research) is not selected.
    assert [r["metadata"]["name"].split("-stack-")[0] for r in releases] == ["eu-west-1"]
    for release in releases:
        validate_manifest(release)
        config = release["spec"]["forProvider"]["values"]["alternateConfig"]
        for section, types in component_types(config).items():
            assert types <= PINNED[section].keys()
    (destination,) = [o for o in objects if o["kind"] == "TelemetryDestination"]
    assert [c["name"] for c in destination["status"]["clusters"]] == ["eu-west-1", "us-east-1"]


def test_no_credential_appears_in_any_rendered_object(capsys: pytest.CaptureFixture[str]) -> None:
    objects = _rendered(capsys)
    text = yaml.safe_dump_all(objects)
    for value in SECRET_VALUES:
        assert value not in text
    (release,) = _collectors(objects)
    env = release["spec"]["forProvider"]["values"]["extraEnvs"]
    assert env == [
        {
            "name": "MODELPLANE_DESTINATION_0_HEADER_0",
            "valueFrom": {"secretKeyRef": {"name": "mimir-write", "key": "authorization"}},
        }
    ]
    exporter = release["spec"]["forProvider"]["values"]["alternateConfig"]["exporters"]
    assert exporter["prometheus_remote_write/mimir"]["headers"] == {
        "Authorization": "${env:MODELPLANE_DESTINATION_0_HEADER_0}"
    }


def test_the_scaled_object_targets_the_scale_subresource_and_validates(
    capsys: pytest.CaptureFixture[str],
) -> None:
    objects = _rendered(capsys)
    (scaled,) = [o for o in objects if o["kind"] == "ScaledObject"]
    (auth,) = [o for o in objects if o["kind"] == "TriggerAuthentication"]
    validate_manifest(scaled)
    validate_manifest(auth)
    assert scaled["spec"]["scaleTargetRef"] == {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelDeployment",
        "name": "qwen3-8b",
    }
    assert scaled["spec"]["minReplicaCount"] == 0  # KEDA parks it: spec.replicas 0
    trigger = scaled["spec"]["triggers"][0]
    assert trigger["metadata"]["query"] == (
        'sum(modelplane_requests_waiting{deployment="qwen3-8b",namespace="ml-team"})'
    )
    assert trigger["authenticationRef"] == {"name": auth["metadata"]["name"]}
    assert auth["spec"]["secretTargetRef"] == [
        {"parameter": "bearerToken", "name": "mimir-read", "key": "bearerToken"}
    ]


@pytest.mark.parametrize(
    ("annotations", "problem"),
    [
        ({"modelplane.ai/autoscale-destination": "nope"}, "no TelemetryDestination nope"),
        (
            {
                "modelplane.ai/autoscale-destination": "mimir",
                "modelplane.ai/autoscale-max-replicas": "101",
            },
            "is not an integer 1 to 100",
        ),
        (
            {
                "modelplane.ai/autoscale-destination": "mimir",
                "modelplane.ai/autoscale-min-replicas": "5",
                "modelplane.ai/autoscale-max-replicas": "2",
            },
            "is over the maximum 2",
        ),
    ],
)
def test_an_opt_in_that_cannot_be_honoured_composes_nothing_and_says_why(
    annotations: dict[str, str], problem: str
) -> None:
    raw = seed_deployment()
    raw["metadata"]["annotations"] = annotations
    model = ModelDeployment.model_validate(raw)
    result = autoscaler(model, DESTINATIONS)
    assert result is not None and result.objects == () and problem in (result.problem or "")


def _cluster(labels: dict[str, str]) -> InferenceCluster:
    return InferenceCluster.model_validate(
        {
            "apiVersion": "modelplane.ai/v1alpha1",
            "kind": "InferenceCluster",
            "metadata": {"name": "c1", "labels": labels},
            "spec": {
                "cluster": {"source": "Existing", "existing": {"secretRef": {"name": "k"}}},
                "stack": "Standard",
            },
        }
    )


def _collector_keys(composition: object) -> list[str]:
    return [o.key for o in composition.objects if "otel-collector" in o.key]  # type: ignore[attr-defined]


def test_the_cluster_composes_its_collector_only_while_a_destination_selects_it() -> None:
    classes = ClassLookups({}, (), ())
    selected = compose_cluster(_cluster({"tier": "production"}), classes, {}, (), DESTINATIONS, [])
    assert "stack-otel-collector" in _collector_keys(selected)
    other = compose_cluster(_cluster({"tier": "research"}), classes, {}, (), DESTINATIONS, [])
    assert _collector_keys(other) == []
    none_fetched = compose_cluster(_cluster({"tier": "production"}), classes, {}, ())
    assert _collector_keys(none_fetched) == []


def test_destination_status_names_each_cluster_and_its_collector() -> None:
    cluster = _cluster({"tier": "production"})
    result = reconcile_destination(DESTINATIONS[0], [cluster])
    (entry,) = result.status.clusters or ()
    assert (entry.name, entry.ready, entry.message) == ("c1", False, "collector not reported yet")
    assert result.conditions[0].reason == "CollectorsNotReady"
    nothing = reconcile_destination(DESTINATIONS[0], [_cluster({})])
    assert nothing.conditions[0].reason == "NoClusters"


def test_docs_telemetry_md_is_generated_from_the_vocabulary() -> None:
    text = (REPO / "docs" / "telemetry.md").read_text(encoding="utf-8")
    start = text.index(TELEMETRY_BEGIN)
    end = text.index(END, start) + len(END)
    assert text[start:end] == telemetry_generated(), "run `make stack-doc`"
