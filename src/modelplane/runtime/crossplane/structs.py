"""Protobuf Struct <-> dict, and integers restored after the trip through a Struct.

A ``google.protobuf.Struct`` has one number type, a double: ``replicas: 3`` arrives
as ``3.0``. Left alone, that float would be re-emitted into composed objects, and the
API server refuses ``replicas: 3.0`` for an int32 field. ``restore_integers`` walks a
value beside its structural OpenAPI schema and turns integral floats back into ints
wherever the schema says integer (or int-or-string).

Where no schema describes a value (free-form fields, a remote kind carried in a
provider-kubernetes Object), every integral float becomes an int: such content ends up
in Kubernetes objects, whose numeric fields are integers (replicas, ports, probe
seconds, user and group ids), and a ``number`` field accepts an integer anyway.

Nothing here raises on odd input: a schema that is not a mapping reads as "no
schema", NaN and infinities stay floats (validation then reports them).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from typing import Any

from google.protobuf import struct_pb2

from modelplane.memo import Memo

Schema = Mapping[str, Any]


def value_to_python(value: struct_pb2.Value) -> Any:
    """One ``google.protobuf.Value`` as a plain Python value (unset reads as None)."""
    kind = value.WhichOneof("kind")
    if kind == "string_value":  # most values of an object: tested first
        return value.string_value
    if kind == "struct_value":
        return struct_to_dict(value.struct_value)
    if kind == "list_value":
        return [value_to_python(item) for item in value.list_value.values]
    if kind == "number_value":
        return value.number_value
    if kind == "bool_value":
        return value.bool_value
    return None


def struct_to_dict(struct: struct_pb2.Struct) -> dict[str, Any]:
    """A Struct as a dict. Numbers stay floats; see ``restore_integers``."""
    return {key: value_to_python(item) for key, item in struct.fields.items()}


def dict_to_struct(data: Mapping[str, Any]) -> struct_pb2.Struct:
    """A JSON-like mapping as a Struct (ints become doubles on the wire, as Crossplane expects)."""
    struct = struct_pb2.Struct()
    struct.update(_jsonable(data))
    return struct


# Building a Struct field by field is slow (pure Python), and a reconcile in steady
# state emits the same objects call after call: their encodings are remembered by
# their JSON text, which is several times cheaper to compute.
_ENCODED: Memo[str, bytes] = Memo("runtime.encoded_structs", 4096)


def encode_struct(data: Mapping[str, Any]) -> bytes:
    """The wire encoding of ``data`` as a Struct."""
    try:
        key = json.dumps(data, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):
        # Not plain JSON (a tuple key, NaN): encode without remembering.
        return bytes(dict_to_struct(data).SerializeToString())
    return _ENCODED.get(key, lambda: bytes(dict_to_struct(data).SerializeToString()))


def _jsonable(value: Any) -> Any:
    # Struct.update accepts dicts, lists, str, numbers, bools and None only; tuples and
    # other mappings produced by pure code are normalised here instead of failing there.
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def _says_integer(schema: Schema) -> bool:
    if schema.get("type") == "integer" or schema.get("x-kubernetes-int-or-string") is True:
        return True
    # Non-structural spellings of int-or-string: anyOf/oneOf with an integer branch.
    for combinator in ("anyOf", "oneOf"):
        branches = schema.get(combinator)
        if isinstance(branches, list) and any(
            isinstance(b, Mapping) and b.get("type") == "integer" for b in branches
        ):
            return True
    return False


def _integral(value: float) -> bool:
    return value.is_integer()  # False for NaN and infinities


def integral_floats_to_int(value: Any) -> Any:
    """Every integral float in ``value`` as an int: for content no schema describes."""
    if isinstance(value, float):
        return int(value) if _integral(value) else value
    if isinstance(value, dict):
        return {k: v if type(v) in _LEAVES else integral_floats_to_int(v) for k, v in value.items()}
    if isinstance(value, list):
        return [v if type(v) in _LEAVES else integral_floats_to_int(v) for v in value]
    return value


# Values every walk below returns unchanged, skipped without a call: most of an object's
# values are strings, and a call per string was most of a walk's time.
_LEAVES = frozenset({str, bool, type(None)})


def _property_schema(schema: Schema, key: str) -> Schema | None:
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        sub = properties.get(key)
        if isinstance(sub, Mapping):
            return sub
    additional = schema.get("additionalProperties")
    if isinstance(additional, Mapping):
        return additional
    return None


def restore_integers(value: Any, schema: Schema | None) -> Any:
    """``value`` with integral floats turned into ints where ``schema`` says integer.

    ``schema`` is a structural OpenAPI v3 schema (``type``, ``properties``, ``items``,
    ``additionalProperties``, ``x-kubernetes-int-or-string``). Parts of ``value`` the
    schema does not describe are treated as free-form (``integral_floats_to_int``).
    A float in a ``number`` field, a non-integral float, and every non-number are kept.
    """
    if not isinstance(schema, Mapping):
        return integral_floats_to_int(value)
    if isinstance(value, float):
        return int(value) if _says_integer(schema) and _integral(value) else value
    if isinstance(value, dict):
        return {
            k: v if type(v) in _LEAVES else restore_integers(v, _property_schema(schema, k))
            for k, v in value.items()
        }
    if isinstance(value, list):
        items = schema.get("items")
        item_schema = items if isinstance(items, Mapping) else None
        return [v if type(v) in _LEAVES else restore_integers(v, item_schema) for v in value]
    return value


# The ObjectMeta fields the API server writes for its own bookkeeping and the function
# never reads: ``managedFields`` alone is often half of an object Crossplane sends.
SERVER_BOOKKEEPING = frozenset({"managedFields"})


def drop_metadata(struct: struct_pb2.Struct, fields: frozenset[str]) -> None:
    """Remove ObjectMeta ``fields`` from ``struct`` itself, before it is digested or read:
    the request is this process's own copy, and the digest then covers only what is read.
    Dropping twice is dropping once."""
    metadata = struct.fields.get("metadata")
    if metadata is None or metadata.WhichOneof("kind") != "struct_value":
        return
    present = metadata.struct_value.fields
    for name in fields:
        if name in present:
            del present[name]


def struct_digest(encoded: bytes | memoryview) -> bytes:
    """The content digest of a Struct from its deterministic encoding (``cache_key``).

    SHA-256: about two thirds of BLAKE2b's time on this size (a few KB), in hardware."""
    return hashlib.sha256(encoded).digest()


