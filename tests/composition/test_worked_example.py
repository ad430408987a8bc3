"""The worked example: the seed's qwen3-8b, replica us-east-1/0, object by object.

The picker objects follow docs/composition.md ("The default picker"): llm-d-router
v0.10.0's chart.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from modelplane.composition import ReplicaComposition, compose_replica
from modelplane.composition.picker import shared_picker_objects
from modelplane.runtime.wire import condition_wire

from .builders import PC, SEL, cluster, manifests, replica

R = "qwen3-8b-e7f0a"
B = "ml-team-qwen3-8b-e7f0a-84943"
W = "ml-team-qwen3-8b-e7f0a-qwen3-8b-ee4f4"
RCT = "ml-team-qwen3-8b-e7f0a-qwen3-8b-standalone-devices-13449"
POOL = "ml-team-qwen3-8b-e7f0a-pool-30aac"
EPP = "ml-team-qwen3-8b-e7f0a-epp-8f300"
# The picker objects every replica on the cluster shares, composed by the cluster.
SHARED = "modelplane-epp"
SHARED_KEYS = ("epp-serviceaccount", "epp-role", "epp-rolebinding", "epp-config")
CHECKSUM = "cbcd96b3e550382081c56d8a043a66939ae4af381db2e4c09bc65340ac5c6ee2"
CONFIG_TEXT = (
    '{"apiVersion":"llm-d.ai/v1alpha1","kind":"EndpointPickerConfig","plugins":[{"type":'
    '"queue-scorer"},{"type":"kv-cache-utilization-scorer"},{"type":"prefix-cache-scorer"},'
    '{"parameters":{"insecureSkipVerify":true,"path":"/metrics","scheme":"http"},"type":'
    '"metrics-data-source"},{"type":"core-metrics-extractor"}],"schedulingProfiles":[{"name":'
    '"default","plugins":[{"pluginRef":"queue-scorer","weight":2},{"pluginRef":'
    '"kv-cache-utilization-scorer","weight":2},{"pluginRef":"prefix-cache-scorer","weight":3}]}]}'
)
# Rolled out at the current generation, as `kubectl rollout status` checks (docs/composition.md,
# "Ready means rolled out"): the engine Deployment.
AVAILABLE = (
    "has(object.status) && has(object.status.observedGeneration) && "
    "object.status.observedGeneration == object.metadata.generation && "
    "has(object.status.updatedReplicas) && object.status.updatedReplicas == object.spec.replicas"
    " && has(object.status.replicas) && object.status.replicas == object.spec.replicas && "
    "has(object.status.availableReplicas) && "
    "object.status.availableReplicas == object.spec.replicas"
)
# The picker Deployment: every picker at the current template and at least one available
# (docs/composition.md, "Two pickers per replica").
SERVING = (
    "has(object.status) && has(object.status.observedGeneration) && "
    "object.status.observedGeneration == object.metadata.generation && "
    "has(object.status.updatedReplicas) && object.status.updatedReplicas == object.spec.replicas"
    " && has(object.status.replicas) && object.status.replicas == object.spec.replicas && "
    "has(object.status.availableReplicas)"
)

# key, Object name, remote kind, remote name, readiness policy (the example's table): the
# replica's own Objects; the picker's ServiceAccount, RBAC and config are the cluster's.
TABLE = [
    (
        "model-serving-qwen3-8b",
        "qwen3-8b-e7f0a-model-serving-qwen3-8b-43f12",
        "Deployment",
        W,
        "AVAILABLE",
    ),
    (
        "resource-claim-qwen3-8b-standalone",
        "qwen3-8b-e7f0a-resource-claim-qwen3-8b-standalone-c79d7",
        "ResourceClaimTemplate",
        RCT,
        "SuccessfulCreate",
    ),
    (
        "inference-pool",
        "qwen3-8b-e7f0a-inference-pool-28b85",
        "InferencePool",
        POOL,
        "SuccessfulCreate",
    ),
    ("model-route", "qwen3-8b-e7f0a-model-route-df1c8", "HTTPRoute", B, "SuccessfulCreate"),
    ("epp", "qwen3-8b-e7f0a-epp-98f23", "Deployment", EPP, "SERVING"),
    (
        "epp-disruption-budget",
        "qwen3-8b-e7f0a-epp-disruption-budget-fe2ed",
        "PodDisruptionBudget",
        EPP,
        "SuccessfulCreate",
    ),
    ("epp-service", "qwen3-8b-e7f0a-epp-service-7fd25", "Service", EPP, "SuccessfulCreate"),
]


def _y(text: str) -> Any:
    return yaml.safe_load(text)


EXPECTED: dict[str, Any] = {
    "model-serving-qwen3-8b": _y(f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {W}, namespace: ml-team}}
spec:
  replicas: 1
  strategy: {{type: RollingUpdate, rollingUpdate: {{maxSurge: 0, maxUnavailable: 1}}}}
  selector: {{matchLabels: {{modelplane.ai/workload: {W}}}}}
  template:
    metadata:
      labels:
        modelplane.ai/deployment: qwen3-8b
        modelplane.ai/deployment-namespace: ml-team
        modelplane.ai/replica: qwen3-8b-e7f0a
        modelplane.ai/engine: qwen3-8b
        modelplane.ai/role: standalone
        modelplane.ai/serving: {B}
        modelplane.ai/workload: {W}
    spec:
      nodeSelector: {{modelplane.ai/pool: h100}}
      tolerations: [{{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}}]
      resourceClaims:
      - {{name: devices, resourceClaimTemplateName: {RCT}}}
      containers:
      - name: engine
        image: vllm/vllm-openai:v0.23.0
        args: [--model=Qwen/Qwen3-8B, --served-model-name=$(MODELPLANE_SERVED_MODEL_NAME)]
        env: [{{name: MODELPLANE_SERVED_MODEL_NAME, value: ml-team/qwen3-8b}}]
        ports: [{{name: http, containerPort: 8000}}]
        readinessProbe: {{httpGet: {{path: /health, port: http}}, initialDelaySeconds: 30, periodSeconds: 10, timeoutSeconds: 5}}
        resources: {{claims: [{{name: devices}}]}}
        volumeMounts: [{{name: dshm, mountPath: /dev/shm}}]
      volumes: [{{name: dshm, emptyDir: {{medium: Memory}}}}]
"""),
    "resource-claim-qwen3-8b-standalone": {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": RCT, "namespace": "ml-team"},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "gpu",
                            "exactly": {
                                "deviceClassName": "gpu.nvidia.com",
                                "count": 1,
                                "selectors": [{"cel": {"expression": SEL}}],
                            },
                        }
                    ]
                }
            }
        },
    },
    "inference-pool": _y(f"""
apiVersion: inference.networking.k8s.io/v1
kind: InferencePool
metadata: {{name: {POOL}, namespace: ml-team}}
spec:
  selector: {{matchLabels: {{modelplane.ai/serving: {B}}}}}
  targetPorts: [{{number: 8000}}]
  endpointPickerRef: {{name: {EPP}, port: {{number: 9002}}, failureMode: FailOpen}}
"""),
    "model-route": _y(f"""
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: {B}, namespace: ml-team}}
spec:
  parentRefs: [{{name: inference-gateway, namespace: modelplane-system}}]
  rules:
  - matches: [{{path: {{type: PathPrefix, value: "/ml-team/qwen3-8b-e7f0a/"}}}}]
    filters:
    - type: URLRewrite
      urlRewrite: {{path: {{type: ReplacePrefixMatch, replacePrefixMatch: /}}}}
    backendRefs: [{{group: inference.networking.k8s.io, kind: InferencePool, name: {POOL}}}]
    timeouts: {{request: 0s}}
"""),
    "epp-serviceaccount": {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": SHARED, "namespace": "ml-team"},
    },
    "epp-role": _y(f"""
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: {SHARED}, namespace: ml-team}}
rules:
- {{apiGroups: [""], resources: [pods], verbs: [get, list, watch]}}
- {{apiGroups: [inference.networking.k8s.io], resources: [inferencepools], verbs: [get, list, watch]}}
- {{apiGroups: [inference.networking.x-k8s.io], resources: [inferenceobjectives, inferencemodelrewrites], verbs: [get, list, watch]}}
- {{apiGroups: [llm-d.ai], resources: [inferenceobjectives, inferencemodelrewrites], verbs: [get, list, watch]}}
"""),
    "epp-rolebinding": _y(f"""
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: {SHARED}, namespace: ml-team}}
subjects: [{{kind: ServiceAccount, name: {SHARED}, namespace: ml-team}}]
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: {SHARED}}}
"""),
    "epp-config": {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": SHARED, "namespace": "ml-team"},
        "data": {"epp-config.yaml": CONFIG_TEXT},
    },
    "epp": _y(f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {EPP}, namespace: ml-team}}
