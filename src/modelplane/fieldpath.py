"""The one notation of a field path in every error (docs/api.md, "The steps").

A member is ``a.b``, an array item ``a[0]``, a map entry ``a[key]``: which members are
map entries only a kind's schema knows (an object of ``additionalProperties``), so a reader
that saw only the document records the keys it walked, and the path is written from them
here, with the schema, when a problem is reported. This is how the schema checks of
``modelplane.api.validation`` write their paths, so one field reads the same in both.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

Keys = tuple[str | int, ...]
"""The keys from the document's root to a value: member names and array indexes."""

_PRESERVE_UNKNOWN = "x-kubernetes-preserve-unknown-fields"
_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$-]*\Z")


def child(path: str, key: str | int) -> str:
    """The path of a member where no schema says what it is.

    An identifier-like name is a member (``a.b``), anything else an entry (``a[k.with.dots]``),
    an index an item (``a[0]``).
    """
    if isinstance(key, int):
        return f"{path}[{key}]"
    if _IDENTIFIER.match(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{key}]"


def field_path(keys: Iterable[str | int], schema: Mapping[str, Any] | None = None) -> str:
    """The path of ``keys`` in a document of ``schema`` (a kind's structural schema, or None).

    A property is a member, an ``additionalProperties`` key a map entry, an unknown field
    of an object that does not preserve unknown fields a member (as the schema's
    ``unknown field`` problem names it); below a free-form value or without a schema,
    :func:`child` decides.
    """
    path = ""
    node: Mapping[str, Any] | None = schema
    for key in keys:
        if isinstance(key, int):
            path = f"{path}[{key}]"
            node = _mapping(node.get("items")) if node is not None else None
            continue
        path, node = _member(path, key, node)
    return path


def _member(path: str, key: str, node: Mapping[str, Any] | None) -> tuple[str, Any]:
    if node is None:
        return child(path, key), None
    properties = node.get("properties")
    extra = node.get("additionalProperties")
    named = f"{path}.{key}" if path else key
    if isinstance(properties, Mapping) and key in properties:
        return named, _mapping(properties[key])
    if isinstance(extra, Mapping):
        return f"{path}[{key}]", extra
    if isinstance(properties, Mapping) and not node.get(_PRESERVE_UNKNOWN):
        return named, None
    return child(path, key), None


def _mapping(node: Any) -> Mapping[str, Any] | None:
    return node if isinstance(node, Mapping) else None
