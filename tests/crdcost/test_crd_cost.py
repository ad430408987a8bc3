"""Will a real API server accept the generated CRDs? Rule cost, library floors, Crossplane floor.

The Kubernetes API server refuses a CRD whose validation rules cost more than its static
estimate allows (per rule 10,000,000; per version 100,000,000). These tests estimate every
generated rule the way the server does (``tools.crdcost.estimate``), on the XRDs of the
package as Crossplane turns them into CRDs (``tools.crdcost.xcrd``), and hold them to
half the limits (``tools.crdcost.budget``, which ``make package`` enforces too). The
estimator is calibrated against upstream's own cost tests
(tests/crdcost/crd_cost_calibration.py) and cross-checked with ../shared/tools/crd-cel-cost.
Sources: docs/crd-cost.md.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from crd_cost_calibration import (
    COST_ESTIMATION,
    LIBRARY_CASES,
    REPLACE_SIZES,
    Case,
    LibCase,
    diff_rules,
    diff_schema,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from modelplane.packaging import CROSSPLANE_FLOOR, KUBERNETES_FLOOR, package_files
from tests.paths import SHARED
from tools.crdcost._calls import k8s_replace
from tools.crdcost.budget import describe_rule, problems
from tools.crdcost.estimate import (
    CRD_COST_LIMIT,
    MAX_COST,
    RULE_COST_LIMIT,
    CelType,
    Est,
    VersionCost,
    compatibility_version,
    estimate_crd,
    estimate_expression,
    estimate_rule,
    estimate_schema,
    schema_decl_type,
    schema_nodes,
)
from tools.crdcost.xcrd import CROSSPLANE_RELEASES, FEATURE_SINCE, crd_for_xrd, minimum_crossplane


def package_xrds() -> dict[str, dict[str, Any]]:
    """The XRDs exactly as ``modelplane package`` writes them, by kind."""
    out = {}
    for path, text in package_files().items():
        if path.endswith("/definition.yaml"):
            doc = yaml.safe_load(text)
            out[doc["spec"]["names"]["kind"]] = doc
    return out


XRDS = package_xrds()


def _versions(kind: str, kubernetes: str = KUBERNETES_FLOOR) -> list[VersionCost]:
    # Converted as the newest Crossplane read (2.3) does: it keeps the most of the XRD
    # (root rules), so it is the costliest of the releases the package may run on.
    return estimate_crd(crd_for_xrd(XRDS[kind], CROSSPLANE_RELEASES[-1]), kubernetes=kubernetes)


# ---------------------------------------------------------------- calibration


def _calibration_params() -> list[Any]:
    # Upstream leaves a zero expectation unchecked, so those variants are left out.
    out = []
    for c in COST_ESTIMATION:
        if c.calc:
            out.append(pytest.param(c, None, c.calc, id=f"{c.name} (calc maxLength)"))
        if c.set_cost:
            out.append(pytest.param(c, c.set_max, c.set_cost, id=f"{c.name} (set maxLength)"))
    return out


@pytest.mark.parametrize(("case", "bound", "expected"), _calibration_params())
def test_cost_estimation_matches_upstream(case: Case, bound: int | None, expected: int) -> None:
    """compilation_test.go TestCostEstimation, both variants of every case."""
    schema = case.gen(bound)
    decl = schema_decl_type(schema, False)
    assert decl is not None
    result = estimate_rule(schema["x-kubernetes-validations"][0]["rule"], decl)
    assert result.error is None
    if bound is None and case.calc_at_least:
        assert result.cost >= expected
    else:
        assert result.cost == expected


def _test_size(path: Any, t: CelType) -> Est | None:
    # cost_test.go testCostEstimator: strings and bytes CEL cannot size are 0..12.
    return Est(0, 12) if t.kind in ("string", "bytes") else None


@pytest.mark.parametrize("case", LIBRARY_CASES, ids=lambda c: f"{c.test}: {c.name}")
def test_library_cost_matches_upstream(case: LibCase) -> None:
    """apiserver pkg/cel/library/cost_test.go: the [min, max] estimate of each expression."""
    assert estimate_expression(case.expr, _test_size, compatibility="1.34") == (
        case.lo,
        case.hi,
    )


@pytest.mark.parametrize(
    ("target", "sizes", "expected"),
    [pytest.param(t, a, e, id=n) for n, t, a, e in REPLACE_SIZES],
)
def test_replace_result_size_matches_upstream(
    target: tuple[int, int], sizes: tuple[tuple[int, int], ...], expected: tuple[int, int]
) -> None:
    """cost_test.go TestSize: replace()'s result size (it prices what follows it)."""
    old, new = (Est(*s) for s in sizes)
    _cost, size = k8s_replace(Est(*target), old, new)
    assert size == Est(*expected)