class StructDocument(Mapping[str, Any]):
    """A Struct read as a dict on first use, identified by a digest of its content.

    Crossplane sends the same fleet on every call; ``cache_key`` lets a validated
    object be reused without converting or validating the Struct again. The request's
    ``SERVER_BOOKKEEPING`` is dropped before its documents are made
    (``proto.drop_bookkeeping``): neither the digest nor the dict carries it.
    """

    __slots__ = ("_struct", "_data", "_key")

    def __init__(self, struct: struct_pb2.Struct, *, key: bytes | None = None) -> None:
        """``key``: the digest, already computed (``proto.request_key``); None computes it
        on first use."""
        self._struct = struct
        self._data: dict[str, Any] | None = None
        self._key = key

    @property
    def cache_key(self) -> bytes:
        """A digest of the Struct's deterministic encoding (map keys sorted), computed once.

        Not ``uid`` and ``resourceVersion``, although reading them costs a fifth as much
        (about 3 us against 15 us for a cluster): hand-built inputs (``crossplane render``
        with observed resources from files, against a long-running ``function serve``)
        repeat those with other content, and would be answered from the old content.
        """
        if self._key is None:
            self._key = struct_digest(self._struct.SerializeToString(deterministic=True))
        return self._key

    def _dict(self) -> dict[str, Any]:
        if self._data is None:
            self._data = struct_to_dict(self._struct)
        return self._data

    def __getitem__(self, key: str) -> Any:
        return self._dict()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._dict())

    def __len__(self) -> int:
        return len(self._dict())
