"""Structural OpenAPI v3 schemas of the kinds, derived from the pydantic models (pure).

``model_json_schema()`` gives JSON Schema with ``$ref``s, ``anyOf [X, null]`` for
optional fields and titles. Kubernetes wants a *structural* schema instead: every
node typed, everything inlined, no nullable unions. :func:`structural_schema`
rewrites one into the other. Two variants exist:

* the validator's (``internal=True``): keeps our own ``x-modelplane-*`` markers
  (rule IDs, DRA selector fields) and the whole root, including ``apiVersion``,
  ``kind`` and ``metadata``;
* the CRD's (:func:`crd_schema`): markers stripped, the root reduced to
  ``spec`` and ``status`` as the package needs (Crossplane adds
  ``spec.crossplane``, ``status.conditions`` and the object metadata itself).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from modelplane.api.base import INTERNAL_KEYS, VALIDATIONS_KEY
from modelplane.memo import memoized

Schema = dict[str, Any]

# Keys of pydantic's JSON Schema that have no place in a structural schema.
_DROPPED = frozenset({"title", "$defs"})
INT_OR_STRING = "x-kubernetes-int-or-string"
PRESERVE_UNKNOWN = "x-kubernetes-preserve-unknown-fields"


def _ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def _is_null(node: Any) -> bool:
    return isinstance(node, dict) and node.get("type") == "null" and len(node) == 1


def _inline(node: Any, defs: dict[str, Schema]) -> Any:
    """Resolve $ref and optional unions recursively; the result shares nothing with the input."""
    if isinstance(node, list):
        return [_inline(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    node = dict(node)
    if "$ref" in node:
        target = _inline(defs[_ref_name(node.pop("$ref"))], defs)
        # Field-level keys (a field's description, a list's rules) override the model's.
        node = {**target, **node}
    if "anyOf" in node:
        branches = [b for b in node["anyOf"] if not _is_null(b)]
        if len(branches) == 1 and len(branches) != len(node["anyOf"]):
            rest = {k: v for k, v in node.items() if k != "anyOf"}
            node = {**_inline(branches[0], defs), **rest}
    return {key: _inline_child(key, value, defs) for key, value in node.items()}


def _inline_child(key: str, value: Any, defs: dict[str, Schema]) -> Any:
    if key == "properties":
        return {name: _inline(prop, defs) for name, prop in value.items()}
    if key in ("items", "additionalProperties", "anyOf", "allOf", "oneOf"):
        return _inline(value, defs)
    # Extension values (rule lists, defaults, enums) are data, not schemas.
    return copy.deepcopy(value)


def _clean(node: Any) -> Any:
    """Drop titles and null defaults, turn const into enum, type every object."""
    if isinstance(node, list):
        return [_clean(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: Schema = {}
    for key, value in node.items():
        if key in _DROPPED:
            continue
        if key == "default" and value is None:
            continue
        if key == "additionalProperties" and isinstance(value, bool):
            # false (unknown fields refused) is the structural default; true is spelled
            # x-kubernetes-preserve-unknown-fields, which OpenModel sets itself.
            continue
        if key == "const":
            out["enum"] = [value]
            continue
        if key in ("properties",):
            out[key] = {name: _clean(prop) for name, prop in value.items()}
        elif key in ("items", "additionalProperties", "anyOf"):
            out[key] = _clean(value)
        else:
            out[key] = value
    if node.get(INT_OR_STRING):
        # The form Kubernetes' own types generate: both branches typed, no top-level type.
        out.pop("type", None)
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    elif "type" not in out and ("properties" in out or "additionalProperties" in out):
        out["type"] = "object"
    return out


def structural_schema(model: type[BaseModel]) -> Schema:
    """The validator's structural schema of ``model``: inlined, typed, with internal markers."""
    raw = model.model_json_schema(by_alias=True, mode="validation")
    defs = raw.get("$defs", {})
    result = _clean(_inline(raw, defs))
    assert isinstance(result, dict)
    return result


# One schema per kind (and per nested model asked for): a few dozen at most.
@memoized("api.validator_schemas", 256)
def _cached_internal(model: type[BaseModel]) -> Schema:
    # pydantic takes 10-20 ms to generate a kind's JSON Schema, a fifth of a small
    # command; the generated module holds each kind's result as JSON text,
    # and tests/api/test_validator_schemas.py proves it equals what pydantic gives now.
    from modelplane.api.validator_schemas import SCHEMAS

    text = SCHEMAS.get(model_key(model))
    if text is None:
        return structural_schema(model)
    result = json.loads(text)
    assert isinstance(result, dict)
    return result


def validator_schema(model: type[BaseModel]) -> Schema:
    """The validator's schema of a kind (cached; callers must not mutate it)."""
    return _cached_internal(model)


def model_key(model: type[BaseModel]) -> str:
    """The name a model's schema has in the generated module: its module and class."""
    return f"{model.__module__}.{model.__qualname__}"


GENERATED_HEADER = '''"""The validator's schema of every kind, as JSON text (GENERATED: do not edit).

Written by `make package` from modelplane.api.openapi.structural_schema, which asks
pydantic on every run otherwise; tests/api/test_validator_schemas.py proves this file
equals what that function returns now.
"""

from typing import Final

SCHEMAS: Final[dict[str, str]] = {
'''


def schemas_module(models: Sequence[type[BaseModel]]) -> str:
    """The text of ``modelplane/api/validator_schemas.py`` for ``models``."""
    entries = "".join(
        f"    {model_key(m)!r}: {json.dumps(structural_schema(m), separators=(',', ':'))!r},\n"
        for m in models
    )
    return f"{GENERATED_HEADER}{entries}}}\n"


def strip_internal(node: Any) -> Any:
    """A copy of ``node`` without our x-modelplane-* markers."""
    if isinstance(node, list):
        return [strip_internal(item) for item in node]
    if not isinstance(node, dict):
        return node
    return {k: strip_internal(v) for k, v in node.items() if k not in INTERNAL_KEYS}


# Fields Crossplane adds to every XR's schema itself (docs/crossplane.md, "What gets installed").
_CROSSPLANE_OWNED = (("spec", "crossplane"), ("status", "conditions"))


def crd_schema(model: type[BaseModel]) -> Schema:
    """The ``openAPIV3Schema`` of a kind's XRD: spec and status, root rules, no markers."""
    full = strip_internal(structural_schema(model))
    properties = {name: full["properties"][name] for name in ("spec", "status")}
    for parent, child in _CROSSPLANE_OWNED:
        node = properties[parent]
        node.get("properties", {}).pop(child, None)
        if node.get("properties") == {}:
            del node["properties"]
    root: Schema = {"type": "object"}
    if "description" in full:
        root["description"] = full["description"]
    root["properties"] = properties
    root["required"] = [name for name in full.get("required", []) if name in properties]
    if VALIDATIONS_KEY in full:
        root[VALIDATIONS_KEY] = full[VALIDATIONS_KEY]
    return root