@pytest.mark.parametrize(
    ("name", "cel_name"),
    [
        ("replicas", "replicas"),
        ("namespace", "__namespace__"),  # reserved words
        ("a.b", "a__dot__b"),
        ("x/y-z", "x__slash__y__dash__z"),
        ("a__b", "a__underscores__b"),
        ("_ok", "_ok"),
        ("9lives", None),  # a leading digit
        ("a b", None),  # a character CEL cannot spell
    ],
)
def test_property_names_as_cel_sees_them(name: str, cel_name: str | None) -> None:
    """apiserver pkg/cel/escaping.go Escape (v0.34.9): unreachable properties are left out
    of the type, so a rule naming them does not compile."""
    decl = schema_decl_type(_obj(**{name: {"type": "integer"}}))
    assert decl is not None
    assert list(decl.fields) == ([cel_name] if cel_name else [])


@pytest.mark.parametrize(("compatibility", "compiles"), [("1.30", False), ("1.31", True)])
def test_reserved_words_select_escaped_fields_from_1_31(compatibility: str, compiles: bool) -> None:
    """compilation_test.go "invalid for escaping": ``self.if`` compiles from compatibility
    1.31 (apiserver environment.go SetRecognizeKeywordAsFieldName); ``__if__`` always."""
    decl = schema_decl_type(_obj(**{"if": {"type": "integer"}}))
    assert decl is not None
    assert estimate_rule("self.__if__ == 10", decl, compatibility=compatibility).error is None
    plain = estimate_rule("self.if == 10", decl, compatibility=compatibility)
    assert (plain.error is None) == compiles


# ---------------------------------------------------------------- cannot be fooled


def _obj(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props}


NAMED_ITEMS = _obj(
    items={
        "type": "array",
        "maxItems": 10,
        "items": _obj(name={"type": "string", "maxLength": 10}),
    }
)


def _cost(rule: str, schema: dict[str, Any] = NAMED_ITEMS) -> int:
    decl = schema_decl_type(schema)
    assert decl is not None
    result = estimate_rule(rule, decl)
    assert result.error is None, result.error
    return result.cost


def test_indexing_a_filter_result_loses_the_schema_bounds() -> None:
    """cel-go tracks no schema path through a comprehension result, so what lies below
    ``filter(...)[0]`` is unbounded: the quirk that made the Unified port rule 2^64-1."""
    # 4 for self.items[0].name, ceil((4 x 10 + 1) x 0.1) x ceil(1 x 0.25) for matches.
    assert _cost("self.items[0].name.matches('a')") == 4 + 5 * 1
    # An unknown size is 2^64-1; matches prices a tenth of it per regex unit.
    assert _cost("self.items.filter(i, true)[0].name.matches('a')") > 10**18
    assert _cost("self.items.map(i, i)[0].name.matches('a')") > 10**18


