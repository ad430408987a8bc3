"""How the gang operators and the kubelet turn a composed pod template into running env.

A test double of upstream behaviour, written from the released sources (named per
function), so that tests can ask: once LeaderWorkerSet or Grove has built a pod from our
template and the kubelet has expanded it, does every ``$(VAR)`` resolve, and to what?
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

NAMESPACE = "default"  # a pod built without a workload (the operators read the workload's)
POD_IP = "10.4.0.17"

Env = list[dict[str, Any]]
EnvOp = Callable[[Env, Env], Env]


def references(text: str) -> list[str]:
    """The variable names ``text`` references as ``$(NAME)`` (``$$`` escapes a ``$``).

    Kubernetes ``third_party/forked/golang/expansion/expand.go``: ``$$`` is a literal
    ``$``; ``$(NAME)`` is a reference; anything else after ``$`` is literal.
    """
    names = []
    i = 0
    while i < len(text):
        if text.startswith("$$", i):
            i += 2
        elif text.startswith("$(", i) and (end := text.find(")", i + 2)) != -1:
            names.append(text[i + 2 : end])
            i = end + 1
        else:
            i += 1
    return names


def expand(text: str, env: Mapping[str, str]) -> str:
    """Kubernetes' expansion: defined references replaced, undefined ones left literal."""
    out = []
    i = 0
    while i < len(text):
        if text.startswith("$$", i):
            out.append("$")
            i += 2
        elif text.startswith("$(", i) and (end := text.find(")", i + 2)) != -1:
            name = text[i + 2 : end]
            out.append(env.get(name, f"$({name})"))
            i = end + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


@dataclass
class RunningPod:
    """A pod as the operator created it: identity, labels and its containers' env lists."""

    name: str
    labels: dict[str, str]
    dns_name: str  # the name other pods reach it by (hostname.subdomain...)
    containers: list[dict[str, Any]]
    namespace: str = NAMESPACE  # the workload's: the operator creates its pods beside it


def _field(pod: RunningPod, path: str) -> str:
    """The downward API values our composition uses (``metadata.labels['k']``, podIP)."""
    if path == "status.podIP":
        return POD_IP
    if path == "metadata.namespace":
        return pod.namespace
    if path == "metadata.name":
        return pod.name
    match = re.fullmatch(r"metadata\.labels\['([^']+)'\]", path)
    assert match is not None, f"downward API path not simulated: {path}"
    assert match.group(1) in pod.labels, f"pod {pod.name} has no label {match.group(1)}"
    return pod.labels[match.group(1)]


@dataclass
class Unresolved:
    """A reference that stayed literal, and where."""

    pod: str
    container: str
    where: str
    name: str


def kubelet_env(
    pod: RunningPod, container: dict[str, Any]
) -> tuple[dict[str, str], list[Unresolved]]:
    """The container's final environment, and every reference that did not resolve.

    Kubernetes ``pkg/kubelet/kubelet_pods.go`` ``makeEnvironmentVariables``: entries are
    resolved in list order; a ``value`` expands only against entries already resolved;
    a later entry of the same name replaces an earlier one.
    """
    resolved: dict[str, str] = {}
    missing: list[Unresolved] = []
    for entry in container.get("env", []):
        if "valueFrom" in entry:
            field = entry["valueFrom"].get("fieldRef")
            value = _field(pod, field["fieldPath"]) if field else f"<{entry['name']} from a source>"
        else:
            raw = entry.get("value", "")
            for name in references(raw):
                if name not in resolved:
                    missing.append(
                        Unresolved(pod.name, container["name"], f"env {entry['name']}", name)
                    )
            value = expand(raw, resolved)
        resolved[entry["name"]] = value
    return resolved, missing


def kubelet_argv(pod: RunningPod, container: dict[str, Any]) -> tuple[list[str], list[Unresolved]]:
    """``command`` + ``args`` as the container runs them: expanded against the whole env."""
    env, missing = kubelet_env(pod, container)
    argv = [*container.get("command", []), *container.get("args", [])]
    for text in argv:
        missing += [
            Unresolved(pod.name, container["name"], "command/args", n)
            for n in references(text)
            if n not in env
        ]
    return [expand(t, env) for t in argv], missing


def prepend(injected: Env, own: Env) -> Env:
    """Injected first; an own entry of an injected name is dropped (LWS; Grove main)."""
    names = {e["name"] for e in injected}
    return [*injected, *(e for e in own if e["name"] not in names)]


def append(injected: Env, own: Env) -> Env:
    """Own entries first, injected after (every released Grove, ``AddEnvVarsToContainers``)."""
    return [*own, *injected]


def _with_env(pod_spec: dict[str, Any], injected: Env, op: EnvOp) -> list[dict[str, Any]]:
    containers = copy.deepcopy(pod_spec["containers"])
    for c in containers:
        c["env"] = op(injected, c.get("env", []))
    return containers


