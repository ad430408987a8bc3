"""The one table of the serving stack (docs/stack.md, generated from it).

Every component a workload cluster may need: the released chart and version we install,
the values we rely on, what it serves (what a Provided cluster must show instead), what it
needs first, and where each fact was read. Composition facts that depend on a component's
release (Grove's env order, LWS's env names) read the version from here, and their tests
fail when a fact's recorded release differs from the installed one.

Order is install order: a component comes after every component it needs.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from modelplane.naming import (
    AI_GATEWAY_METADATA_NAMESPACE,
    CALLER_HEADER,
    CALLER_METADATA_KEY,
    GATEWAY_NAME,
    MODEL_HEADER,
    SYSTEM_NAMESPACE,
    USAGE_COSTS,
)
from modelplane.stack.collector import COLLECTOR_IMAGE, COLLECTOR_RELEASE
from modelplane.stack.model import (
    Chart,
    Component,
    Manifest,
    Need,
    PresentObject,
    ServedApi,
    Value,
)

# The gateway class a Managed stack creates for its Envoy Gateway; the Gateway in
# modelplane-system names it. Envoy Gateway programs every class whose controllerName is its
# own (envoyproxy/gateway v1.8.3 api/v1alpha1/envoygateway_types.go, the default controller name).
GATEWAY_CLASS_NAME: Final = "modelplane"
ENVOY_GATEWAY_CONTROLLER: Final = "gateway.envoyproxy.io/gatewayclass-controller"
GATEWAY_LISTENER_PORT: Final = 80
# The HTTPS listener's port, where a cluster declares spec.gateway.tls: the https default, so
# its endpoints' origin https://<hostname> needs no port.
GATEWAY_TLS_PORT: Final = 443
# Where Envoy AI Gateway serves Anthropic's Messages API: /anthropic/v1/messages, its chart's
# default (ai-gateway-helm values.yaml endpointConfig.anthropic @ v1.1.0). Not the root: the
# extproc keeps one processor per path and registers the Anthropic /v1/models after the OpenAI
# one (cmd/extproc/mainlib/main.go, internal/extproc/server.go Register), so an empty prefix
# would answer OpenAI callers' GET /v1/models in Anthropic's list format.
ANTHROPIC_PREFIX: Final = "/anthropic"
# The EnvoyProxy our GatewayClass names: every Gateway of the class writes one usage record per
# request to its proxy's stdout (envoyproxy/gateway api/v1alpha1/accesslogging_types.go @
# v1.8.3). Route-level: one record per request, whatever its retries; only requests that name
# a model (Envoy AI Gateway sets the header from the body).
USAGE_PROXY_NAME: Final = "modelplane"
USAGE_LOG_MATCH: Final = f"request.headers['{MODEL_HEADER}'] != ''"
USAGE_LOG_FIELDS: Final[Mapping[str, str]] = MappingProxyType(
    {
        "start_time": "%START_TIME%",
        "request_id": "%REQ(X-REQUEST-ID)%",
        # The caller as the gateway saw it before the router (CALLER_LOG_ATTRIBUTES): the
        # header itself is gone by the end of the stream, removed for every backend.
        "caller": f"%DYNAMIC_METADATA({AI_GATEWAY_METADATA_NAMESPACE}:{CALLER_METADATA_KEY})%",
        "service": f"%REQ({MODEL_HEADER})%",
        # <namespace>/<AIServiceBackend>/route/...: the endpoint that answered, set before
        # the request goes upstream, so a failed request names it too.
        "endpoint": f"%DYNAMIC_METADATA({AI_GATEWAY_METADATA_NAMESPACE}:backend_name)%",
        # What the route's llmRequestCosts captured; "-" for a request that failed.
        **{
            field: f"%DYNAMIC_METADATA({AI_GATEWAY_METADATA_NAMESPACE}:{key})%"
            for key, _, field in USAGE_COSTS
        },
        "status": "%RESPONSE_CODE%",
        "response_flags": "%RESPONSE_FLAGS%",
        "duration_ms": "%DURATION%",
        "path": "%REQ(:PATH)%",
    }
)
# Envoy AI Gateway's access-log header mapping (ai-gateway-helm values.yaml
# controller.logRequestHeaderAttributes @ v1.1.0, "header:attribute" pairs). Its controller
# inserts Envoy's header_to_metadata filter into every listener just before the router, a rule
# per header writing its value under io.envoy.ai_gateway:<attribute>
# (internal/extensionserver/header_to_metadata.go, called from post_translate_modify.go
# PostTranslateModify), and hands its extproc the same mapping (extproc_builder.go). Setting it
# replaces the default agent-session-id:session.id (internal/requestheaderattrs/resolve.go).
CALLER_LOG_ATTRIBUTES: Final = f"{CALLER_HEADER}:{CALLER_METADATA_KEY}"
# The GKE GatewayClass of the Gateway we create on a cluster we provisioned on GKE: a regional
# external Application Load Balancer (GKE "GatewayClass capabilities"), the class
# gateway-api-inference-extension v1.5.0 config/manifests/gateway/gke/gateway.yaml serves
# InferencePools through; GKE installs it with the Gateway API (the cluster's gatewayApiConfig).
GKE_GATEWAY_CLASS: Final = "gke-l7-regional-external-managed"
# Where GKE's driver installer puts the NVIDIA driver on COS nodes (the NVIDIA DRA driver's
# nvidiaDriverRoot in GKE's DRA guide, gke-ai-labs.dev "GPU fungibility with DRA").
GKE_NVIDIA_DRIVER_ROOT: Final = "/home/kubernetes/bin/nvidia"
# The KAI queues a Dynamo cluster's pods are scheduled through: a root and the leaf our pods
# name (composition/pods.py KAI_QUEUE); only leaf queues take work (KAI-Scheduler v0.17.0
# docs/queues/README.md), and the two-level shape is the chart's own default hierarchy.
KAI_ROOT_QUEUE: Final = "modelplane-root"
KAI_QUEUE: Final = "modelplane"

_RESOURCE_V1 = "resource.k8s.io/v1"
ENVOY_GATEWAY_NAMESPACE: Final = "envoy-gateway-system"
AI_GATEWAY_NAMESPACE: Final = "envoy-ai-gateway-system"
AI_GATEWAY_CONTROLLER: Final = "ai-gateway-controller"
AI_GATEWAY_RELEASE: Final = "v1.1.0"
# The Inference Extension release whose CRDs we apply: v1 InferencePool, and the
# InferenceObjective and InferenceModelRewrite kinds the picker watches.
INFERENCE_EXTENSION_RELEASE: Final = "v1.5.0"
INFERENCE_EXTENSION_MANIFESTS: Final = (
    "https://github.com/kubernetes-sigs/gateway-api-inference-extension/releases/download/"
    f"{INFERENCE_EXTENSION_RELEASE}/manifests.yaml"
)
# kubectl applies them: the image Kubernetes publishes for its own releases.
KUBECTL_IMAGE: Final = "registry.k8s.io/kubectl:v1.34.2"
INSTALLER_NAMESPACE: Final = "kube-system"
INSTALLER_NAME: Final = "modelplane-crd-installer"

COMPONENTS: Final[tuple[Component, ...]] = (
    Component(
        name="inference-extension-crds",
        title="Gateway API Inference Extension CRDs",
        release=INFERENCE_EXTENSION_RELEASE,
        need=Need("always"),
        namespace=INSTALLER_NAMESPACE,
        # No chart carries these CRDs: the release publishes them as manifests.yaml only
        # (kubernetes-sigs/gateway-api-inference-extension v1.5.0 Makefile, target artifacts).
        source=(
            "kubernetes-sigs/gateway-api-inference-extension v1.5.0 release asset "
            "manifests.yaml (Makefile artifacts; config/crd/bases), applied by our Job"
        ),
        requires=(
            ServedApi("inference.networking.k8s.io", "v1", ("InferencePool",)),
            ServedApi("gateway.networking.k8s.io", "v1", ("Gateway", "HTTPRoute")),
        ),
        unchecked=(
            "BackendTLSPolicy served at v1 (Gateway API v1.4 or later) where routes need it: "
            "the API check sees a group-version, not each kind",
            "egress from the cluster to github.com, from where the Job applies the CRDs "
            "(Managed clusters)",
        ),
    ),
    Component(
        name="envoy-gateway",
        title="Envoy Gateway",
        release="v1.8.3",
        need=Need("gateway", "EnvoyGateway"),
        namespace=ENVOY_GATEWAY_NAMESPACE,
        source=(
            "envoyproxy/gateway v1.8.3 charts/gateway-helm/Chart.yaml and values.tmpl.yaml "
            "(published as v1.8.3 by .github/workflows/release.yaml; ships Gateway API v1.5.1, "
            "experimental channel, in its crds/); the values are Envoy AI Gateway v1.1.0's "
            "manifests/envoy-gateway-values.yaml and "
            "examples/inference-pool/envoy-gateway-values-addon.yaml"
        ),
        chart=Chart("oci://docker.io/envoyproxy", "gateway-helm", "v1.8.3"),
        # The InferencePool watch starts with the controller, which never syncs without the CRD.
        needs=("inference-extension-crds",),
        values=(
            Value(
                "config.envoyGateway.gateway.controllerName",
                ENVOY_GATEWAY_CONTROLLER,
                "the controllerName of the GatewayClass we create",
            ),
            Value("config.envoyGateway.provider.type", "Kubernetes", "the chart's provider"),
            Value(
                "config.envoyGateway.extensionApis.enableBackend",
                True,
                "Envoy AI Gateway's backends are Envoy Gateway Backend objects",
            ),
            *(
                Value(
                    f"config.envoyGateway.extensionManager.hooks.xdsTranslator.translation.{part}"
                    ".includeAll",
                    True,
                    "Envoy AI Gateway rewrites the whole translation",
                )
                for part in ("listener", "route", "cluster", "secret")
            ),
            Value(
                "config.envoyGateway.extensionManager.hooks.xdsTranslator.post",
                ("Translation", "Cluster", "Route"),
                "the hooks Envoy AI Gateway's extension server implements",
            ),
            Value(
                "config.envoyGateway.extensionManager.service.fqdn.hostname",
                f"{AI_GATEWAY_CONTROLLER}.{AI_GATEWAY_NAMESPACE}.svc.cluster.local",
                "Envoy AI Gateway's controller Service (its fullnameOverride, its namespace)",
            ),
            Value(
                "config.envoyGateway.extensionManager.service.fqdn.port",
                1063,
                "the controller Service's grpc port (ai-gateway-helm v1.1.0 values.yaml)",
            ),
            Value(
                "config.envoyGateway.extensionManager.backendResources",
                (
                    MappingProxyType(
                        {
                            "group": "inference.networking.k8s.io",
                            "kind": "InferencePool",
                            "version": "v1",
                        }
                    ),
                ),
                "routes reach replicas through InferencePool backendRefs",
            ),
        ),
        # Envoy Gateway turns ready only once it may read InferencePools, which Envoy AI
        # Gateway's chart grants: waiting here would wait forever.
        wait=False,
    ),
    Component(
        name="envoy-ai-gateway-crds",
        title="Envoy AI Gateway CRDs",
        release=AI_GATEWAY_RELEASE,
        need=Need("gateway", "EnvoyGateway"),
        namespace=AI_GATEWAY_NAMESPACE,
        source=(
            "envoyproxy/ai-gateway v1.1.0 manifests/charts/ai-gateway-crds-helm "
            "(published as v1.1.0 by .github/workflows/release.yaml)"
        ),
        chart=Chart("oci://docker.io/envoyproxy", "ai-gateway-crds-helm", AI_GATEWAY_RELEASE),
    ),
    Component(
        name="envoy-ai-gateway",
        title="Envoy AI Gateway",
        release=AI_GATEWAY_RELEASE,
        need=Need("gateway", "EnvoyGateway"),
        namespace=AI_GATEWAY_NAMESPACE,
        source="envoyproxy/ai-gateway v1.1.0 manifests/charts/ai-gateway-helm/values.yaml",
        chart=Chart("oci://docker.io/envoyproxy", "ai-gateway-helm", AI_GATEWAY_RELEASE),
        needs=("envoy-gateway", "envoy-ai-gateway-crds", "inference-extension-crds"),
        values=(
            Value(
                "envoyGateway.namespace",
                ENVOY_GATEWAY_NAMESPACE,
                "where the Envoy Gateway it extends runs; its InferencePool reader is bound there",
            ),
            Value(
                "controller.fullnameOverride",
                AI_GATEWAY_CONTROLLER,
                "the Service name Envoy Gateway's extension manager dials",
            ),
            Value(
                "endpointConfig.anthropic",
                ANTHROPIC_PREFIX,
                "Anthropic's Messages API under /anthropic/v1: at the root its /v1/models "
                "would replace the OpenAI listing",
            ),
            Value(
                "controller.logRequestHeaderAttributes",
                CALLER_LOG_ATTRIBUTES,
                "the caller's id copied into dynamic metadata before the router, for the usage "
                "record: every backend removes the header itself",
            ),
        ),
    ),
    Component(
        name="inference-gateway",
        title="Inference Gateway",
        release="v1.8.3",
        need=Need("gateway", "EnvoyGateway"),
        namespace=SYSTEM_NAMESPACE,
        source=(
            "our own Namespace, EnvoyProxy (the usage access log), GatewayClass and Gateway "
            "(HTTP on 80, or HTTPS on 443 with the cluster's spec.gateway.tls) "
            "for Envoy Gateway v1.8.3; created last, so Envoy AI Gateway's webhook gives the "
            "proxy pods their sidecar"
        ),
        needs=("envoy-ai-gateway",),
    ),
    Component(
        name="gke-gateway",
        title="GKE inference Gateway",
        release="CHANNEL_STANDARD",
        need=Need("gateway", "GKE"),
        namespace=SYSTEM_NAMESPACE,
        source=(
            f"our own Namespace and Gateway of GKE's {GKE_GATEWAY_CLASS} GatewayClass, "
            "which GKE's Gateway controller programs on clusters we provision on GKE "
            "(gatewayApiConfig CHANNEL_STANDARD)"
        ),
        needs=("inference-extension-crds",),
        requires=(
            PresentObject("gateway.networking.k8s.io/v1", "GatewayClass", GKE_GATEWAY_CLASS),
        ),
    ),
    Component(
        name="lws",
        title="LeaderWorkerSet",
        release="v0.10.0",
        need=Need("stack", "Standard"),
        # The chart's CRD conversion webhook names a Service in lws-system: no other namespace works.
        namespace="lws-system",
        source=(
            "kubernetes-sigs/lws v0.10.0 charts/lws/Chart.yaml (published as 0.10.0, "
            "hack/push-chart.sh and site/content/en/docs/installation/_index.md)"
        ),
        chart=Chart("oci://registry.k8s.io/lws/charts", "lws", "0.10.0"),
        requires=(ServedApi("leaderworkerset.x-k8s.io", "v1", ("LeaderWorkerSet",)),),
    ),
    Component(
        name="kai-scheduler",
        title="KAI Scheduler",
        release="v0.17.0",
        need=Need("stack", "Dynamo"),
        namespace="kai-scheduler",
        source="kai-scheduler/KAI-Scheduler v0.17.0 deployments/kai-scheduler/Chart.yaml",
        chart=Chart("oci://ghcr.io/kai-scheduler/kai-scheduler", "kai-scheduler", "v0.17.0"),
        requires=(ServedApi("scheduling.run.ai", "v2", ("Queue",)),),
        unchecked=("the kai-scheduler scheduler serving pods that name it",),
    ),
    Component(
        name="kai-queues",
        configures=True,
        title="KAI queues",
        release="v0.17.0",
        need=Need("stack", "Dynamo"),
        namespace="",
        source=(
            f"our own Queues {KAI_ROOT_QUEUE} and {KAI_QUEUE} (scheduling.run.ai/v2, "
            "KAI-Scheduler v0.17.0 docs/queues/README.md)"
        ),
        needs=("kai-scheduler",),
    ),
    Component(
        name="grove",
        title="Grove",
        release="v0.1.0-alpha.12-rc1",
        need=Need("stack", "Dynamo"),
        namespace="grove-system",
        source=(
            "ai-dynamo/grove v0.1.0-alpha.12-rc1 operator/charts/Chart.yaml, published with "
            "its tag as version by .github/workflows/push-artifacts.yaml"
        ),
        chart=Chart("oci://ghcr.io/ai-dynamo/grove", "grove-charts", "v0.1.0-alpha.12-rc1"),
        needs=("kai-scheduler",),
        requires=(ServedApi("grove.io", "v1alpha1", ("PodCliqueSet",)),),
    ),
    Component(
        name="nvidia-dra-driver",
        title="NVIDIA DRA driver for GPUs",
        release="v0.4.1",
        need=Need("driver", "gpu.nvidia.com"),
        namespace="nvidia-dra-driver",
        source=(
            "kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1 "
            "deployments/helm/dra-driver-nvidia-gpu/Chart.yaml and values.yaml"
        ),
        chart=Chart(
            "oci://registry.k8s.io/dra-driver-nvidia/charts", "dra-driver-nvidia-gpu", "0.4.1"
        ),
        # Replaces the chart's default, which requires labels NFD or the GPU Operator set.
        pool_affinity="kubeletPlugin.affinity",
        values=(
            Value(
                "gpuResourcesEnabledOverride",
                True,
                "the chart refuses to render GPU allocation without it",
            ),
            Value("resources.gpus.enabled", True, "the gpu.nvidia.com DeviceClass and plugin"),
            Value(
                "resources.computeDomains.enabled",
                False,
                "no multi-node NVLink domains are claimed; their plugin needs a newer driver",
            ),
        ),
        platform_values=(
            (
                "GKE",
                (
                    Value(
                        "nvidiaDriverRoot",
                        GKE_NVIDIA_DRIVER_ROOT,
                        "GKE installs the driver there on the pools we provision",
                    ),
                    Value(
                        "kubeletPlugin.priorityClassName",
                        "",
                        "GKE admits system-node-critical pods in kube-system only",
                    ),
                ),
            ),
        ),
        requires=(PresentObject(_RESOURCE_V1, "DeviceClass", "gpu.nvidia.com"),),
        unchecked=(
            "the NVIDIA driver (565 or later) on the GPU nodes, CDI enabled in the container "
            "runtime, and no NVIDIA device plugin advertising the same GPUs",
            "on Provided clusters, GPU nodes labelled for the chart's kubelet plugin "
            "(nvidia.com/gpu.present=true, or NFD's PCI labels); Managed clusters place it on "
            "the pools by their modelplane.ai/pool label instead",
        ),
    ),
    Component(
        name="amd-dra-driver",
        title="AMD GPU DRA driver",
        release="v1.0.1",
        need=Need("driver", "gpu.amd.com"),
        namespace="amd-dra-driver",
        source="ROCm/k8s-gpu-dra-driver v1.0.1 (chart index https://rocm.github.io/k8s-gpu-dra-driver)",
        chart=Chart("https://rocm.github.io/k8s-gpu-dra-driver", "k8s-gpu-dra-driver", "v1.0.1"),
        # Without it the plugin lands on every node and waits forever where no amdgpu is.
        pool_affinity="kubeletPlugin.affinity",
        values=(
            Value(
                "kubeletPlugin.tolerations",
                (
                    MappingProxyType(
                        {"key": "amd.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
                    ),
                ),
                "AMD GPU nodes are tainted amd.com/gpu; the chart tolerates nothing by default",
            ),
        ),
        requires=(PresentObject(_RESOURCE_V1, "DeviceClass", "gpu.amd.com"),),
        unchecked=("the amdgpu kernel driver loaded on the GPU nodes, CDI enabled",),
    ),
    Component(
        name="cpu-dra-driver",
        title="CPU DRA driver",
        release="v0.2.0",
        need=Need("driver", "dra.cpu"),
        namespace="kube-system",
        source="kubernetes-sigs/dra-driver-cpu v0.2.0 deployment/helm/dra-driver-cpu/Chart.yaml",
        chart=Chart("oci://registry.k8s.io/dra-driver-cpu/charts", "dra-driver-cpu", "0.2.0"),
        values=(
            Value(
                "image.repository",
                "registry.k8s.io/dra-driver-cpu/dra-driver-cpu",
                "the 0.2.0 chart defaults to the staging registry",
            ),
            Value(
                "args.cpuDeviceMode",
                "individual",
                "claims count devices; grouped mode needs DRAConsumableCapacity (on by default "
                "only from Kubernetes 1.36)",
            ),
        ),
        requires=(PresentObject(_RESOURCE_V1, "DeviceClass", "dra.cpu"),),
        unchecked=(
            "kubelet cpuManagerPolicy none on the CPU nodes, and containerd 2.0 or CRI-O 1.30 "
            "with NRI and CDI enabled",
        ),
    ),
    Component(
        name="otel-collector",
        title="OpenTelemetry Collector",
        release=f"v{COLLECTOR_RELEASE}",
        need=Need("telemetry"),
        namespace=SYSTEM_NAMESPACE,
        source=(
            "open-telemetry/opentelemetry-helm-charts opentelemetry-collector-0.170.0 "
            "charts/opentelemetry-collector/Chart.yaml (appVersion 0.158.0) and values.yaml; "
            "the components of open-telemetry/opentelemetry-collector-releases v0.158.0 "
            "distributions/otelcol-contrib/manifest.yaml; the configuration is generated per "
            "cluster (stack/collector.py, docs/telemetry.md)"
        ),
        chart=Chart(
            "https://open-telemetry.github.io/opentelemetry-helm-charts",
            "opentelemetry-collector",
            "0.170.0",
        ),
        values=(
            Value("mode", "deployment", "one collector per cluster scrapes every target"),
            Value(
                "image.repository",
                COLLECTOR_IMAGE,
                "the contrib distribution: the prometheus receiver, transform, filter, "
                "groupbyattrs and k8s_attributes processors and prometheus_remote_write are not "
                "in the core image; the chart requires a repository and tags it with its "
                f"appVersion {COLLECTOR_RELEASE}",
            ),
            Value(
                "rewriteDeprecatedComponentNames",
                False,
                "the generated configuration already uses the release's names",
            ),
        ),
    ),
    Component(
        name="cluster-autoscaler",
        title="Cluster Autoscaler",
        release="v1.35.0",
        need=Need("platform", "EKS"),
        # The pod identity provisioning composes is for this account in this namespace.
        namespace="kube-system",
        source=(
            "kubernetes/autoscaler cluster-autoscaler-chart-9.59.0 "
            "cluster-autoscaler/charts/cluster-autoscaler/Chart.yaml (appVersion 1.35.0) and "
            "values.yaml; cloudprovider/aws/README.md for auto-discovery by the tags EKS puts "
            "on a managed node group's Auto Scaling group"
        ),
        chart=Chart("https://kubernetes.github.io/autoscaler", "cluster-autoscaler", "9.59.0"),
        values=(
            Value("cloudProvider", "aws", "the AWS cloud provider"),
            Value(
                "rbac.serviceAccount.name",
                "cluster-autoscaler",
                "the account the provisioned pod identity association names",
            ),
        ),
        # awsRegion and autoDiscovery.clusterName are the cluster's own (cluster_values).
    ),
)

COMPONENTS_BY_NAME: Final[Mapping[str, Component]] = MappingProxyType(
    {c.name: c for c in COMPONENTS}
)
DRIVERS: Final[Mapping[str, Component]] = MappingProxyType(
    {c.need.value: c for c in COMPONENTS if c.need.kind == "driver"}
)


def component(name: str) -> Component:
    """The table's entry ``name`` (a KeyError names a component the table lacks)."""
    return COMPONENTS_BY_NAME[name]


