"""The shapes of the stack table: a component, its chart, its values and its requirements."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

# A JSON scalar, a list of scalars or a list of flat objects (tolerations): every value the
# table sets is one of these, held immutable (tuples, read-only mappings).
Scalar = str | int | bool
ValueLeaf = Scalar | tuple[Scalar, ...] | tuple[Mapping[str, Scalar], ...]
# An object we compose ourselves, as the JSON data it is sent as (a fresh value per call).
Manifest = dict[str, object]


@dataclass(frozen=True, slots=True)
class Chart:
    """A released Helm chart: where provider-helm pulls it from."""

    repository: str  # an HTTP chart repository, or an ``oci://`` prefix without the chart name
    name: str
    version: str  # exactly as published (some charts keep the leading ``v``)


@dataclass(frozen=True, slots=True)
class Value:
    """One Helm value we set, by dotted path, and why we rely on it."""

    path: str
    value: ValueLeaf
    why: str

    def values_json(self) -> object:
        """The value as fresh JSON data."""
        return _plain(self.value)


@dataclass(frozen=True, slots=True)
class ServedApi:
    """An API group-version the cluster must serve, checked through its APIService.

    Every served group-version, built in or from a CRD, has an APIService named
    ``<version>.<group>``: a small object, where a CRD carries its whole schema.
    """

    group: str
    version: str
    kinds: tuple[str, ...]  # the kinds we compose of it, for the message and the docs

    @property
    def api_service(self) -> str:
        """The APIService's name."""
        return f"{self.version}.{self.group}"

    @property
    def label(self) -> str:
        """How a message names it."""
        return f"{self.group}/{self.version} ({', '.join(self.kinds)})"


@dataclass(frozen=True, slots=True)
class PresentObject:
    """An object the cluster must carry (a DeviceClass, a GatewayClass)."""

    api_version: str
    kind: str
    name: str
    namespace: str | None = None

    @property
    def label(self) -> str:
        """How a message names it."""
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind} {where}{self.name}"


Requirement = ServedApi | PresentObject

# When a cluster needs a component: always, for a serving stack, for a DRA driver one of its
# pools claims, for the gateway implementation its routes are composed for, or where a
# TelemetryDestination selects the cluster.
NeedKind = Literal["always", "stack", "driver", "gateway", "telemetry", "platform"]


@dataclass(frozen=True, slots=True)
class Need:
    """The condition under which a cluster needs a component."""

    kind: NeedKind
    value: str = ""

    @property
    def text(self) -> str:
        """How the docs say it."""
        if self.kind == "always":
            return "every cluster"
        if self.kind == "stack":
            return f"stack {self.value}"
        if self.kind == "driver":
            return f"a pool claiming {self.value} devices"
        if self.kind == "telemetry":
            return "a TelemetryDestination selects the cluster"
        if self.kind == "platform":
            return f"a cluster this project provisions on {self.value}"
        return f"gateway {self.value}"


@dataclass(frozen=True, slots=True)
class Component:
    """One component of the serving stack.

    ``chart`` None: objects this project composes itself (``reconcile/stack.py``), built
    for the release ``release`` of the component they configure. ``needs``: components
    that must be Ready before this one is created and that outlive it on teardown.
    ``requires``: what a Provided cluster must serve in this component's place.
    ``unchecked``: what a Provided cluster must also bring that no observation can prove.
    ``configures``: objects of ours on top of what others installed (the KAI queues), composed
    on Provided clusters too; everything else is installed on Managed clusters only.
    ``wait``: the Release turns Ready only once its workloads roll out (Helm's ``--wait``).
    ``pool_affinity``: the values path of the node affinity that keeps a driver's node
    plugin on the pools claiming its devices (and off every other node).
    ``platform_values``: values added on clusters this project provisioned on a cloud (by
    ``spec.cluster.source``), where the cloud's node image is known.
    """

    name: str
    title: str
    release: str
    need: Need
    namespace: str
    source: str
    chart: Chart | None = None
    values: tuple[Value, ...] = ()
    needs: tuple[str, ...] = ()
    requires: tuple[Requirement, ...] = ()
    unchecked: tuple[str, ...] = ()
    configures: bool = False
    wait: bool = True
    pool_affinity: str | None = None
    platform_values: tuple[tuple[str, tuple[Value, ...]], ...] = ()

    @property
    def installs(self) -> bool:
        """Installed on Managed clusters only (a chart, or objects that install something)."""
        return not self.configures

    def values_for(self, platform: str | None) -> tuple[Value, ...]:
        """The values set on a cluster provisioned on ``platform`` (None: not provisioned)."""
        extra = next((v for p, v in self.platform_values if p == platform), ())
        return self.values + extra

    def values_tree(self, platform: str | None = None) -> dict[str, object]:
        """The values as the nested mapping Helm reads (a fresh dict on every call)."""
        tree: dict[str, object] = {}
        for value in self.values_for(platform):
            set_path(tree, value.path, _plain(value.value))
        return tree


def set_path(tree: dict[str, object], path: str, value: object) -> None:
    """Set a Helm value by its dotted ``path``, making the mappings on the way."""
    node = tree
    *parents, leaf = path.split(".")
    for part in parents:
        child = node.setdefault(part, {})
        assert isinstance(child, dict), path  # our paths never run through a scalar
        node = child
    node[leaf] = value


def _plain(value: ValueLeaf) -> object:
    """A value as fresh JSON data."""
    if isinstance(value, tuple):
        return [dict(v) if isinstance(v, Mapping) else v for v in value]
    return value
