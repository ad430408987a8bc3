"""The size and type model of CRD rule cost estimation (see :mod:`tools.crdcost`).

Saturating cost arithmetic (cel-go ``checker/cost.go``), the API server's schema model
(``k8s.io/apiserver pkg/cel/common/schemas.go`` ``SchemaDeclType`` at v0.34.9) with the
path size estimator of ``apiextensions-apiserver pkg/apiserver/schema/cel/compilation.go``,
and the checker types the cost walk needs.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

MAX_COST = 2**64 - 1
# apiextensions validation.go StaticEstimatedCostLimit / StaticEstimatedCRDCostLimit.
RULE_COST_LIMIT = 10_000_000
CRD_COST_LIMIT = 100_000_000
# apiserver pkg/apis/cel/config.go MaxRequestSizeBytes (3 MiB).
MAX_REQUEST_SIZE = 3 * 1024 * 1024
# apiserver pkg/cel/limits.go
_MAX_DURATION_JSON = 32
_MIN_DURATION_JSON = 3
_JSON_DATE = 12
_MAX_DATETIME_JSON = 32
_MIN_DATETIME_JSON = 21
_MIN_STRING = 2
_MIN_BOOL = 4
_MIN_NUMBER = 1
_MAX_FORMAT_SIZE = 64
_MAX_NAME_FORMAT_REGEX = 128
# cel-go common/cost.go
_STRING_FACTOR = 0.1
_REGEX_FACTOR = 0.25
_LIST_CREATE = 10
_MAP_CREATE = 30
_STRUCT_CREATE = 40


# ---------------------------------------------------------------- saturating arithmetic


def _add(a: int, b: int) -> int:
    return min(a + b, MAX_COST)


def _mul(a: int, b: int) -> int:
    return min(a * b, MAX_COST)


def _factor(x: int, f: float) -> int:
    # cel-go multiplyByCostFactor: float64 product, rounded up, saturating.
    xf = float(x)
    if xf > 0 and f > 0 and xf > float(MAX_COST) / f:
        return MAX_COST
    c = math.ceil(xf * f)
    if c >= 2.0**64:
        return MAX_COST
    return int(c)


@dataclass(frozen=True)
class Est:
    """A [lo, hi] range of a size or a cost (cel-go SizeEstimate / CostEstimate)."""

    lo: int
    hi: int

    def add(self, o: Est) -> Est:
        return Est(_add(self.lo, o.lo), _add(self.hi, o.hi))

    def mul(self, o: Est) -> Est:
        return Est(_mul(self.lo, o.lo), _mul(self.hi, o.hi))

    def factor(self, f: float) -> Est:
        return Est(_factor(self.lo, f), _factor(self.hi, f))

    def union(self, o: Est) -> Est:
        return Est(min(self.lo, o.lo), max(self.hi, o.hi))


_UNKNOWN = Est(0, MAX_COST)
_ONE = Est(1, 1)
_ZERO = Est(0, 0)


def _fixed(n: int) -> Est:
    return Est(n, n)


# ---------------------------------------------------------------- schema model


@dataclass(frozen=True, eq=False)
class DeclType:
    """A schema node as the API server's CEL type model sees it (apiserver ``DeclType``)."""

    kind: str  # object list map string bytes int double bool duration timestamp dyn
    max_elements: int = 0
    min_size: int = 0
    fields: Mapping[str, DeclType] = field(default_factory=dict)
    elem: DeclType | None = None
    key: DeclType | None = None


_STRING_KEY = DeclType("string", 0, _MIN_STRING)
# CEL's reserved words: a property so named is escaped as __<name>__ (apiserver
# pkg/cel/escaping.go).
CEL_RESERVED = frozenset(
    [
        "true",
        "false",
        "null",
        "in",
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
    ]
)
_ESCAPABLE = re.compile(r"^[A-Za-z0-9_.\-/]+$")