def test_unbounded_lists_are_sized_by_the_request_size() -> None:
    unbounded = _obj(items={"type": "array", "items": {"type": "integer"}})
    # (3 MiB - 2) / (1 + 1) items, each costing the loop condition (2) and step (3);
    # plus self.items (2) and the result (1).
    assert _cost("self.items.all(i, i > 0)", unbounded) == 2 + 1 + 1572863 * (2 + 3)
    # A rule on the items themselves runs 3 MiB / (1 + 1) times (compilation.go
    # maxCardinality, without the "- 2" of the list size).
    items = unbounded["properties"]["items"]
    items["items"] = {**items["items"], "x-kubernetes-validations": [{"rule": "self > 0"}]}
    ((rule,), total) = estimate_schema(unbounded)
    assert (rule.cardinality, rule.applied, rule.cost) == (None, 1572864, 2)
    assert total == rule.total == 2 * 1572864


def test_unmodelled_functions_are_refused_not_priced_cheap() -> None:
    decl = schema_decl_type(NAMED_ITEMS)
    assert decl is not None
    result = estimate_rule("self.items.reverse().size() > 0", decl, compatibility="1.34")
    assert result.cost == MAX_COST
    assert result.error is not None and "'reverse'" in result.error
    typo = estimate_rule("self.items.all(i, i.name.startWith('a'))", decl)
    assert typo.cost == MAX_COST and typo.error is not None and "'startWith'" in typo.error


@pytest.mark.parametrize(
    ("rule", "compiles"),
    [
        ("self.items[0] == null", True),
        ("self.items[0].name == null", False),
        ("self.items.size() == 1.0", False),
        ("self.items[0] == self.items[1]", True),
        ("[1, 2].exists(x, x == 2)", True),
        ("[1, 'a'].size() == 2", False),
        ("{'a': 1, 'b': 'c'}.size() == 2", False),
        ("self == 10", False),
        ("self.items.size() >= 1.5", True),  # cross-type numeric ordering
        ("self.items[0].name < 'b'", True),
        ("self.items[0] < self.items[1]", False),
        ("self.items[0].name < 1", False),
    ],
)
def test_types_the_checker_refuses(rule: str, compiles: bool) -> None:
    """cel-go ``_==_`` is ``(A, A) -> bool`` and Kubernetes enables homogeneous aggregate
    literals, so mixed types do not compile (compilation_test.go "invalid for escaping":
    ``self == 10`` on an object finds no matching overload)."""
    decl = schema_decl_type(NAMED_ITEMS)
    assert decl is not None
    assert (estimate_rule(rule, decl).error is None) == compiles


@pytest.mark.parametrize(
    ("rule", "compiles"),
    [
        ("self >= oldSelf.value()", True),
        ("self >= oldSelf.orValue(1)", True),
        ("oldSelf.hasValue() ? self >= oldSelf.value() : true", True),
        ("self >= oldSelf", False),
        ("self >= oldSelf.orValue('')", False),
    ],
)
def test_optional_old_self_is_typed(rule: str, compiles: bool) -> None:
    """compilation_test.go "optional primitive transition rule type checking"."""
    decl = schema_decl_type({"type": "integer"})
    assert decl is not None
    result = estimate_rule(rule, decl, optional_old_self=True)
    assert (result.error is None) == compiles, result.error
    if compiles:
        assert result.uses_old_self


@pytest.mark.parametrize(
    ("rule", "compiles"),
    [
        ("self.i >= oldSelf.i.value()", True),
        ("self.o.i >= oldSelf.o.i.value()", True),
        ("self.o.s == oldSelf.o.s.value()", True),
        ("self.o.i >= oldSelf.o.i.orValue(1)", True),
        ("oldSelf.hasValue() ? self.o.i >= oldSelf.o.i.value() : true", True),
        ("self.o.i >= oldSelf.o.i", False),
        ("self.o.i >= oldSelf.o.s.orValue(0)", False),
    ],
)
def test_optional_old_self_fields_are_optional(rule: str, compiles: bool) -> None:
    """compilation_test.go "optional complex transition rule type checking"."""
    leaf = {"i": {"type": "integer"}, "s": {"type": "string"}}
    decl = schema_decl_type(_obj(**leaf, o=_obj(**leaf)))
    assert decl is not None
    result = estimate_rule(rule, decl, optional_old_self=True)
    assert (result.error is None) == compiles, result.error