def configured_objects(
    name: str, gateway_certificate: str | None = None
) -> tuple[tuple[str, Manifest], ...]:
    """The objects we compose ourselves for component ``name``, each with its key suffix.

    ``gateway_certificate``: the kubernetes.io/tls Secret the cluster's Envoy Gateway serves
    HTTPS with (its ``spec.gateway.tls.certificateRef``); None: plain HTTP.
    """
    if name == "inference-gateway":
        return _gateway_objects(gateway_certificate)
    if name == "gke-gateway":
        return _gke_gateway_objects()
    if name == "kai-queues":
        return (("root", _queue(KAI_ROOT_QUEUE, None)), ("leaf", _queue(KAI_QUEUE, KAI_ROOT_QUEUE)))
    if name == "inference-extension-crds":
        return _crd_installer()
    raise KeyError(name)


def _listener(certificate: str | None) -> Manifest:
    """The Gateway's one listener: HTTP on 80, or HTTPS on 443 terminating TLS with the Secret.

    With TLS there is no HTTP listener: nothing we compose calls the cluster's gateway but the
    front door, which then speaks HTTPS, and a plaintext port beside it would serve the same
    routes to anyone who reaches the address. No listener hostname: the front door forwards the
    caller's Host header, which is not the certificate's name.
    """
    # Routes live in each replica's namespace, the Gateway in ours.
    allowed = {"namespaces": {"from": "All"}}
    if certificate is None:
        return {
            "name": "http",
            "protocol": "HTTP",
            "port": GATEWAY_LISTENER_PORT,
            "allowedRoutes": allowed,
        }
    # Gateway API v1.5.1 ListenerTLSConfig (apis/v1/gateway_types.go): Terminate, a Secret in
    # the Gateway's namespace (group "" and kind Secret are the defaults, written out).
    return {
        "name": "https",
        "protocol": "HTTPS",
        "port": GATEWAY_TLS_PORT,
        "tls": {
            "mode": "Terminate",
            "certificateRefs": [{"group": "", "kind": "Secret", "name": certificate}],
        },
        "allowedRoutes": allowed,
    }