def lws_pods(lws: dict[str, Any]) -> Iterator[list[RunningPod]]:
    """Each group of a LeaderWorkerSet: leader first, then workers 1..size-1.

    LWS v0.10.0: pods ``<lws>-<g>`` (leader StatefulSet) and ``<lws>-<g>-<w>`` (worker
    StatefulSet), labels ``leaderworkerset.sigs.k8s.io/{name,group-index,worker-index}``,
    subdomain ``<lws>`` (``SubdomainShared``), and ``pkg/utils/pod/pod_utils.go``
    ``AddLWSVariables`` prepending ``LWS_LEADER_ADDRESS``, ``LWS_GROUP_SIZE``,
    ``LWS_WORKER_INDEX`` to every container.
    """
    name = lws["metadata"]["name"]
    namespace = lws["metadata"].get("namespace", NAMESPACE)
    lwt = lws["spec"]["leaderWorkerTemplate"]
    size = lwt["size"]
    for g in range(lws["spec"]["replicas"]):
        group = []
        for w in range(size):
            template = lwt["leaderTemplate"] if w == 0 else lwt["workerTemplate"]
            pod_name = f"{name}-{g}" if w == 0 else f"{name}-{g}-{w}"
            injected = [
                {"name": "LWS_LEADER_ADDRESS", "value": f"{name}-{g}.{name}.{namespace}"},
                {"name": "LWS_GROUP_SIZE", "value": str(size)},
                {"name": "LWS_WORKER_INDEX", "value": str(w)},
            ]
            labels = {
                **template["metadata"]["labels"],
                "leaderworkerset.sigs.k8s.io/name": name,
                "leaderworkerset.sigs.k8s.io/group-index": str(g),
                "leaderworkerset.sigs.k8s.io/worker-index": str(w),
            }
            group.append(
                RunningPod(
                    pod_name,
                    labels,
                    f"{pod_name}.{name}.{namespace}",
                    _with_env(template["spec"], injected, prepend),
                    namespace,
                )
            )
        yield group


def grove_pods(pcs: dict[str, Any], op: EnvOp) -> Iterator[list[RunningPod]]:
    """Each scaling-group replica of a PodCliqueSet: the leader clique's pods first.

    Grove v0.1.0-alpha.12-rc1 (``op=append``) and main since 3aba3f6e (``op=prepend``):
    the scaling-group controller adds ``GROVE_PCSG_NAME``, ``GROVE_PCSG_TEMPLATE_NUM_PODS``,
    ``GROVE_PCSG_INDEX`` to the PodClique's pod spec
    (``podcliquescalinggroup/components/podclique/podclique.go``), then the PodClique
    controller adds ``GROVE_PCS_NAME``, ``GROVE_PCS_INDEX``, ``GROVE_PCLQ_NAME``,
    ``GROVE_HEADLESS_SERVICE``, ``GROVE_PCLQ_POD_INDEX`` to each pod
    (``podclique/components/pod/pod.go``). Names from ``operator/api/common/namegen.go``;
    hostname ``<pclq>-<n>``, subdomain ``<pcs>-0``.
    """
    name = pcs["metadata"]["name"]
    namespace = pcs["metadata"].get("namespace", NAMESPACE)
    template = pcs["spec"]["template"]
    (group,) = template["podCliqueScalingGroups"]
    pcsg = f"{name}-0-{group['name']}"
    service = f"{name}-0"
    cliques = {c["name"]: c for c in template["cliques"]}
    num_pods = sum(cliques[c]["spec"]["replicas"] for c in group["cliqueNames"])
    for i in range(group["replicas"]):
        gang = []
        for clique_name in group["cliqueNames"]:
            clique = cliques[clique_name]
            pclq = f"{pcsg}-{i}-{clique_name}"
            pcsg_env = [
                _label_ref("GROVE_PCSG_NAME", "grove.io/podcliquescalinggroup"),
                {"name": "GROVE_PCSG_TEMPLATE_NUM_PODS", "value": str(num_pods)},
                _label_ref("GROVE_PCSG_INDEX", "grove.io/podcliquescalinggroup-replica-index"),
            ]
            pclq_spec = {"containers": _with_env(clique["spec"]["podSpec"], pcsg_env, op)}
            for n in range(clique["spec"]["replicas"]):
                pod_env = [
                    {"name": "GROVE_PCS_NAME", "value": name},
                    {"name": "GROVE_PCS_INDEX", "value": "0"},
                    {"name": "GROVE_PCLQ_NAME", "value": pclq},
                    {
                        "name": "GROVE_HEADLESS_SERVICE",
                        "value": f"{service}.{namespace}.svc.cluster.local",
                    },
                    _label_ref("GROVE_PCLQ_POD_INDEX", "grove.io/podclique-pod-index"),
                ]
                labels = {
                    **clique["labels"],
                    "grove.io/podcliquescalinggroup": pcsg,
                    "grove.io/podcliquescalinggroup-replica-index": str(i),
                    "grove.io/podclique": pclq,
                    "grove.io/podclique-pod-index": str(n),
                }
                host = f"{pclq}-{n}"
                gang.append(
                    RunningPod(
                        host,
                        labels,
                        f"{host}.{service}.{namespace}.svc.cluster.local",
                        _with_env(pclq_spec, pod_env, op),
                        namespace,
                    )
                )
        yield gang


def _label_ref(name: str, label: str) -> dict[str, Any]:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{label}']"}}}


def gangs(workload: dict[str, Any], grove: EnvOp = append) -> Iterator[list[RunningPod]]:
    """The running gangs of a composed LeaderWorkerSet or PodCliqueSet."""
    if workload["kind"] == "LeaderWorkerSet":
        return lws_pods(workload)
    assert workload["kind"] == "PodCliqueSet", workload["kind"]
    return grove_pods(workload, grove)