def test_whitespace_only_rules_cost_nothing() -> None:
    """compilation_test.go "whitespace-only rule": no error, nothing compiled."""
    decl = schema_decl_type(NAMED_ITEMS)
    assert decl is not None
    assert estimate_rule(" \t", decl) == estimate_rule("", decl)
    assert estimate_rule(" \t", decl).cost == 0 and estimate_rule(" \t", decl).error is None


def test_undefined_fields_do_not_compile() -> None:
    decl = schema_decl_type(NAMED_ITEMS)
    assert decl is not None
    result = estimate_rule("self.items.all(i, i.nmae == 'x')", decl)
    assert result.error is not None and "nmae" in result.error


def test_crossplane_metadata_name_bound_is_invisible_to_cel() -> None:
    """Crossplane sets metadata.name maxLength 63, but the API server replaces a root
    metadata without generateName by unbounded names (apiserver WithTypeAndObjectMeta)."""
    xrd = XRDS["ModelCache"]
    crd = crd_for_xrd(xrd)
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert schema["properties"]["metadata"]["properties"]["name"]["maxLength"] == 63
    decl = schema_decl_type(schema, True)
    assert decl is not None
    rule = "self.metadata.name.startsWith('a')"
    # Three selects, and startsWith is priced by the literal's size: ceil(1 x 0.1).
    assert estimate_rule(rule, decl).cost == 3 + 1
    rule = "self.metadata.name.matches('^a')"
    # (3 MiB - 2 + 1) x 0.1 x ceil(2 x 0.25) + 3 selects.
    assert estimate_rule(rule, decl).cost == 314573 * 1 + 3


def test_message_expressions_count_once_towards_the_total() -> None:
    """validation.go: a messageExpression's cost joins the CRD total without cardinality."""
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "names": {
                        "type": "array",
                        "maxItems": 4,
                        "items": {
                            "type": "string",
                            "maxLength": 8,
                            "x-kubernetes-validations": [
                                {
                                    "rule": "self.startsWith('a')",
                                    "messageExpression": "'bad name ' + self",
                                },
                                {
                                    "rule": "self.size() > 0",
                                    "messageExpression": "string(self.size())",
                                },
                            ],
                        },
                    }
                },
            }
        },
    }
    crd = {
        "metadata": {"name": "things.example.org"},
        "spec": {
            "names": {"kind": "Thing"},
            "versions": [{"name": "v1", "schema": {"openAPIV3Schema": schema}}],
        },
    }
    (version,) = estimate_crd(crd)
    first, second = version.rules
    # startsWith: 1 + ceil(1 x 0.1); the message: 1 + ceil((9 + 32) x 0.1) for the concatenation.
    assert (first.cost, first.cardinality, first.total, first.message_cost) == (2, 4, 8, 6)
    assert (second.total, second.message_cost) == (3 * 4, 3)
    assert version.total == 8 + 6 + 12 + 3
    decl = schema_decl_type({"type": "string"})
    assert decl is not None
    refused = estimate_rule("self.size()", decl, result="string")
    assert refused.error is not None and "string" in refused.error


