"""Building blocks shared by every kind: the model base, validation rules, schema markers.

The pydantic models in this package are the single source of truth for the
schemas: the CRDs (``modelplane crds``) and the local validator are both derived
from ``model_json_schema()`` of these classes, so the CLI and the cluster can
never disagree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Final

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema
from pydantic.alias_generators import to_camel

API_GROUP = "modelplane.ai"
API_VERSION = "v1alpha1"
GROUP_VERSION: Final = "modelplane.ai/v1alpha1"  # f"{API_GROUP}/{API_VERSION}", as a literal type

DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
LABEL_KEY = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)
LABEL_VALUE = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"
QUANTITY = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)


@dataclass(frozen=True, slots=True)
class Rule:
    """One ``x-kubernetes-validations`` rule: CEL source and the message shown when it fails."""

    id: str
    rule: str
    message: str


# Every rule of every kind, by ID, in declaration order (tests enumerate it).
RULES: dict[str, Rule] = {}


def rule(rule_id: str, cel: str, message: str) -> Rule:
    """Declare a rule once; the same object is attached to the model and listed in RULES."""
    if rule_id in RULES and RULES[rule_id] != Rule(rule_id, cel, message):
        raise ValueError(f"rule {rule_id} declared twice with different text")
    declared = Rule(rule_id, cel, message)
    RULES[rule_id] = declared
    return declared


VALIDATIONS_KEY = "x-kubernetes-validations"
RULE_IDS_KEY = "x-modelplane-rule-ids"  # kept out of the CRDs; lets errors be traced to a rule
# Marks a string field holding a DRA device selector, compiled by the validator (docs/api.md, "The
# steps (`validate_document`)"
# step 5). Like the rule IDs, it exists only in the validator's schema, never in a CRD.
DRA_SELECTOR_KEY = "x-modelplane-dra-selector"
# Extension keys that are ours alone and are stripped from every generated CRD.
INTERNAL_KEYS: frozenset[str] = frozenset({RULE_IDS_KEY, DRA_SELECTOR_KEY})


def validations(*rules: Rule) -> dict[str, Any]:
    """Schema extras attaching rules to a node (model- or field-level json_schema_extra)."""
    return {
        VALIDATIONS_KEY: [{"rule": r.rule, "message": r.message} for r in rules],
        RULE_IDS_KEY: [r.id for r in rules],
    }


def list_map(*keys: str) -> dict[str, Any]:
    """Schema extras of a map-type list keyed by ``keys``."""
    return {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": list(keys)}


ATOMIC: dict[str, Any] = {"x-kubernetes-list-type": "atomic"}
DRA_SELECTOR: dict[str, Any] = {DRA_SELECTOR_KEY: True}

# An integer or a string, as Kubernetes' int-or-string.
IntOrString = Annotated[int | str, WithJsonSchema({"x-kubernetes-int-or-string": True})]
QuantityValue = Annotated[
    int | str,
    WithJsonSchema({"x-kubernetes-int-or-string": True, "pattern": QUANTITY}),
]
# A free-form object: any content, kept as written.
FreeForm = Annotated[
    dict[str, Any],
    WithJsonSchema({"type": "object", "x-kubernetes-preserve-unknown-fields": True}),
]


class KubeModel(BaseModel):
    """Base of every API object model: camelCase on the wire, unknown fields refused.

    Frozen, and its lists are tuples: one validated document is shared by every call
    and thread that reads it (the function server, typed specs shared between
    documents), so a change is a new value (``model_copy(update=...)``), never an edit.
    """

    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        frozen=True,
    )

    def to_wire(self) -> dict[str, Any]:
        """The object as the API server would store it: camelCase, unset fields omitted."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


class OpenModel(KubeModel):
    """A model whose unlisted fields are accepted and kept (status blocks, ObjectMeta)."""

    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={"x-kubernetes-preserve-unknown-fields": True},
    )


def describe(text: str, **extra: Any) -> Any:
    """A Field carrying a description (and other constraints) for the CRD."""
    return Field(description=text, **extra)