spec:
  replicas: 2
  strategy: {{type: RollingUpdate, rollingUpdate: {{maxSurge: 1, maxUnavailable: 1}}}}
  selector: {{matchLabels: {{app: {EPP}}}}}
  template:
    metadata:
      labels: {{app: {EPP}, modelplane.ai/deployment: qwen3-8b, modelplane.ai/deployment-namespace: ml-team, modelplane.ai/replica: qwen3-8b-e7f0a}}
      annotations: {{modelplane.ai/epp-config-checksum: {CHECKSUM}}}
    spec:
      serviceAccountName: {SHARED}
      terminationGracePeriodSeconds: 130
      affinity:
        podAntiAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
          - weight: 100
            podAffinityTerm:
              labelSelector: {{matchLabels: {{app: {EPP}}}}}
              topologyKey: kubernetes.io/hostname
      containers:
      - name: epp
        image: ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.10.0
        args:
        - --pool-name={POOL}
        - --pool-namespace=ml-team
        - --pool-group=inference.networking.k8s.io
        - --zap-encoder=json
        - --config-file=/config/epp-config.yaml
        - --grpc-port=9002
        - --grpc-health-port=9003
        - --tracing=false
        - --ha-enable-leader-election=false
        env:
        - {{name: MODELPLANE_SERVED_MODEL_NAME, value: ml-team/qwen3-8b}}
        - {{name: MODELPLANE_POOL_NAME, value: {POOL}}}
        - {{name: MODELPLANE_POOL_NAMESPACE, value: ml-team}}
        - {{name: MODELPLANE_PICKER_CONFIG, value: /config/epp-config.yaml}}
        ports: [{{name: grpc, containerPort: 9002}}, {{name: grpc-health, containerPort: 9003}}, {{name: metrics, containerPort: 9090}}]
        livenessProbe: {{grpc: {{port: 9003, service: inference-extension}}, initialDelaySeconds: 5, periodSeconds: 10}}
        readinessProbe: {{grpc: {{port: 9003, service: inference-extension}}, periodSeconds: 2}}
        resources: {{requests: {{cpu: "8", memory: 8Gi}}, limits: {{memory: 16Gi}}}}
        volumeMounts: [{{name: config, mountPath: /config}}]
      volumes: [{{name: config, configMap: {{name: {SHARED}}}}}]