@pytest.mark.parametrize(
    ("list_type", "map_type", "refused"),
    [
        ("atomic", None, True),
        ("set", None, True),
        (None, None, True),
        ("map", None, False),
        ("map", "atomic", True),
        ("map", "granular", False),
    ],
)
def test_old_self_only_where_the_server_can_correlate(
    list_type: str | None, map_type: str | None, refused: bool
) -> None:
    """validation.go forbidOldSelfValidations: transition rules are refused inside the items
    of a list that is not a list-map, and inside the properties of an atomic map."""
    item: dict[str, Any] = {
        "type": "object",
        "required": ["name"],
        "properties": {
            "name": {"type": "string", "maxLength": 8},
            "spec": {
                "type": "object",
                "properties": {"size": {"type": "integer"}},
                "x-kubernetes-validations": [{"rule": "self.size >= oldSelf.size"}],
            },
        },
    }
    if map_type:
        item["x-kubernetes-map-type"] = map_type
    items: dict[str, Any] = {"type": "array", "maxItems": 4, "items": item}
    if list_type:
        items["x-kubernetes-list-type"] = list_type
        if list_type == "map":
            items["x-kubernetes-list-map-keys"] = ["name"]
    ((rule,), _total) = estimate_schema(_obj(items=items))
    assert (rule.error is not None) == refused, rule.error
    if refused:
        assert "uncorrelatable" in str(rule.error)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(min_value=0, max_value=5000), k=st.integers(min_value=0, max_value=5000))
def test_a_tighter_bound_never_costs_more(n: int, k: int) -> None:
    """Invariant: lowering maxItems/maxLength never raises an estimate, and a bound below
    the request-size estimate never costs more than no bound."""
    for case in COST_ESTIMATION[:30]:
        rule = case.gen(None)["x-kubernetes-validations"][0]["rule"]
        costs = []
        for bound in (n, n + k):
            decl = schema_decl_type(case.gen(bound))
            assert decl is not None
            costs.append(estimate_rule(rule, decl).cost)
        assert costs[0] <= costs[1], case.name


# ---------------------------------------------------------------- the generated package


@pytest.mark.parametrize("kind", sorted(XRDS))
def test_every_generated_rule_is_within_half_the_limits(kind: str) -> None:
    found = problems(_versions(kind))
    assert not found, "\n".join(found)


def test_the_package_has_rules_to_estimate() -> None:
    # Guards the walk itself: a conversion that lost the rules would pass everything.
    counts = {k: sum(len(v.rules) for v in _versions(k)) for k in XRDS}
    assert counts["ModelDeployment"] > 20 and counts["InferenceCluster"] > 5
    assert all(r.cost > 0 for k in XRDS for v in _versions(k) for r in v.rules)


@pytest.mark.parametrize("kind", sorted(XRDS))
def test_every_rule_compiles_at_the_kubernetes_floor(kind: str) -> None:
    """Only the libraries the floor's API server offers to new rules (its compatibility
    version, one minor below) are used."""
    errors = [describe_rule(v, r) for v in _versions(kind) for r in v.rules if r.error]
    assert not errors, "\n".join(errors)


def test_one_minor_below_the_floor_refuses_the_newest_library() -> None:
    """isSemver (Semver, Kubernetes 1.33) is offered from 1.34 servers; a 1.33 server
    checks at compatibility 1.32 and reports an undeclared reference."""
    assert compatibility_version("1.34") == "1.33"
    newest = [
        r for v in _versions("InferenceClass", "1.33") for r in v.rules if "isSemver" in r.rule
    ]
    assert newest and all(r.error and "Semver" in r.error for r in newest)
    assert not any(r.error for v in _versions("InferenceClass", "1.34") for r in v.rules)


def test_the_package_needs_exactly_the_kubernetes_floor() -> None:
    """The floor is the newest library a rule calls, one minor later: no lower (every rule
    compiles) and no higher than the package needs."""
    needed = set()
    for kind, xrd in XRDS.items():
        schema = crd_for_xrd(xrd)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        for n in schema_nodes(schema):
            decl = schema_decl_type(n.schema, n.is_root)
            for v in n.schema.get("x-kubernetes-validations") or []:
                assert decl is not None, kind
                needed.add(estimate_rule(v["rule"], decl).minimum_server())
    newest = max(needed, key=lambda v: tuple(map(int, v.split("."))))
    assert newest == KUBERNETES_FLOOR


