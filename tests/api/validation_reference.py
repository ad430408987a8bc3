"""The located reading of a schema, as a plain walker over the schema dict: the oracle of
tests/api/test_validation_fast.py.

validate_document reads each kind's schema through one compiled tree (a fast verdict and,
on a refusal, a located walk from the same compiled node). This module keeps the direct
reading it replaced: prune and default, then the structural checks, then the rules, each
a straightforward walk of the schema. The two must give the same problems in the same
order and the same defaulted document.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from modelplane.api import validation as v
from modelplane.api.base import DRA_SELECTOR_KEY, VALIDATIONS_KEY
from modelplane.api.kinds import KindInfo
from modelplane.api.openapi import INT_OR_STRING, PRESERVE_UNKNOWN, Schema
from modelplane.api.validation import Problem
from modelplane.cel import check_selector

_ROOT_ORDER = ("apiVersion", "kind", "metadata", "spec", "status")


def apply_defaults(schema: Schema, value: Any) -> None:
    """Prune null fields and fill in defaults inside ``value``, in place, as the API server does."""
    if isinstance(value, dict):
        properties: dict[str, Schema] = schema.get("properties", {})
        for name, sub in properties.items():
            if name in value and value[name] is None:
                del value[name]
            if name not in value and "default" in sub:
                value[name] = copy.deepcopy(sub["default"])
            if name in value:
                apply_defaults(sub, value[name])
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for entry in value.values():
                apply_defaults(extra, entry)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            apply_defaults(schema["items"], item)


def check_root(schema: Schema, doc: dict[str, Any], info: KindInfo) -> list[Problem]:
    out: list[Problem] = []
    properties: dict[str, Schema] = schema["properties"]
    required = set(schema.get("required", []))
    for name in _ROOT_ORDER:
        if name in ("apiVersion", "kind"):
            continue  # checked in step 1
        if name == "metadata":
            v._check_metadata(doc.get("metadata", {}), info, out)
        elif name in doc:
            _check(properties[name], doc[name], name, out)
        elif name in required:
            out.append(Problem(name, "Required value"))
    for name in sorted(set(doc) - set(_ROOT_ORDER)):
        out.append(Problem(name, "unknown field"))
    return out


def _check(schema: Schema, value: Any, path: str, out: list[Problem], duplicate: str = "") -> None:
    """Structural checks of one node and, depth-first, of its children."""
    expected = _expected_types(schema)
    actual = v._json_type(value)
    if expected and actual not in expected:
        out.append(Problem(path, v._type_message(value, expected)))
        return
    if duplicate:
        out.append(Problem(path, f"Duplicate value: {duplicate}"))
    if actual == "object":
        _check_object(schema, value, path, out)
    elif actual == "array":
        _check_array(schema, value, path, out)
    else:
        _check_scalar(schema, value, path, out)


def _check_object(schema: Schema, value: dict[str, Any], path: str, out: list[Problem]) -> None:
    count = len(value)
    if "minProperties" in schema and count < schema["minProperties"]:
        out.append(
            Problem(
                path,
                f"Invalid value: {count}: must have at least {schema['minProperties']} properties",
            )
        )
    if "maxProperties" in schema and count > schema["maxProperties"]:
        out.append(
            Problem(path, f"Too many: {count}: must have at most {schema['maxProperties']} entries")
        )
    properties: dict[str, Schema] | None = schema.get("properties")
    extra = schema.get("additionalProperties")
    if properties is None and isinstance(extra, dict):
        for key in sorted(value):
            _check(extra, value[key], f"{path}[{key}]", out)
        return
    if properties is None and schema.get(PRESERVE_UNKNOWN):
        return  # free-form
    properties = properties or {}
    required = set(schema.get("required", []))
    for name, sub in properties.items():
        if name in value:
            _check(sub, value[name], _join(path, name), out)
        elif name in required:
            out.append(Problem(_join(path, name), "Required value"))
    if not schema.get(PRESERVE_UNKNOWN):
        for name in sorted(set(value) - set(properties)):
            out.append(Problem(_join(path, name), "unknown field"))


def _check_array(schema: Schema, value: list[Any], path: str, out: list[Problem]) -> None:
    count = len(value)
    if "minItems" in schema and count < schema["minItems"]:
        out.append(
            Problem(path, f"Invalid value: {count}: must have at least {schema['minItems']} items")
        )
    if "maxItems" in schema and count > schema["maxItems"]:
        out.append(
            Problem(path, f"Too many: {count}: must have at most {schema['maxItems']} items")
        )
    items: Schema = schema.get("items", {})
    keys = _list_map_keys(schema)
    seen: set[str] = set()
    for index, item in enumerate(value):
        duplicate = ""
        if keys and isinstance(item, dict) and all(k in item for k in keys):
            identity = json.dumps([item[k] for k in keys], sort_keys=True, default=str)
            if identity in seen:
                duplicate = v._json({k: item[k] for k in keys})
            seen.add(identity)
        _check(items, item, f"{path}[{index}]", out, duplicate)


def _check_scalar(schema: Schema, value: Any, path: str, out: list[Problem]) -> None:
    if "enum" in schema and value not in schema["enum"]:
        out.append(Problem(path, v._enum_message(value, schema["enum"])))
    if v._is_number(value):
        if "minimum" in schema and value < schema["minimum"]:
            out.append(
                Problem(
                    path,
                    f"Invalid value: {v._json(value)}: must be greater than or equal to {schema['minimum']}",
                )
            )
        if "maximum" in schema and value > schema["maximum"]:
            out.append(
                Problem(
                    path,
                    f"Invalid value: {v._json(value)}: must be less than or equal to {schema['maximum']}",
                )
            )
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            out.append(
                Problem(
                    path,
                    f"Invalid value: {v._json(value)}: must be at least {schema['minLength']} characters",
                )
            )
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            out.append(
                Problem(path, f"Too long: must have at most {schema['maxLength']} characters")
            )
        if "pattern" in schema and not v._matches(schema["pattern"], value):
            out.append(
                Problem(path, f"Invalid value: {v._json(value)}: must match '{schema['pattern']}'")
            )


def check_rules(schema: Schema, value: Any, path: str) -> list[Problem]:
    out: list[Problem] = []
    _walk_rules(schema, value, path, out)
    return out


def rule_holds(text: str, value: Any) -> bool:
    """True when the rule holds on ``value``, evaluated on what the rule reads of it (no
    remembered verdict)."""
    return v._evaluate(text, v.projection(v.rule_reads([text]))(value))


def _walk_rules(schema: Schema, value: Any, path: str, out: list[Problem]) -> None:
    for entry in schema.get(VALIDATIONS_KEY, []):
        text = entry["rule"]
        if v._is_transition_rule(text):
            continue  # there is no previous object to compare with
        # Every rule evaluated on the value itself, never a remembered verdict: what the
        # compiled tree remembers by what a rule reads is held to this.
        held = rule_holds(text, value)
        if not held:
            # A rule at the root checks the name (MD-01, IC-10), so it is reported there.
            out.append(Problem(path or "metadata.name", entry["message"]))
    if schema.get(DRA_SELECTOR_KEY) and isinstance(value, str):
        detail = check_selector(value)
        if detail is not None:
            out.append(Problem(path, v.SELECTOR_PREFIX + detail))
    if isinstance(value, dict):
        properties: dict[str, Schema] | None = schema.get("properties")
        extra = schema.get("additionalProperties")
        if properties is not None:
            for name, sub in properties.items():
                if name in value:
                    _walk_rules(sub, value[name], _join(path, name), out)
        elif isinstance(extra, dict):
            for key in sorted(value):
                _walk_rules(extra, value[key], f"{path}[{key}]", out)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            _walk_rules(schema["items"], item, f"{path}[{index}]", out)


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _expected_types(schema: Schema) -> tuple[str, ...]:
    if schema.get(INT_OR_STRING):
        return ("integer", "string")
    declared = schema.get("type")
    return (declared,) if isinstance(declared, str) else ()


def _list_map_keys(schema: Schema) -> list[str]:
    if schema.get("x-kubernetes-list-type") != "map":
        return []
    keys: list[str] = schema.get("x-kubernetes-list-map-keys", [])
    return keys
