"""How a gang's pods learn their leader's address and their rank (docs/composition.md, "Gangs").

Both gang operators inject their own variables into every container, but not in the same
place: LeaderWorkerSet puts ``LWS_*`` first, every released Grove (up to
v0.1.0-alpha.12-rc1) appends ``GROVE_*`` after the container's env, Grove main prepends
them. Kubernetes expands ``$(VAR)`` in an env value only from entries defined earlier in
the list, so an env value that names an operator variable works on one order and stays
literal on another. Modelplane therefore never names an operator variable: it reads the
pod labels the operators set (through the downward API, ``fieldRef``) and spells the
rest of the address from names it chose itself. Every entry below refers only to
entries placed before it, whatever the operator does with its own.

Upstream facts (kept here, their one home):

- LeaderWorkerSet v0.10.0, ``pkg/utils/pod/pod_utils.go`` ``AddLWSVariables``:
  ``LWS_LEADER_ADDRESS`` is ``<lws>-<group-index>.<subdomain>.<namespace>``; the subdomain
  is the LWS name under the default ``SubdomainShared`` policy (we set no networkConfig;
  ``pkg/controllers/leaderworkerset_controller.go`` ``reconcileHeadlessServices``).
  ``LWS_WORKER_INDEX`` is the ``leaderworkerset.sigs.k8s.io/worker-index`` label (0 on the
  leader, 1.. on workers), the group index the ``.../group-index`` label
  (``api/leaderworkerset/v1/leaderworkerset_types.go``).
- Grove v0.1.0-alpha.12-rc1, ``operator/api/common/namegen.go``: the scaling group of
  replica 0 of PodCliqueSet ``<pcs>`` is ``<pcs>-0-<group>``, its replica ``i`` holds the
  clique ``<pcs>-0-<group>-<i>-<clique>``, whose pods have hostname ``<clique name>-<n>``
  and subdomain ``<pcs>-0`` (``podclique/components/pod/pod.go`` ``configurePodHostname``),
  the headless service at ``<pcs>-0.<namespace>.svc.cluster.local``. The scaling-group
  replica index is the pod label ``grove.io/podcliquescalinggroup-replica-index``
  (``operator/api/common/labels.go``; Grove's own ``GROVE_PCSG_INDEX`` reads the same
  label). Clique pods are numbered from 0, so a worker's rank (1..nodes) cannot be
  spelled: the scheduler refuses such engines on Dynamo (``StackUnsupported``).
"""

from __future__ import annotations

from modelplane.composition.names import ReplicaNames
from modelplane.composition.types import Json, Stack

# The releases the facts above were read at. The stack installs the releases in
# stack/components.py; tests/stack/test_stack_facts.py fails when the two differ, so a
# version bump re-reads the facts before it ships.
LWS_FACTS_RELEASE = "v0.10.0"
GROVE_FACTS_RELEASE = "v0.1.0-alpha.12-rc1"

LEADER_ADDRESS = "MODELPLANE_LEADER_ADDRESS"
RANK = "MODELPLANE_RANK"
GANG_INDEX = "MODELPLANE_GANG_INDEX"

# Grove: the one scaling group of a PodCliqueSet, its two cliques; the PodCliqueSet has
# one replica (index 0), each engine copy is a scaling-group replica.
GANG_GROUP = "gang"
LEADER_CLIQUE = "leader"
WORKER_CLIQUE = "worker"
PCS_REPLICA = 0

LWS_GROUP_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/group-index"
LWS_WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"
GROVE_GANG_INDEX_LABEL = "grove.io/podcliquescalinggroup-replica-index"


def label_entry(name: str, label: str) -> Json:
    """An env entry holding the value of one of the pod's own labels (downward API)."""
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{label}']"}}}


def lws_leader_address(lws: str, gang_index: str, namespace: str) -> str:
    """The leader pod's address in LWS ``lws``, group ``gang_index`` (as LWS spells it)."""
    return f"{lws}-{gang_index}.{lws}.{namespace}"


def grove_leader_address(pcs: str, gang_index: str, namespace: str) -> str:
    """The leader pod's FQDN in PodCliqueSet ``pcs``, scaling-group replica ``gang_index``."""
    service = f"{pcs}-{PCS_REPLICA}"
    host = f"{service}-{GANG_GROUP}-{gang_index}-{LEADER_CLIQUE}-0"
    return f"{host}.{service}.{namespace}.svc.cluster.local"


def gang_env(names: ReplicaNames, engine: str, role: str, stack: Stack) -> list[Json]:
    """The leader address and rank entries of a Leader or Worker pod, in order.

    ``MODELPLANE_GANG_INDEX`` (the engine copy) comes first, read from the operator's
    label; the address then refers to it, an entry defined earlier.
    """
    gang_index = f"$({GANG_INDEX})"
    if stack == "Dynamo":
        address = grove_leader_address(names.pod_clique_set(engine), gang_index, names.remote)
        env = [label_entry(GANG_INDEX, GROVE_GANG_INDEX_LABEL), _entry(LEADER_ADDRESS, address)]
        # Workers get no rank rather than a wrong one (see the module docstring).
        return [*env, _entry(RANK, "0")] if role == "Leader" else env
    address = lws_leader_address(names.leader_worker_set(engine), gang_index, names.remote)
    return [
        label_entry(GANG_INDEX, LWS_GROUP_INDEX_LABEL),
        _entry(LEADER_ADDRESS, address),
        label_entry(RANK, LWS_WORKER_INDEX_LABEL),
    ]


def _entry(name: str, value: str) -> Json:
    return {"name": name, "value": value}