@pytest.mark.parametrize(
    ("rule", "library", "server"),
    [
        ("isQuantity(self)", "Quantity", "1.29"),
        ("self.split('/').join('/') == self", "ext.Strings v2", "1.30"),
        ("isIP(self)", "IP/CIDR", "1.31"),
        ("isSemver(self)", "Semver", "1.34"),
    ],
)
def test_libraries_are_offered_from_their_release(rule: str, library: str, server: str) -> None:
    """apiserver pkg/cel/environment/base.go (v0.34.9): the introduction versions."""
    decl = schema_decl_type({"type": "string", "maxLength": 10})
    assert decl is not None
    at = estimate_rule(rule, decl, compatibility=compatibility_version(server))
    assert at.error is None
    assert library in at.libraries and at.minimum_server() == server
    major, minor = server.split(".")
    below = compatibility_version(f"{major}.{int(minor) - 1}")
    early = estimate_rule(rule, decl, compatibility=below)
    assert early.error is not None and library in early.error


@pytest.mark.parametrize("kind", sorted(XRDS))
def test_xrds_use_nothing_crossplane_drops_before_its_floor(kind: str) -> None:
    needed = minimum_crossplane(XRDS[kind])
    assert tuple(map(int, needed.split("."))) <= tuple(map(int, CROSSPLANE_FLOOR.split("."))), (
        f"{kind} needs Crossplane {needed} (features: {FEATURE_SINCE}), "
        f"the package declares {CROSSPLANE_FLOOR}"
    )


def test_crossplane_releases_keep_features_as_read_upstream() -> None:
    """crossplane internal/xcrd/crd.go v2.2.0 adds root validations; crossplane-runtime
    pkg/xcrd/crd.go v2.3.0 (used by crossplane v2.3.0) adds the scale subresource."""
    xrd = XRDS["ModelDeployment"]
    assert minimum_crossplane(xrd) == "2.3"
    by_release = {v: crd_for_xrd(xrd, v)["spec"]["versions"][0] for v in ("2.1", "2.2", "2.3")}
    roots = {
        v: "x-kubernetes-validations" in c["schema"]["openAPIV3Schema"]
        for v, c in by_release.items()
    }
    scales = {v: "scale" in c["subresources"] for v, c in by_release.items()}
    assert roots == {"2.1": False, "2.2": True, "2.3": True}
    assert scales == {"2.1": False, "2.2": False, "2.3": True}
    spec = by_release["2.3"]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert "crossplane" in spec["properties"]


# ---------------------------------------------------------------- upstream CRDs


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _upstream_crds() -> list[dict[str, Any]]:
    folder = SHARED / "schemas"
    if not folder.exists():
        pytest.skip(f"{folder} is absent: these checks need ../shared next to the repo")
    docs = []
    for path in sorted(folder.glob("*.yaml")):
        # The C loader: these files are large (HTTPRoute alone is ~1 MB).
        for doc in yaml.load_all(path.read_text(encoding="utf-8"), Loader=_LOADER):
            if doc and doc.get("kind") == "CustomResourceDefinition":
                docs.append(doc)
    return docs


def test_no_false_refusals_on_upstream_crds() -> None:
    """Released upstream CRDs (Gateway API HTTPRoute, Crossplane's own, LeaderWorkerSet,
    Grove, InferencePool) install on 1.34 servers, so every rule must compile and fit."""
    versions = [v for crd in _upstream_crds() for v in estimate_crd(crd, kubernetes="1.34")]
    assert sum(len(v.rules) for v in versions) > 200
    found = problems(versions, rule_target=RULE_COST_LIMIT, crd_target=CRD_COST_LIMIT)
    assert not found, "\n".join(found)


# ---------------------------------------------------------------- the shared cross-check

TOOL = SHARED / "tools" / "crd-cel-cost" / "crd_cel_cost.py"


