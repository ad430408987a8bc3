"""The declared floors are exactly what the package uses (docs/crossplane.md "Version floors").

The upstream facts have one home each: the Kubernetes release that offers each CEL
library to new CRD rules is ``tools.crdcost.estimate`` (kubernetes v1.34
``staging/src/k8s.io/apiserver/pkg/cel/environment/base.go``), the Crossplane release that
carries each XRD feature into the CRD is ``tools.crdcost.xcrd.FEATURE_SINCE`` (crossplane
``internal/xcrd/crd.go`` v2.2.0, crossplane-runtime ``pkg/xcrd/crd.go`` v2.3.0). These tests
find what the generated package uses and derive the floors from them, so a rule or an XRD
feature that needs a newer release cannot land without raising the floor, and a floor
cannot claim more than the package needs. docs/crd-cost.md has the sources.
"""

from __future__ import annotations

from modelplane.api import RULES
from modelplane.api.crds import xrds
from modelplane.packaging import (
    CROSSPLANE_FLOOR,
    CROSSPLANE_VERSION,
    KUBERNETES_FLOOR,
    PROVIDER_HELM,
    PROVIDER_HELM_VERSION,
    configuration,
    function_meta,
)
from modelplane.reconcile.stack import HELM_API, USAGE_API
from tests.paths import shared_path
from tools.crdcost.estimate import estimate_rule, schema_decl_type, schema_nodes
from tools.crdcost.xcrd import (
    CROSSPLANE_RELEASES,
    FEATURE_SINCE,
    crd_for_xrd,
    crossplane_features,
    minimum_crossplane,
)


def _version(text: str) -> tuple[int, int]:
    major, minor = text.split(".")
    return int(major), int(minor)


def _minimum_servers() -> dict[str, str]:
    """Each generated rule's text -> the oldest API server that accepts it in a new CRD,
    estimated where the rule sits in the CRD Crossplane creates."""
    out: dict[str, str] = {}
    for definition in xrds():
        crd = crd_for_xrd(definition, CROSSPLANE_RELEASES[-1])
        for version in crd["spec"]["versions"]:
            for node in schema_nodes(version["schema"]["openAPIV3Schema"]):
                decl = schema_decl_type(node.schema, node.is_root)
                for v in node.schema.get("x-kubernetes-validations") or []:
                    assert decl is not None, node.path
                    estimate = estimate_rule(v["rule"], decl)
                    assert estimate.error is None, (node.path, v["rule"], estimate.error)
                    out[v["rule"]] = estimate.minimum_server()
    return out


def test_kubernetes_floor_is_what_the_rules_need() -> None:
    servers = _minimum_servers()
    assert set(servers) == {r.rule for r in RULES.values()}  # every declared rule is there
    newest = max(servers.values(), key=_version)
    assert newest == KUBERNETES_FLOOR
    # The one rule that sets it: ICL-09's isSemver (docs/crossplane.md "Version floors").
    setting = {i for i, r in RULES.items() if servers[r.rule] == newest}
    assert setting == {"ICL-09"}


def test_crossplane_floor_is_what_the_xrds_need() -> None:
    definitions = xrds()
    assert {d["apiVersion"] for d in definitions} == {"apiextensions.crossplane.io/v2"}
    used = set().union(*(crossplane_features(d) for d in definitions))
    assert used == set(FEATURE_SINCE)  # each Crossplane fact is about something we use
    assert max((minimum_crossplane(d) for d in definitions), key=_version) == CROSSPLANE_FLOOR


def test_both_packages_declare_the_crossplane_floor() -> None:
    assert f">=v{CROSSPLANE_FLOOR}.0" == CROSSPLANE_VERSION
    assert configuration()["spec"]["crossplane"]["version"] == CROSSPLANE_VERSION
    assert function_meta()["spec"]["crossplane"]["version"] == CROSSPLANE_VERSION


def _released_in(schema_file: str) -> tuple[str, str]:
    """(repository, tag) of a released CRD in ../shared/schemas, from its SOURCES table."""
    sources = shared_path("schemas/SOURCES-stack.md").read_text(encoding="utf-8")
    row = next(line for line in sources.splitlines() if line.startswith(f"| `{schema_file}`"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    return cells[1], cells[2].split()[0]


def test_the_package_needs_the_provider_helm_release_whose_kinds_the_stack_composes() -> None:
    assert HELM_API == "helm.m.crossplane.io/v1beta1"
    assert {"provider": PROVIDER_HELM, "version": PROVIDER_HELM_VERSION} in configuration()["spec"][
        "dependsOn"
    ]
    for schema in (
        "helm.m.crossplane.io_releases.yaml",
        "helm.m.crossplane.io_clusterproviderconfigs.yaml",
    ):
        assert _released_in(schema) == ("crossplane-contrib/provider-helm", "v1.4.0")
    assert PROVIDER_HELM_VERSION == ">=v1.4.0"


def test_the_crossplane_floor_serves_the_usages_the_stack_composes() -> None:
    # protection.crossplane.io/v1beta1 Usage is Crossplane v2's; the schema we compose
    # against is a patch release of the floor's minor release.
    assert USAGE_API == "protection.crossplane.io/v1beta1"
    repository, tag = _released_in("protection.crossplane.io_usages.yaml")
    assert repository == "crossplane/crossplane"
    assert tag.removeprefix("v").rsplit(".", 1)[0] == CROSSPLANE_FLOOR