def escape_property(name: str) -> str | None:
    """The CEL name of a property (apiserver ``pkg/cel/escaping.go`` ``Escape``), None if
    CEL cannot reach it (empty, a leading digit, or a character other than letters,
    digits, ``_``, ``.``, ``-`` and ``/``)."""
    if not name or name[0] in "0123456789":
        return None
    if name in CEL_RESERVED:
        return f"__{name}__"
    if not _ESCAPABLE.match(name):
        return None
    out = name.replace("__", "__underscores__")
    return out.replace(".", "__dot__").replace("-", "__dash__").replace("/", "__slash__")


def _types(s: Mapping[str, Any]) -> list[str]:
    t = s.get("type")
    if isinstance(t, list):
        return [str(x) for x in t]
    return [str(t)] if t else []


def _with_type_and_object_meta(s: Mapping[str, Any]) -> Mapping[str, Any]:
    """apiserver ``WithTypeAndObjectMeta``: a resource root always exposes these names."""
    props = s.get("properties")
    if isinstance(props, Mapping):
        meta = props.get("metadata", {})
        meta_props = meta.get("properties") if isinstance(meta, Mapping) else None
        if (
            "string" in _types(props.get("kind", {}))
            and "string" in _types(props.get("apiVersion", {}))
            and "object" in _types(meta)
            and isinstance(meta_props, Mapping)
            and "string" in _types(meta_props.get("name", {}))
            and "string" in _types(meta_props.get("generateName", {}))
        ):
            return s
    new_props = dict(props) if isinstance(props, Mapping) else {}
    new_props["kind"] = {"type": "string"}
    new_props["apiVersion"] = {"type": "string"}
    new_props["metadata"] = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "generateName": {"type": "string"}},
    }
    return {**s, "properties": new_props}


def _nonneg(v: Any) -> int:
    return max(int(v), 0)


def _string_max(s: Mapping[str, Any]) -> int:
    if "maxLength" in s:
        return _nonneg(s["maxLength"]) * 4
    enum = [v for v in s.get("enum") or [] if isinstance(v, str)]
    if enum:
        return max(len(v.encode()) for v in enum)
    return MAX_REQUEST_SIZE - 2


def schema_decl_type(s: Mapping[str, Any], is_root: bool = False) -> DeclType | None:
    """``SchemaDeclType``: the CEL type and size bounds of a structural schema node."""
    if s.get("x-kubernetes-int-or-string"):
        mx = _nonneg(s["maxLength"]) * 4 if "maxLength" in s else MAX_REQUEST_SIZE - 2
        return DeclType("dyn", mx, 1)
    if is_root:
        s = _with_type_and_object_meta(s)
    kind = _types(s)[0] if _types(s) else ""
    if kind == "array":
        items = s.get("items")
        if not isinstance(items, Mapping):
            return None
        elem = schema_decl_type(items, bool(items.get("x-kubernetes-embedded-resource")))
        if elem is None:
            return None
        if "maxItems" in s:
            mx = _nonneg(s["maxItems"])
        else:
            mx = (MAX_REQUEST_SIZE - 2) // (elem.min_size + 1)
        return DeclType("list", mx, 2, elem=elem)
    if kind == "object":
        extra = s.get("additionalProperties")
        if isinstance(extra, Mapping):
            elem = schema_decl_type(extra, bool(extra.get("x-kubernetes-embedded-resource")))
            if elem is None:
                return None
            if "maxProperties" in s:
                mx = _nonneg(s["maxProperties"])
            else:
                mx = (MAX_REQUEST_SIZE - 2) // (elem.min_size + 6)
            return DeclType("map", mx, 2, elem=elem, key=_STRING_KEY)
        required = set(s.get("required") or [])
        fields: dict[str, DeclType] = {}
        min_size = 2
        for name, prop in (s.get("properties") or {}).items():
            ft = schema_decl_type(prop, bool(prop.get("x-kubernetes-embedded-resource")))
            if ft is None:
                continue
            escaped = escape_property(name)
            if escaped is not None:
                fields[escaped] = ft
            if name in required and "default" not in prop:
                min_size += len(name) + ft.min_size + 4
        return DeclType("object", 0, min_size, fields=fields)
    if kind == "string":
        fmt = s.get("format")
        if fmt == "byte":
            mx = _nonneg(s["maxLength"]) if "maxLength" in s else MAX_REQUEST_SIZE - 2
            return DeclType("bytes", mx, _MIN_STRING)
        if fmt == "duration":
            return DeclType("duration", _MAX_DURATION_JSON, _MIN_DURATION_JSON)
        if fmt == "date":
            return DeclType("timestamp", _JSON_DATE, _JSON_DATE)
        if fmt == "date-time":
            return DeclType("timestamp", _MAX_DATETIME_JSON, _MIN_DATETIME_JSON)
        return DeclType("string", _string_max(s), _MIN_STRING)
    if kind == "boolean":
        return DeclType("bool", 0, _MIN_BOOL)
    if kind == "number":
        return DeclType("double", 0, _MIN_NUMBER)
    if kind == "integer":
        return DeclType("int", 0, _MIN_NUMBER)
    return None