"""),
    "epp-disruption-budget": _y(f"""
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {{name: {EPP}, namespace: ml-team}}
spec:
  maxUnavailable: 1
  selector: {{matchLabels: {{app: {EPP}}}}}
  unhealthyPodEvictionPolicy: AlwaysAllow
"""),
    "epp-service": _y(f"""
apiVersion: v1
kind: Service
metadata: {{name: {EPP}, namespace: ml-team}}
spec:
  selector: {{app: {EPP}}}
  ports:
  - {{name: grpc-ext-proc, port: 9002, targetPort: 9002, appProtocol: kubernetes.io/h2c}}
  - {{name: http-metrics, port: 9090, targetPort: 9090}}
"""),
}


@pytest.fixture(scope="module")
def composed() -> ReplicaComposition:
    return compose_replica(replica(), cluster())


def test_the_seed_replica_validates_as_the_spec_writes_it() -> None:
    requests = replica().spec.engines[0].members[0].device_requests or []
    assert requests[0].selectors is not None
    assert requests[0].selectors[0].cel == SEL


def test_objects_come_in_the_order_of_section_10(composed: ReplicaComposition) -> None:
    assert [o.key for o in composed.objects] == [row[0] for row in TABLE]


def _remote_of(key: str, composed: ReplicaComposition) -> Any:
    """The remote object under ``key``: the replica's own, or the cluster's shared one."""
    if key in SHARED_KEYS:
        return dict(shared_picker_objects("ml-team"))[key]
    return manifests(composed)[key]


@pytest.mark.parametrize(("key", "object_name", "kind", "remote_name", "policy"), TABLE)
def test_each_object_is_wrapped_as_the_table_says(
    composed: ReplicaComposition,
    key: str,
    object_name: str,
    kind: str,
    remote_name: str,
    policy: str,
) -> None:
    obj = next(o.object for o in composed.objects if o.key == key)
    queries = {"AVAILABLE": AVAILABLE, "SERVING": SERVING}
    readiness = (
        {"policy": "DeriveFromCelQuery", "celQuery": queries[policy]}
        if policy in queries
        else {"policy": "SuccessfulCreate"}
    )
    manifest = obj["spec"]["forProvider"]["manifest"]
    assert obj == {
        "apiVersion": "kubernetes.m.crossplane.io/v1alpha1",
        "kind": "Object",
        "metadata": {
            "name": object_name,
            "namespace": "ml-team",
            "annotations": {"crossplane.io/composition-resource-name": key},
        },
        "spec": {
            "providerConfigRef": {"kind": "ClusterProviderConfig", "name": PC},
            "forProvider": {"manifest": manifest},
            "readiness": readiness,
            # Workloads are watched (docs/composition.md); the rest is polled.
            **({"watch": True} if policy in queries else {}),
        },
    }
    assert (manifest["kind"], manifest["metadata"]["name"]) == (kind, remote_name)
    assert manifest["metadata"]["namespace"] == "ml-team"


@pytest.mark.parametrize("key", list(EXPECTED))
def test_each_remote_object_is_exactly_the_worked_example(
    composed: ReplicaComposition, key: str
) -> None:
    assert _remote_of(key, composed) == EXPECTED[key]


def test_config_text_is_506_bytes_with_the_published_checksum(composed: ReplicaComposition) -> None:
    import hashlib

    text = _remote_of("epp-config", composed)["data"]["epp-config.yaml"]
    assert text == CONFIG_TEXT
    assert len(text.encode("utf-8")) == 506
    assert hashlib.sha256(text.encode("utf-8")).hexdigest() == CHECKSUM


def test_first_compose_reports_conditions_and_event(composed: ReplicaComposition) -> None:
    assert [condition_wire(c) for c in composed.conditions] == [
        {"type": "ModelAccepted", "status": "False", "reason": "Deploying", "message": ""},
        {"type": "ModelReady", "status": "False", "reason": "WaitingForModel", "message": ""},
    ]
    assert [(e.severity, e.message) for e in composed.events] == [
        ("Normal", "Composing vllm/vllm-openai:v0.23.0 on us-east-1")
    ]
    assert composed.ready is False
    assert composed.held is False
    assert all(o.ready is None for o in composed.objects)


def test_second_replica_composes_the_same_set_with_its_own_names() -> None:
    second = compose_replica(
        replica(name="qwen3-8b-13bc2", engines=None),
        cluster("Standard", "us-west-2-pc", "us-west-2"),
    )
    objs = manifests(second)
    assert list(objs) == [row[0] for row in TABLE]
    assert objs["inference-pool"]["metadata"]["name"].startswith("ml-team-qwen3-8b-13bc2-pool-")
    assert all(
        o.object["spec"]["providerConfigRef"]["name"] == "us-west-2-pc" for o in second.objects
    )
