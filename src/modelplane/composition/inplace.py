"""Which changes a composed remote object takes in place, and which the cluster refuses.

A rollout updates a replica in place by re-applying its objects under the same names. A
few fields cannot change once an object exists: the API server or an admission webhook
refuses the update, the provider-kubernetes Object goes ``Synced=False`` and the new shape
never applies. A change to one of them is made by new objects under new names instead: the
replica is replaced (make-before-break), never updated in place (docs/reconcile.md,
"Changes a cluster refuses in place").

The rules, by kind (the tests name the upstream source of each):

- ResourceClaimTemplate: the whole ``spec``.
- Deployment: ``spec.selector``.
- LeaderWorkerSet: ``spec.leaderWorkerTemplate.subGroupPolicy.subGroupSize`` (set, changed
  or removed).
- Grove PodCliqueSet: the set and order of cliques, the startup type, each clique's
  ``roleName``, ``minAvailable``, ``startsAfter``, ``podSpec.schedulerName``,
  ``resourceSharing`` and topology constraint; the set of scaling groups and each group's
  ``cliqueNames``, ``minAvailable``, ``resourceSharing`` and topology constraint; the
  template's ``resourceClaimTemplates``, ``resourceSharing`` and topology constraint.
- Any object whose kind changes under the same resource key (a new kind is a new object).
- Every object, when the replica's remote namespace changes (composition/namespaces.py):
  an object's namespace is part of its name.

Pure: the same objects always give the same refusals.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from modelplane.api import ModelReplica
from modelplane.composition.claims import claim_template
from modelplane.composition.names import (
    ReplicaNames,
    cache_pvc_name,
    claim_key,
    replica_names,
    workload_key,
)
from modelplane.composition.namespaces import desired_remote_namespace
from modelplane.composition.taints import pool_drivers
from modelplane.composition.types import Json, Stack
from modelplane.composition.workloads import engine_workload


@dataclass(frozen=True, slots=True)
class Refusal:
    """One field of one composed object that its cluster refuses to change in place."""

    key: str  # the object's resource key
    kind: str
    field: str  # the refused field, as a path in the object

    def __str__(self) -> str:
        return f"{self.kind} {self.field}"


_MISSING: Final = object()


def _at(obj: Any, *path: str) -> Any:
    """The value at ``path`` in nested mappings, or ``_MISSING``."""
    for part in path:
        if not isinstance(obj, Mapping) or part not in obj:
            return _MISSING
        obj = obj[part]
    return obj


def _changed(
    old: Mapping[str, Any], new: Mapping[str, Any], *paths: tuple[str, ...], prefix: str = ""
) -> list[str]:
    """The dotted paths among ``paths`` whose value differs (set, unset or changed)."""
    return [f"{prefix}{'.'.join(p)}" for p in paths if _at(old, *p) != _at(new, *p)]


def _claim_template(old: Json, new: Json) -> list[str]:
    return _changed(old, new, ("spec",))


def _deployment(old: Json, new: Json) -> list[str]:
    return _changed(old, new, ("spec", "selector"))


def _leader_worker_set(old: Json, new: Json) -> list[str]:
    return _changed(old, new, ("spec", "leaderWorkerTemplate", "subGroupPolicy", "subGroupSize"))


_CLIQUE_FIXED: Final = (
    ("roleName",),
    ("minAvailable",),
    ("startsAfter",),
    ("podSpec", "schedulerName"),
    ("resourceSharing",),
    ("topologyConstraint",),
)
_GROUP_FIXED: Final = (
    ("cliqueNames",),
    ("minAvailable",),
    ("resourceSharing",),
    ("topologyConstraint",),
)
_TEMPLATE_FIXED: Final = (
    ("cliqueStartupType",),
    ("resourceClaimTemplates",),
    ("resourceSharing",),
    ("topologyConstraint",),
)


def _named(items: Any) -> dict[str, Mapping[str, Any]]:
    """A list of named entries by name (entries without a name are skipped)."""
    if not isinstance(items, list):
        return {}
    return {i["name"]: i for i in items if isinstance(i, Mapping) and "name" in i}


def _names(items: Any) -> list[str]:
    return list(_named(items))


def _pod_clique_set(old: Json, new: Json) -> list[str]:
    was, now = _at(old, "spec", "template"), _at(new, "spec", "template")
    was = was if isinstance(was, Mapping) else {}
    now = now if isinstance(now, Mapping) else {}
    out = _changed(was, now, *_TEMPLATE_FIXED, prefix="spec.template.")
    cliques = "spec.template.cliques"
    if _names(was.get("cliques")) != _names(now.get("cliques")):
        out.append(cliques)
    else:
        new_cliques = _named(now.get("cliques"))
        for name, clique in _named(was.get("cliques")).items():
            spec, then = clique.get("spec") or {}, new_cliques[name].get("spec") or {}
            out += _changed(spec, then, *_CLIQUE_FIXED, prefix=f"{cliques}[{name}].spec.")
    groups = "spec.template.podCliqueScalingGroups"
    old_groups = _named(was.get("podCliqueScalingGroups"))
    new_groups = _named(now.get("podCliqueScalingGroups"))
    if set(old_groups) != set(new_groups):
        out.append(groups)
    else:
        for name, group in old_groups.items():
            out += _changed(group, new_groups[name], *_GROUP_FIXED, prefix=f"{groups}[{name}].")
    return out


_RULES: Final[dict[tuple[str, str], Callable[[Json, Json], list[str]]]] = {
    ("resource.k8s.io/v1", "ResourceClaimTemplate"): _claim_template,
    ("apps/v1", "Deployment"): _deployment,
    ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"): _leader_worker_set,
    ("grove.io/v1alpha1", "PodCliqueSet"): _pod_clique_set,
}


def refused_fields(old: Json, new: Json) -> list[str]:
    """The fields of ``old`` that its cluster refuses to change to ``new`` in place.

    Both are manifests of the same resource key; a different apiVersion or kind is refused
    as ``kind`` (the same name would then denote another object). A kind without rules
    takes every change.
    """
    if (old.get("apiVersion"), old.get("kind")) != (new.get("apiVersion"), new.get("kind")):
        return ["kind"]
    rule = _RULES.get((old.get("apiVersion", ""), old.get("kind", "")))
    return rule(old, new) if rule is not None else []


def refusals(old: Mapping[str, Json], new: Mapping[str, Json]) -> tuple[Refusal, ...]:
    """Every refused change between two keyed object sets, in ``new``'s key order.

    An object only in ``old`` is deleted and one only in ``new`` created: neither is a
    change in place.
    """
    out: list[Refusal] = []
    for key, manifest in new.items():
        before = old.get(key)
        if before is not None:
            kind = str(before.get("kind", ""))
            out += [Refusal(key, kind, f) for f in refused_fields(before, manifest)]
    return tuple(out)


def _guarded(
    replica: ModelReplica, names: ReplicaNames, stack: Stack
) -> Iterator[tuple[str, Json]]:
    """The replica's objects that have rules: its workloads and claim templates, keyed.

    The same objects, in the same order, as ``delivery.remote_objects`` composes them.
    """
    cache = replica.spec.model_cache_ref
    cache_pvc = cache_pvc_name(names.namespace, cache.name) if cache is not None else None
    pools = pool_drivers(replica)
    for engine in replica.spec.engines:
        yield workload_key(engine.name), engine_workload(names, engine, stack, cache_pvc, pools)
        for member in engine.members:
            template = claim_template(names, engine, member)
            if template is not None:
                yield claim_key(engine.name, member.role), template


def replacement_reasons(
    observed: ModelReplica, desired: ModelReplica, stack: Stack
) -> tuple[Refusal, ...]:
    """What ``observed``'s cluster would refuse if it were rewritten in place as ``desired``.

    Both are composed under the observed replica's names on a cluster of ``stack``; empty
    means every composed object takes the change in place.
    """
    names = replica_names(observed)
    out = refusals(dict(_guarded(observed, names, stack)), dict(_guarded(desired, names, stack)))
    if names.remote != desired_remote_namespace(desired):
        # Every remote object would be deleted and created again in the other namespace.
        out = (Refusal("*", "Namespace", "metadata.namespace"), *out)
    return out