def _run_tool(folder: Path, *flags: str) -> dict[str, Any]:
    if not TOOL.exists():
        pytest.skip(f"{TOOL} is absent: the cross-check needs ../shared next to the repo")
    report = folder / "report.json"
    # Exit status 1 only says some rule is over a limit; the report has everything.
    subprocess.run(
        [sys.executable, str(TOOL), *flags, "--json", str(report), str(folder)],
        check=False,
        capture_output=True,
        timeout=120,
    )
    data: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
    return data


@pytest.fixture(scope="module")
def shared_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out: Path = tmp_path_factory.mktemp("xrds")
    for path, text in package_files().items():
        if path.endswith("/definition.yaml"):
            (out / f"{path.split('/')[-2]}.yaml").write_text(text, encoding="utf-8")
    return _run_tool(out, "--crossplane", "--k8s-version", KUBERNETES_FLOOR)


def _close(ours: int, theirs: int) -> bool:
    return abs(ours - theirs) <= 0.1 * max(theirs, 1)


def test_shared_tool_agrees_within_ten_percent(shared_report: dict[str, Any]) -> None:
    theirs: dict[tuple[str, str, int], int] = {}
    totals: dict[str, int] = {}
    for crd in shared_report["crds"]:
        for v in crd["versions"]:
            totals[crd["kind"]] = v["total"]
            for r in v["rules"]:
                theirs[(crd["kind"], r["path"], r["index"])] = r["cost"]
    disagreements = []
    seen = 0
    for kind in XRDS:
        for v in _versions(kind):
            if not _close(v.total, totals[kind]):
                disagreements.append(
                    f"{kind} total: ours {v.total:,}, shared tool {totals[kind]:,}"
                )
            for r in v.rules:
                other = theirs.get((kind, r.path, r.index))
                seen += 1
                if other is None or not _close(r.total, other):
                    disagreements.append(f"{describe_rule(v, r)}; shared tool: {other}")
    assert seen == len(theirs), "the two disagree on which rules exist"
    assert not disagreements, "\n".join(disagreements)


def test_shared_tool_agrees_on_random_rules(tmp_path: Path) -> None:
    """Differential: random rules over random bounds (fixed seed), one CRD each, estimated
    by both; they must agree exactly on every cost and on which rules do not compile."""
    rnd = random.Random(11)
    crds = []
    rules = diff_rules(rnd, extra=20)
    for n, rule in enumerate(rules):
        spec = diff_schema(rnd)
        spec["x-kubernetes-validations"] = [{"rule": rule}]
        schema = {"type": "object", "properties": {"spec": spec}}
        crds.append(
            {
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": f"t{n}.example.org"},
                "spec": {
                    "group": "example.org",
                    "scope": "Namespaced",
                    "names": {"kind": f"T{n}", "plural": f"t{n}", "singular": f"t{n}"},
                    "versions": [
                        {
                            "name": "v1",
                            "served": True,
                            "storage": True,
                            "schema": {"openAPIV3Schema": schema},
                        }
                    ],
                },
            }
        )
    # JSON (a YAML subset) keeps the tool's YAML parsing quick.
    (tmp_path / "crds.json").write_text(json.dumps(crds), encoding="utf-8")
    report = _run_tool(tmp_path, "--k8s-version", "1.34")
    theirs = {c["name"]: c["versions"][0]["rules"][0] for c in report["crds"]}
    disagreements = []
    compiled = 0
    for crd in crds:
        (version,) = estimate_crd(crd, kubernetes="1.34")
        (ours,) = version.rules
        other = theirs[crd["metadata"]["name"]]
        if bool(ours.error) != bool(other["errors"]) or (
            not ours.error and ours.total != other["cost"]
        ):
            disagreements.append(
                f"{ours.rule}: ours {ours.total} {ours.error or ''}, "
                f"shared tool {other['cost']} {other['errors']}"
            )
        compiled += not ours.error
    assert compiled > len(rules) * 0.8  # the cases exercise costs more than refusals
    assert not disagreements, "\n".join(disagreements)