def _gateway_objects(certificate: str | None = None) -> tuple[tuple[str, Manifest], ...]:
    namespace: Manifest = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": SYSTEM_NAMESPACE},
    }
    proxy: Manifest = {
        "apiVersion": "gateway.envoyproxy.io/v1alpha1",
        "kind": "EnvoyProxy",
        "metadata": {"name": USAGE_PROXY_NAME, "namespace": SYSTEM_NAMESPACE},
        "spec": {
            "telemetry": {
                "accessLog": {
                    "settings": [
                        {
                            "type": "Route",
                            "matches": [USAGE_LOG_MATCH],
                            "format": {"type": "JSON", "json": dict(USAGE_LOG_FIELDS)},
                            "sinks": [{"type": "File", "file": {"path": "/dev/stdout"}}],
                        }
                    ]
                }
            }
        },
    }
    gateway_class: Manifest = {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "GatewayClass",
        "metadata": {"name": GATEWAY_CLASS_NAME},
        "spec": {
            "controllerName": ENVOY_GATEWAY_CONTROLLER,
            # Envoy Gateway reads a class's EnvoyProxy from parametersRef.namespace
            # (internal/provider/kubernetes/controller.go processGatewayClassParamsRef @ v1.8.3).
            "parametersRef": {
                "group": "gateway.envoyproxy.io",
                "kind": "EnvoyProxy",
                "name": USAGE_PROXY_NAME,
                "namespace": SYSTEM_NAMESPACE,
            },
        },
    }
    gateway: Manifest = {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "metadata": {"name": GATEWAY_NAME, "namespace": SYSTEM_NAMESPACE},
        "spec": {
            "gatewayClassName": GATEWAY_CLASS_NAME,
            "listeners": [_listener(certificate)],
        },
    }
    return (
        ("namespace", namespace),
        ("proxy", proxy),
        ("class", gateway_class),
        ("gateway", gateway),
    )


