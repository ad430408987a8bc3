"""Generated XRDs: checked in without drift, valid Crossplane XRDs, structural schemas."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from api_helpers import EXAMPLES, REPO, shared_path

from modelplane.api import KINDS, RULES
from modelplane.api.base import INTERNAL_KEYS, VALIDATIONS_KEY
from modelplane.api.crds import render_xrds, xrds
from modelplane.api.openapi import crd_schema, validator_schema
from modelplane.cli.main import main
from modelplane.manifests import load

PACKAGE = REPO / "package"


def walk(node: Any, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    """Every schema node of an openAPIV3Schema with its path."""
    found = [(path, node)]
    for name, child in node.get("properties", {}).items():
        found += walk(child, f"{path}.{name}")
    if isinstance(node.get("items"), dict):
        found += walk(node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), dict):
        found += walk(node["additionalProperties"], f"{path}[*]")
    return found


def test_checked_in_xrds_match_the_models() -> None:
    """The XRDs are checked in once, inside the configuration package they belong to."""
    expected = {x["spec"]["names"]["plural"]: render_xrds([x]) for x in xrds()}
    actual = {
        p.parent.name: p.read_text(encoding="utf-8")
        for p in (PACKAGE / "configuration" / "apis").glob("*/definition.yaml")
    }
    assert actual == expected, "package/configuration/apis drifted: run `make package`"
    assert sorted(p.name for p in PACKAGE.iterdir()) == ["configuration", "function", "install"]


def test_crds_verb_writes_the_same_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["crds", "--out", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        f"{k.plural}.modelplane.ai.yaml" for k in KINDS
    )
    assert main(["crds"]) == 0
    stream = list(yaml.safe_load_all(capsys.readouterr().out))
    assert [d["spec"]["names"]["kind"] for d in stream] == [k.kind for k in KINDS]


@pytest.mark.parametrize("definition", xrds(), ids=lambda d: d["metadata"]["name"])
def test_xrd_is_valid_against_crossplane_schema(definition: dict[str, Any]) -> None:
    crd = yaml.safe_load(
        shared_path(
            "schemas", "apiextensions.crossplane.io_compositeresourcedefinitions.yaml"
        ).read_text()
    )
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v2")
    jsonschema.validate(definition, version["schema"]["openAPIV3Schema"])


@pytest.mark.parametrize("info", KINDS, ids=lambda k: k.kind)
def test_xrd_identity(info: Any) -> None:
    (definition,) = [d for d in xrds() if d["spec"]["names"]["kind"] == info.kind]
    spec = definition["spec"]
    assert definition["apiVersion"] == "apiextensions.crossplane.io/v2"
    assert definition["metadata"]["name"] == f"{info.plural}.modelplane.ai"
    assert spec["names"] == {
        "kind": info.kind,
        "plural": info.plural,
        "singular": info.kind.lower(),
        "shortNames": [info.short_name],
        "categories": ["crossplane", "modelplane"],
    }
    assert spec["scope"] == info.scope
    assert spec["defaultCompositionRef"] == {"name": f"{info.plural}.modelplane.ai"}
    (version,) = spec["versions"]
    assert (version["name"], version["served"], version["referenceable"]) == (
        "v1alpha1",
        True,
        True,
    )
    if info.kind == "ModelDeployment":
        assert version["subresources"] == {
            "scale": {
                "specReplicasPath": ".spec.replicas",
                "statusReplicasPath": ".status.replicas.total",
            }
        }
    else:
        assert "subresources" not in version
    columns = [
        (c["name"], c["jsonPath"], c["type"]) for c in version.get("additionalPrinterColumns", [])
    ]
    assert columns == [(c.name, c.json_path, c.type) for c in info.printer_columns]


def _schema_at(schema: dict[str, Any], json_path: str) -> dict[str, Any] | None:
    node: dict[str, Any] | None = schema
    for name in json_path.strip(".").split("."):
        node = (node or {}).get("properties", {}).get(name)
    return node


@pytest.mark.parametrize("info", KINDS, ids=lambda k: k.kind)
def test_printer_column_types_match_the_values(info: Any) -> None:
    """kubectl prints a column by its type: a column's type is its field's schema type."""
    schema = crd_schema(info.model)
    for column in info.printer_columns:
        node = _schema_at(schema, column.json_path)
        if node is None:  # a field of an open status the function writes (not declared)
            assert column.type == "string", column.name
            continue
        assert column.type == node["type"], column.name
    if info.kind == "ModelDeployment":
        assert [(c.name, c.type) for c in info.printer_columns] == [("REPLICAS", "integer")]


@pytest.mark.parametrize("info", KINDS, ids=lambda k: k.kind)
def test_schema_is_structural(info: Any) -> None:
    schema = crd_schema(info.model)
    assert set(schema["properties"]) == {"spec", "status"}
    text = yaml.safe_dump(schema)
    assert "$ref" not in text and "x-modelplane" not in text
    for path, node in walk(schema):
        assert "title" not in node, path
        assert "anyOf" not in node or node.get("x-kubernetes-int-or-string"), path
        assert not ({"oneOf", "allOf", "not", "const", "nullable"} & set(node)), path
        if node.get("x-kubernetes-int-or-string"):
            assert node["anyOf"] == [{"type": "integer"}, {"type": "string"}], path
            continue
        assert node.get("type") in ("object", "array", "string", "integer", "boolean"), path
        if "default" in node:
            assert node["default"] is not None, path
        if node["type"] == "object":
            assert (
                "properties" in node
                or "additionalProperties" in node
                or node.get("x-kubernetes-preserve-unknown-fields")
            ), path
        if node["type"] == "array":
            assert isinstance(node.get("items"), dict), path
    # Crossplane adds these itself (docs/crossplane.md, "What gets installed").
    assert "crossplane" not in schema["properties"]["spec"].get("properties", {})
    assert "conditions" not in schema["properties"]["status"].get("properties", {})


def test_every_rule_is_in_a_crd_exactly_once() -> None:
    found: list[tuple[str, str]] = []
    for info in KINDS:
        for _, node in walk(crd_schema(info.model)):
            found += [(v["rule"], v["message"]) for v in node.get(VALIDATIONS_KEY, [])]
    for rule_id, rule in RULES.items():
        assert (rule.rule, rule.message) in found, rule_id


def test_root_rules_sit_at_the_root() -> None:
    by_kind = {info.kind: crd_schema(info.model) for info in KINDS}
    assert by_kind["ModelDeployment"][VALIDATIONS_KEY][0]["message"] == RULES["MD-01"].message
    assert by_kind["InferenceCluster"][VALIDATIONS_KEY][0]["message"] == RULES["IC-10"].message


def test_validator_schema_keeps_rule_ids() -> None:
    ids = [
        rule_id
        for info in KINDS
        for _, node in walk(validator_schema(info.model))
        for rule_id in node.get("x-modelplane-rule-ids", [])
    ]
    assert set(ids) == set(RULES)
    assert INTERNAL_KEYS


def test_validator_accepts_what_the_crd_schema_accepts() -> None:
    """The checked-in examples pass the generated CRD schema too (jsonschema, status aside)."""
    for obj in load([str(EXAMPLES)]).objects:
        schema = crd_schema(obj.info.model)
        body = {k: v for k, v in obj.raw.items() if k in ("spec", "status")}
        jsonschema.validate(body, schema)