def _size_at(root: DeclType, path: Sequence[str] | None) -> Est | None:
    """apiextensions ``sizeEstimator.EstimateSize``: MaxElements of the node at ``path``."""
    if not path:
        return None
    node = root
    for name in path[1:]:
        nxt: DeclType | None
        if name in ("@items", "@values"):
            nxt = node.elem
        elif name == "@keys":
            nxt = node.key
        else:
            nxt = node.fields.get(name)
        if nxt is None:
            return None
        node = nxt
    return Est(0, node.max_elements)


# ---------------------------------------------------------------- CEL types


@dataclass(frozen=True)
class CelType:
    """The checker's type of an expression (enough of cel-go's to pick overloads)."""

    kind: str  # bool int uint double string bytes null list map object dyn type duration
    # timestamp optional quantity semver url ip cidr format
    params: tuple[CelType, ...] = ()
    decl: DeclType | None = field(default=None, compare=False)


_T: dict[str, CelType] = {
    k: CelType(k)
    for k in [
        "bool",
        "int",
        "uint",
        "double",
        "string",
        "bytes",
        "null",
        "dyn",
        "type",
        "duration",
        "timestamp",
        "quantity",
        "semver",
        "url",
        "ip",
        "cidr",
        "format",
    ]
}
_DYN = _T["dyn"]
# The element type of an empty literal: a type parameter the checker binds later.
_FREE = CelType("free")


def _list(t: CelType) -> CelType:
    return CelType("list", (t,))


def _map(k: CelType, v: CelType) -> CelType:
    return CelType("map", (k, v))


def _cel_type(d: DeclType) -> CelType:
    if d.kind == "object":
        return CelType("object", decl=d)
    if d.kind == "list":
        assert d.elem is not None
        return _list(_cel_type(d.elem))
    if d.kind == "map":
        assert d.elem is not None
        return _map(_T["string"], _cel_type(d.elem))
    return _T[d.kind]


def _is(t: CelType, *kinds: str) -> bool:
    return t.kind in ("dyn", "free") or t.kind in kinds


_SCALARS = frozenset({"bool", "double", "duration", "int", "timestamp", "uint"})
_TYPE_IDENTS = {
    "int": "int",
    "uint": "uint",
    "double": "double",
    "bool": "bool",
    "string": "string",
    "bytes": "bytes",
    "list": "list",
    "map": "map",
    "null_type": "null",
    "type": "type",
}


def _join(a: CelType | None, b: CelType) -> CelType:
    if a is None or a.kind == "free":
        return b
    if b.kind == "free":
        return a
    if a.kind == "object" or b.kind == "object":
        return a if a.decl is b.decl else _DYN
    if a == b:
        return a
    if a.kind == b.kind and a.kind in ("list", "map"):
        return CelType(a.kind, tuple(_join(x, y) for x, y in zip(a.params, b.params, strict=True)))
    return _DYN


class RuleError(Exception):
    """A rule the API server would not compile (or this estimator cannot model)."""
