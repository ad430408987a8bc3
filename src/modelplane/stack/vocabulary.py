"""The one table of the fleet's metric vocabulary and the built-in mappings onto it.

docs/telemetry.md's tables are generated from here (``stack/table_doc.py``). Every built-in
mapping names a metric the release we run really exposes, with the file it was read from:
a rename of a name no release exports would map nothing, silently.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, Literal

MetricType = Literal["counter", "gauge", "histogram"]
Across = Literal["Sum", "Mean", "Max"]
FromUnit = Literal[
    "Milliseconds", "Microseconds", "Nanoseconds", "Mebibytes", "Percent", "Millijoules"
]

# The factor each source unit is multiplied by to reach the base unit its target names.
UNIT_FACTORS: Final[Mapping[str, float]] = MappingProxyType(
    {
        "Milliseconds": 0.001,
        "Microseconds": 0.000001,
        "Nanoseconds": 0.000000001,
        "Mebibytes": 1048576.0,
        "Percent": 0.01,
        "Millijoules": 0.001,
    }
)
# The unit each factor converts to, as the collector records it on the metric.
BASE_UNITS: Final[Mapping[str, str]] = MappingProxyType(
    {
        "Milliseconds": "s",
        "Microseconds": "s",
        "Nanoseconds": "s",
        "Mebibytes": "By",
        "Percent": "1",
        "Millijoules": "J",
    }
)


@dataclass(frozen=True, slots=True)
class Metric:
    """One name of the vocabulary."""

    name: str
    type: MetricType
    unit: str
    across: Across  # how a query combines a deployment's replicas
    meaning: str


@dataclass(frozen=True, slots=True)
class Source:
    """A component whose metrics are mapped, at the release we run, and where we read them."""

    name: str
    title: str
    release: str
    read_from: str


@dataclass(frozen=True, slots=True)
class Mapping_:
    """A built-in rename: ``source`` metric of ``component`` to vocabulary ``target``."""

    component: str
    source: str  # the family name (a counter without its _total sample suffix)
    target: str
    from_unit: FromUnit | None = None


SOURCES: Final[tuple[Source, ...]] = (
    Source(
        "vllm",
        "vLLM",
        "v0.23.0",
        "vllm-project/vllm vllm/v1/metrics/loggers.py (PrometheusStatLogger; the stored copy, "
        "commit 005a810b: the v0.23.0 tag is over the fetch limit); the queue, running and "
        "KV-cache names are also llm-d-router v0.10.0's defaults for vLLM "
        "(pkg/epp/framework/plugins/datalayer/extractor/metrics/factories.go)",
    ),
    Source(
        "sglang",
        "SGLang",
        "served with --enable-metrics",
        "sgl-project/sglang python/sglang/srt/metrics/collector.py (SchedulerMetricsCollector, "
        "TokenizerMetricsCollector; the stored copy, commit 00ae9c15); the queue, running and "
        "token-usage names are llm-d-router v0.10.0's defaults for SGLang (factories.go)",
    ),
    Source(
        "picker",
        "llm-d endpoint picker",
        "v0.10.0",
        "llm-d/llm-d-router v0.10.0 pkg/epp/metrics/llm_d_router_metrics.go (subsystem llm_d_epp, "
        "no namespace)",
    ),
    Source(
        "gateway",
        "Envoy (Envoy Gateway's proxy)",
        "v1.8.3",
        "envoyproxy/gateway v1.8.3 charts/gateway-addons-helm/dashboards/envoy-clusters.json and "
        "envoy-proxy-global.json (the stats its proxies serve at /stats/prometheus on the port "
        "named metrics, internal/infrastructure/kubernetes/proxy/resource.go); Envoy times in "
        "milliseconds",
    ),
    Source(
        "dcgm",
        "NVIDIA DCGM exporter",
        "4.5.3-4.8.2",
        "NVIDIA/dcgm-exporter 4.5.3-4.8.2 etc/default-counters.csv (the chart's default counters); "
        "pod attribution labels pod and namespace, internal/pkg/transformation/const.go",
    ),
)

VOCABULARY: Final[tuple[Metric, ...]] = (
    Metric("modelplane_requests_waiting", "gauge", "1", "Sum", "requests queued in the engine"),
    Metric("modelplane_requests_running", "gauge", "1", "Sum", "requests in the engine's batch"),
    Metric(
        "modelplane_kv_cache_utilization_ratio",
        "gauge",
        "1",
        "Max",
        "KV-cache occupancy, 0 to 1",
    ),
    Metric("modelplane_requests_preempted", "counter", "1", "Sum", "requests preempted"),
    Metric("modelplane_prompt_tokens", "counter", "1", "Sum", "prompt tokens processed"),
    Metric("modelplane_generation_tokens", "counter", "1", "Sum", "tokens generated"),
    Metric(
        "modelplane_request_ttft_seconds",
        "histogram",
        "s",
        "Sum",
        "time to the first token, as the engine measures it",
    ),
    Metric(
        "modelplane_request_duration_seconds",
        "histogram",
        "s",
        "Sum",
        "end-to-end request latency, as the engine measures it",
    ),
    Metric(
        "modelplane_request_queue_seconds",
        "histogram",
        "s",
        "Sum",
        "time a request waited before the engine ran it",
    ),
    Metric("modelplane_picker_requests", "counter", "1", "Sum", "requests the picker routed"),
    Metric("modelplane_picker_request_errors", "counter", "1", "Sum", "requests the picker failed"),
    Metric(
        "modelplane_picker_ttft_seconds",
        "histogram",
        "s",
        "Sum",
        "time to the first token, as the picker saw it",
    ),
    Metric(
        "modelplane_picker_ready_endpoints",
        "gauge",
        "1",
        "Max",
        "engine endpoints the picker may route to",
    ),
    Metric(
        "modelplane_picker_scheduling_seconds",
        "histogram",
        "s",
        "Sum",
        "time the picker spent choosing an endpoint",
    ),
    Metric(
        "modelplane_frontend_requests",
        "counter",
        "1",
        "Sum",
        "requests the gateway received",
    ),
    Metric(
        "modelplane_frontend_request_duration_seconds",
        "histogram",
        "s",
        "Sum",
        "what the caller waited, measured at the gateway",
    ),
    Metric(
        "modelplane_gateway_upstream_request_duration_seconds",
        "histogram",
        "s",
        "Sum",
        "time from the gateway to a backend and back",
    ),
    Metric(
        "modelplane_gpu_utilization_ratio",
        "gauge",
        "1",
        "Mean",
        "fraction of time the GPU was busy",
    ),
    Metric(
        "modelplane_gpu_tensor_active_ratio",
        "gauge",
        "1",
        "Mean",
        "fraction of cycles the tensor pipe was active",
    ),
    Metric("modelplane_gpu_memory_used_bytes", "gauge", "By", "Sum", "framebuffer memory in use"),
    Metric("modelplane_gpu_power_watts", "gauge", "W", "Sum", "power draw"),
    Metric("modelplane_gpu_temperature_celsius", "gauge", "Cel", "Max", "GPU temperature"),
    Metric(
        "modelplane_gpu_energy_joules",
        "counter",
        "J",
        "Sum",
        "energy drawn since the driver loaded",
    ),
)

BUILTIN_MAPPINGS: Final[tuple[Mapping_, ...]] = (
    Mapping_("vllm", "vllm:num_requests_waiting", "modelplane_requests_waiting"),
    Mapping_("vllm", "vllm:num_requests_running", "modelplane_requests_running"),
    # Named _perc, but a fraction: "1 means 100 percent usage" (its documentation string).
    Mapping_("vllm", "vllm:kv_cache_usage_perc", "modelplane_kv_cache_utilization_ratio"),
    Mapping_("vllm", "vllm:num_preemptions", "modelplane_requests_preempted"),
    Mapping_("vllm", "vllm:prompt_tokens", "modelplane_prompt_tokens"),
    Mapping_("vllm", "vllm:generation_tokens", "modelplane_generation_tokens"),
    Mapping_("vllm", "vllm:time_to_first_token_seconds", "modelplane_request_ttft_seconds"),
    Mapping_("vllm", "vllm:e2e_request_latency_seconds", "modelplane_request_duration_seconds"),
    Mapping_("vllm", "vllm:request_queue_time_seconds", "modelplane_request_queue_seconds"),
    Mapping_("sglang", "sglang:num_queue_reqs", "modelplane_requests_waiting"),
    Mapping_("sglang", "sglang:num_running_reqs", "modelplane_requests_running"),
    Mapping_("sglang", "sglang:token_usage", "modelplane_kv_cache_utilization_ratio"),
    Mapping_("sglang", "sglang:time_to_first_token_seconds", "modelplane_request_ttft_seconds"),
    Mapping_("sglang", "sglang:e2e_request_latency_seconds", "modelplane_request_duration_seconds"),
    Mapping_("picker", "llm_d_epp_request_total", "modelplane_picker_requests"),
    Mapping_("picker", "llm_d_epp_request_error_total", "modelplane_picker_request_errors"),
    Mapping_("picker", "llm_d_epp_request_ttft_seconds", "modelplane_picker_ttft_seconds"),
    Mapping_("picker", "llm_d_epp_ready_endpoints", "modelplane_picker_ready_endpoints"),
    Mapping_(
        "picker",
        "llm_d_epp_scheduler_e2e_duration_seconds",
        "modelplane_picker_scheduling_seconds",
    ),
    Mapping_("gateway", "envoy_http_downstream_rq", "modelplane_frontend_requests"),
    Mapping_(
        "gateway",
        "envoy_http_downstream_rq_time",
        "modelplane_frontend_request_duration_seconds",
        "Milliseconds",
    ),
    Mapping_(
        "gateway",
        "envoy_cluster_upstream_rq_time",
        "modelplane_gateway_upstream_request_duration_seconds",
        "Milliseconds",
    ),
    Mapping_("dcgm", "DCGM_FI_DEV_GPU_UTIL", "modelplane_gpu_utilization_ratio", "Percent"),
    Mapping_("dcgm", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "modelplane_gpu_tensor_active_ratio"),
    Mapping_("dcgm", "DCGM_FI_DEV_FB_USED", "modelplane_gpu_memory_used_bytes", "Mebibytes"),
    Mapping_("dcgm", "DCGM_FI_DEV_POWER_USAGE", "modelplane_gpu_power_watts"),
    Mapping_("dcgm", "DCGM_FI_DEV_GPU_TEMP", "modelplane_gpu_temperature_celsius"),
    Mapping_(
        "dcgm",
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        "modelplane_gpu_energy_joules",
        "Millijoules",
    ),
)

VOCABULARY_BY_NAME: Final[Mapping[str, Metric]] = MappingProxyType({m.name: m for m in VOCABULARY})
SOURCES_BY_NAME: Final[Mapping[str, Source]] = MappingProxyType({s.name: s for s in SOURCES})
