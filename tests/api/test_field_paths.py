"""One path notation in every error: a map entry is ``[key]`` wherever the schema says so.

The readers refuse a value the API server never decodes (an integer beyond int64, NaN, an
infinity) before any schema check runs, so they name the field themselves. For every field
under a map (an ``additionalProperties`` object) of every kind, the reader's path must be the
one the schema checks give the same field, in YAML and in JSON alike.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelplane.api import GROUP_VERSION
from modelplane.api.kinds import KINDS
from modelplane.api.openapi import validator_schema
from modelplane.api.validation import validate_document
from modelplane.fieldpath import field_path
from modelplane.manifests import load

MAP_KEY = "big"  # identifier-like: only the schema can tell it is not a member
HOLE = "@@value@@"

Keys = tuple[str | int, ...]


def _leaves(schema: dict[str, Any], keys: Keys, under_map: bool) -> Iterator[Keys]:
    """The keys of every scalar field reachable from ``schema``; only those under a map."""
    extra = schema.get("additionalProperties")
    properties = schema.get("properties")
    if isinstance(extra, dict):
        yield from _leaves(extra, (*keys, MAP_KEY), True)
    elif properties:
        for name, sub in properties.items():
            yield from _leaves(sub, (*keys, name), under_map)
    elif "items" in schema:
        yield from _leaves(schema["items"], (*keys, 0), under_map)
    elif under_map and schema.get("type") != "object":
        yield keys


def _sites() -> list[tuple[str, Keys]]:
    return [
        (info.kind, keys)
        for info in KINDS
        for keys in _leaves(validator_schema(info.model), (), False)
        if keys[0] != "kind" and keys[0] != "apiVersion"
    ]


SITES = _sites()


def _document(kind: str, keys: Keys, value: Any) -> dict[str, Any]:
    """A document of ``kind`` holding ``value`` at ``keys`` (one item per array on the way)."""
    doc: dict[str, Any] = {"apiVersion": GROUP_VERSION, "kind": kind, "metadata": {"name": "x"}}
    node: Any = doc
    for key, after in zip(keys, (*keys[1:], None), strict=True):
        fresh: Any = value if after is None else ([] if isinstance(after, int) else {})
        if isinstance(key, int):
            node.append(fresh)
            node = node[-1]
        else:
            node = node.setdefault(key, fresh)
    return doc


def _schema_path(kind: str, keys: Keys) -> str:
    """Where the schema checks put a value of the wrong type at ``keys``."""
    result = validate_document(_document(kind, keys, [[]]))
    (path,) = {p.path for p in result.problems if "must be of type" in p.message}
    return path


def _reader_paths(tmp_path: Path, kind: str, keys: Keys, text: str, suffix: str) -> list[str]:
    doc = _document(kind, keys, HOLE)
    if suffix == ".json":
        written = json.dumps(doc).replace(json.dumps(HOLE), text)
    else:
        written = yaml.safe_dump(doc, sort_keys=False).replace(f"'{HOLE}'", text)
    path = tmp_path / f"doc{suffix}"
    path.write_text(written)
    lines = load([str(path)]).problems
    found = [
        re.match(rf"{re.escape(str(path))}:\d+: {kind} (?:default/)?x: (\S+): ", line)
        for line in lines
    ]
    assert all(found), lines
    return [m.group(1) for m in found if m]


OUT_OF_RANGE = {
    ".yaml": ["99999999999999999999", "-99999999999999999999", ".nan", ".inf", "-.inf"],
    ".json": ["99999999999999999999", "-99999999999999999999", "NaN", "Infinity", "-Infinity"],
}


def test_every_kind_has_map_fields_to_walk() -> None:
    assert {kind for kind, _ in SITES} == {info.kind for info in KINDS}
    assert (
        "InferenceCluster",
        ("status", "gpuPools", 0, "devices", 0, "attributes", "big", "int"),
    ) in SITES


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
@pytest.mark.parametrize(("kind", "keys"), SITES, ids=[f"{k}:{field_path(p)}" for k, p in SITES])
def test_a_value_no_reader_accepts_is_named_as_the_schema_names_it(
    tmp_path: Path, kind: str, keys: Keys, suffix: str
) -> None:
    expected = _schema_path(kind, keys)
    assert f"[{MAP_KEY}]" in expected
    for text in OUT_OF_RANGE[suffix]:
        assert _reader_paths(tmp_path, kind, keys, text, suffix) == [expected], text


def test_the_issue_example() -> None:
    keys = ("status", "gpuPools", 0, "devices", 0, "attributes", "big", "int")
    schema = validator_schema(next(i for i in KINDS if i.kind == "InferenceCluster").model)
    assert field_path(keys, schema) == "status.gpuPools[0].devices[0].attributes[big].int"
    # Without a schema (an unknown kind) the path falls back to the shape of the name alone.
    assert field_path(keys) == "status.gpuPools[0].devices[0].attributes.big.int"
    assert field_path(("spec", "a.b", 0)) == "spec[a.b][0]"
