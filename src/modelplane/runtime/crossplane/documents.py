"""Turning what Crossplane sent into validated API models, or the first problem found.

docs/crossplane.md, "How the function behaves": numbers are converted back first (``structs``),
then the object is checked by the validator's steps 1 to 3 with defaults applied. The runtime
reports
the first problem as a Fatal result, so nothing observed is ever deleted because an
input was malformed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from modelplane.api import KIND_BY_NAME, KubeModel
from modelplane.api.base import GROUP_VERSION
from modelplane.api.openapi import validator_schema
from modelplane.api.validation import validate_document
from modelplane.errors import ModelplaneError
from modelplane.memo import Memo
from modelplane.runtime.crossplane.structs import integral_floats_to_int, restore_integers

M = TypeVar("M", bound=KubeModel)


@dataclass(frozen=True)
class Invalid:
    """The first problem of a document: ``<ref>: <path>: <message>`` in messages."""

    ref: str
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.ref}: {self.path}: {self.message}"


def _text(value: Any) -> str:
    # apiVersion, kind, name of a malformed request can be any JSON value.
    return value if isinstance(value, str) else ("" if value is None else json.dumps(value))


def identity(raw: Mapping[str, Any] | None) -> tuple[str, str]:
    """The ``(apiVersion, kind)`` of an object, as text ("" when missing)."""
    if not isinstance(raw, Mapping):
        return "", ""
    return _text(raw.get("apiVersion")), _text(raw.get("kind"))


def object_ref(raw: Mapping[str, Any]) -> str:
    """``<Kind> <namespace>/<name>``, or ``<Kind> <name>`` for a cluster-scoped kind (docs/cli.md).

    A namespaced kind's missing namespace reads ``default``; a missing name prints ``""``.
    """
    kind = identity(raw)[1]
    metadata = raw.get("metadata")
    meta: Mapping[str, Any] = metadata if isinstance(metadata, Mapping) else {}
    name = _text(meta.get("name")) or '""'
    info = KIND_BY_NAME.get(kind)
    if info is not None and info.namespaced:
        namespace = _text(meta.get("namespace")) or "default"
        return f"{kind} {namespace}/{name}"
    return f"{kind} {name}"


def restore(raw: Mapping[str, Any]) -> dict[str, Any]:
    """``raw`` with integers restored by its kind's schema (free-form for unknown kinds)."""
    info = KIND_BY_NAME.get(identity(raw)[1])
    if info is None:
        restored = integral_floats_to_int(dict(raw))
    else:
        restored = restore_integers(dict(raw), validator_schema(info.model))
    assert isinstance(restored, dict)
    return restored


def _unsupported(value: str, supported: str) -> str:
    return f'Unsupported value: "{value}": supported values: "{supported}"'


# The runtime checks validation steps 1 to 3 only: the API
# server has already run the XRD's rules, and a selector that does not compile is a
# hold, not a Fatal.
def _check(raw: Mapping[str, Any], model: type[M]) -> M | Invalid:
    expected = model.model_fields["kind"].default
    api_version, kind = identity(raw)
    ref = object_ref(raw)
    if api_version != GROUP_VERSION:
        return Invalid(ref, "apiVersion", _unsupported(api_version, GROUP_VERSION))
    if kind != expected:
        return Invalid(ref, "kind", _unsupported(kind, expected))
    checked = validate_document(restore(raw), rules=False)
    if isinstance(checked.model, model) and not checked.problems:
        return checked.model
    first = checked.problems[0] if checked.problems else None
    if first is None:
        return Invalid(checked.object_ref(), "", "not a valid object")
    return Invalid(checked.object_ref(), first.path, first.message)


# Enough for a large fleet (clusters, classes, replicas of every namespace). Cached
# models are shared between calls: the reconcile code is pure and never mutates them.
MEMO_SIZE = 8192
_MEMO: Memo[tuple[bytes, type[KubeModel]], Any] = Memo("runtime.documents", MEMO_SIZE)


def load(raw: Mapping[str, Any], model: type[M]) -> M | Invalid:
    """Check ``raw`` as a document of ``model``'s kind (steps 1-3, defaults applied).

    Documents read off the wire carry a ``cache_key``; the answer for the same bytes is
    remembered, since Crossplane sends the same fleet on every call.
    """
    key = getattr(raw, "cache_key", None)
    if not isinstance(key, bytes):
        return _check(raw, model)
    return _MEMO.get((key, model), lambda: _check(raw, model))  # type: ignore[no-any-return]


class Refused(ModelplaneError):
    """A malformed input: the function answers with a Fatal result carrying this message."""


def composite(raw: Mapping[str, Any] | None, model: type[M]) -> M:
    """The composite as ``model``, or Refused ``invalid <Kind> <ref>: <path>: <message>``."""
    loaded = load(raw if isinstance(raw, Mapping) else {}, model)
    if isinstance(loaded, Invalid):
        raise Refused(f"invalid {loaded}")
    return loaded


def observed(key: str, raw: Mapping[str, Any], model: type[M]) -> M:
    """An observed composed resource the function reads back (and may re-emit)."""
    loaded = load(raw, model)
    if isinstance(loaded, Invalid):
        raise Refused(f"invalid observed resource {key}: {loaded}")
    return loaded


def required(fetched: Mapping[str, Any], key: str, model: type[M]) -> list[M] | None:
    """The items Crossplane fetched under ``key`` as ``model``; None when not fetched yet.

    Refused ``invalid required resource <key>: <Kind> <ref>: <path>: <message>`` on the
    first item that is of the wrong kind or does not validate.
    """
    if key not in fetched:
        return None
    items: list[M] = []
    for raw in fetched[key]:
        loaded = load(raw if isinstance(raw, Mapping) else {}, model)
        if isinstance(loaded, Invalid):
            raise Refused(f"invalid required resource {key}: {loaded}")
        items.append(loaded)
    return items
