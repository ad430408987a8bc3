"""The declared floors are exactly what the package uses (docs/crossplane.md "Version floors").

Each table holds upstream facts, with the release and file they come from; the tests
find what the generated package uses and derive the floor from the tables, so a rule or
an XRD feature that needs a newer release cannot land without raising the floor, and a
floor cannot claim more than the package needs.
"""

from __future__ import annotations

import re
from typing import Any

from modelplane.api import RULES
from modelplane.api.crds import xrds
from modelplane.packaging import (
    CROSSPLANE_FLOOR,
    CROSSPLANE_VERSION,
    KUBERNETES_FLOOR,
    configuration,
    function_meta,
)

# kubernetes v1.34, staging/src/k8s.io/apiserver/pkg/cel/environment/base.go: the minor
# release that introduced each CRD-rule function (CEL's standard functions and macros and
# ext.Strings v0 are there from the start, "1.0").
INTRODUCED: dict[str, tuple[int, int]] = {
    **dict.fromkeys(
        (
            "has",
            "size",
            "all",
            "exists",
            "exists_one",
            "map",
            "filter",
            "type",
            "int",
            "string",
            "startsWith",
            "endsWith",
            "contains",
            "matches",
            "split",
            "join",
            "lowerAscii",
            "upperAscii",
            "replace",
            "substring",
            "trim",
            "indexOf",
        ),
        (1, 0),
    ),
    **dict.fromkeys(("quantity", "isQuantity"), (1, 28)),  # library.Quantity
    **dict.fromkeys(("sets.contains", "sets.equivalent", "sets.intersects"), (1, 29)),
    **dict.fromkeys(("ip", "isIP", "cidr", "isCIDR"), (1, 30)),  # library.IP, library.CIDR
    **dict.fromkeys(("semver", "isSemver"), (1, 33)),  # library.SemverLib
}
# component-base compatibility: new CRD rules are compiled at the server's minimum
# compatibility version, its own minor minus one, so a library introduced in 1.N is
# usable from a 1.(N+1) server.
COMPATIBILITY_LAG = 1

# What Crossplane carries from an apiextensions.crossplane.io/v2 XRD into the CRD, by the
# first release that does (older ones drop it without an error):
# - root-level x-kubernetes-validations: crossplane internal/xcrd/crd.go sets the CRD
#   root's XValidations from v2.2.0 (v2.0.x and v2.1.x copy only the description);
# - versions[].subresources.scale: the field exists in apis/apiextensions/v2/xrd_types.go
#   from v2.3.0, and crossplane-runtime v2.3.0 pkg/xcrd/crd.go copies it into the CRD.
CROSSPLANE_FEATURES = {"v2 XRD": (2, 0), "root rules": (2, 2), "scale subresource": (2, 3)}


def _version(text: str) -> tuple[int, int]:
    major, minor = text.split(".")
    return int(major), int(minor)


def _functions(rule: str) -> set[str]:
    """Every function or macro a rule calls: ``name(`` and ``.name(`` (``sets.x(`` whole)."""
    names = set(re.findall(r"(?<![\w.])(sets\.\w+|[A-Za-z_]\w*)\s*\(", rule))
    names |= set(re.findall(r"\.([A-Za-z_]\w*)\s*\(", rule))
    return names - {"sets"}


def test_every_rule_function_is_in_the_table() -> None:
    unknown = {f for r in RULES.values() for f in _functions(r.rule)} - set(INTRODUCED)
    assert not unknown, f"add these to INTRODUCED with their Kubernetes release: {unknown}"


def _needs(rule: str) -> tuple[int, int]:
    """The release that introduced the newest function a rule calls."""
    return max((INTRODUCED[f] for f in _functions(rule)), default=(1, 0))


def test_kubernetes_floor_is_what_the_rules_need() -> None:
    major, minor = max(_needs(r.rule) for r in RULES.values())
    assert _version(KUBERNETES_FLOOR) == (major, minor + COMPATIBILITY_LAG)
    # The one rule that sets it: ICL-09's isSemver (docs/crossplane.md "Version floors").
    setting = {i for i, r in RULES.items() if _needs(r.rule) == (major, minor)}
    assert setting == {"ICL-09"}


def _features(definition: dict[str, Any]) -> set[str]:
    found = {"v2 XRD"} if definition["apiVersion"] == "apiextensions.crossplane.io/v2" else set()
    for version in definition["spec"]["versions"]:
        if version["schema"]["openAPIV3Schema"].get("x-kubernetes-validations"):
            found.add("root rules")
        if "scale" in version.get("subresources", {}):
            found.add("scale subresource")
    return found


def test_crossplane_floor_is_what_the_xrds_need() -> None:
    used = set().union(*(_features(d) for d in xrds()))
    assert used == set(CROSSPLANE_FEATURES)  # each fact above is about something we use
    assert _version(CROSSPLANE_FLOOR) == max(CROSSPLANE_FEATURES[f] for f in used)


def test_both_packages_declare_the_crossplane_floor() -> None:
    assert f">=v{CROSSPLANE_FLOOR}.0" == CROSSPLANE_VERSION
    assert configuration()["spec"]["crossplane"]["version"] == CROSSPLANE_VERSION
    assert function_meta()["spec"]["crossplane"]["version"] == CROSSPLANE_VERSION