def _gke_gateway_objects() -> tuple[tuple[str, Manifest], ...]:
    """The Gateway of GKE's class: GKE brings the class, we bring its namespace and Gateway."""
    objects = dict(_gateway_objects())
    namespace, gateway = objects["namespace"], objects["gateway"]
    spec = gateway["spec"]
    assert isinstance(spec, dict)
    gateway = {**gateway, "spec": {**spec, "gatewayClassName": GKE_GATEWAY_CLASS}}
    return (("namespace", namespace), ("gateway", gateway))


def _queue(name: str, parent: str | None) -> Manifest:
    # KAI's queue webhook refuses a Queue without resources, and an unset limit forbids
    # going over quota: every resource is unlimited and shared by weight.
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    spec: dict[str, object] = {
        "resources": {"cpu": dict(unlimited), "gpu": dict(unlimited), "memory": dict(unlimited)}
    }
    if parent is not None:
        spec["parentQueue"] = parent
    return {
        "apiVersion": "scheduling.run.ai/v2",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": spec,
    }


def _crd_installer() -> tuple[tuple[str, Manifest], ...]:
    """A Job applying the Inference Extension's released CRDs, and the RBAC it needs.

    Server-side apply is idempotent; the Job's name carries the release, so a new release
    runs a new Job (a Job's template cannot change in place).
    """
    labels = {"app.kubernetes.io/name": INSTALLER_NAME}
    account: Manifest = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": INSTALLER_NAME, "namespace": INSTALLER_NAMESPACE},
    }
    role: Manifest = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": INSTALLER_NAME},
        "rules": [
            {
                "apiGroups": ["apiextensions.k8s.io"],
                "resources": ["customresourcedefinitions"],
                "verbs": ["get", "list", "create", "patch"],
            }
        ],
    }
    binding: Manifest = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": INSTALLER_NAME},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": INSTALLER_NAME,
        },
        "subjects": [
            {"kind": "ServiceAccount", "name": INSTALLER_NAME, "namespace": INSTALLER_NAMESPACE}
        ],
    }
    version = INFERENCE_EXTENSION_RELEASE.replace(".", "-")
    job: Manifest = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": f"{INSTALLER_NAME}-inference-extension-{version}",
            "namespace": INSTALLER_NAMESPACE,
            "labels": labels,
        },
        "spec": {
            "backoffLimit": 6,
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "serviceAccountName": INSTALLER_NAME,
                    "restartPolicy": "OnFailure",
                    "containers": [
                        {
                            "name": "apply",
                            "image": KUBECTL_IMAGE,
                            "args": [
                                "apply",
                                "--server-side",
                                "--force-conflicts",
                                "--field-manager=modelplane",
                                "-f",
                                INFERENCE_EXTENSION_MANIFESTS,
                            ],
                        }
                    ],
                },
            },
        },
    }
    return (("account", account), ("role", role), ("binding", binding), ("job", job))
