"""Validate one document exactly as the API server would read it (pure; docs/api.md, "The steps").

The steps, in order:

1. ``apiVersion`` and ``kind`` identify one of the six kinds; otherwise stop.
2. Defaults of the kind's schema are applied inside present objects, after null
   fields are pruned (the API server prunes nulls of non-nullable fields first).
3. Structural checks against the schema, plus ObjectMeta.
4. CEL rules (``x-kubernetes-validations``), only when step 3 found nothing.
5. DRA selectors compiled, in the same walk as step 4 so the two sets of
   problems come out in one depth-first order.

Messages are the API server's field-error texts; paths use Kubernetes notation.
"""

from __future__ import annotations

import copy
import json
import marshal
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from pydantic import BaseModel, ValidationError

from modelplane.api.base import (
    DNS_LABEL,
    DRA_SELECTOR_KEY,
    GROUP_VERSION,
    LABEL_KEY,
    LABEL_VALUE,
    VALIDATIONS_KEY,
    KubeModel,
)
from modelplane.api.kinds import KIND_BY_NAME, KINDS, KindInfo
from modelplane.api.openapi import INT_OR_STRING, PRESERVE_UNKNOWN, Schema, validator_schema
from modelplane.cel import CelError, CompiledRule, check_selector, compile_rule
from modelplane.cel.engine import CompileFailure, parse_expression
from modelplane.memo import Memo, memoized

SELECTOR_PREFIX = "Invalid nodeSelector CEL expression: "
_DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
# Fields of the root in the order errors are reported.
_ROOT_ORDER = ("apiVersion", "kind", "metadata", "spec", "status")


@dataclass(frozen=True)
class Problem:
    """One located validation problem: a Kubernetes field path and a fixed message."""

    path: str
    message: str


@dataclass
class ValidationResult:
    """What validation learnt about one document."""

    kind: Any
    """The document's ``kind`` as written (None when absent)."""
    info: KindInfo | None
    """The kind's description when ``kind`` names one of the six kinds."""
    name: Any
    """``metadata.name`` as written (None when absent)."""
    namespace: Any
    """The defaulted namespace of a namespaced kind; None for cluster-scoped or unknown kinds."""
    defaulted: dict[str, Any]
    """The document after defaulting (step 2); the input when step 1 failed."""
    problems: list[Problem] = field(default_factory=list)
    model: KubeModel | None = None
    """The typed object; set exactly when there are no problems."""

    @property
    def ok(self) -> bool:
        """True when the document is valid."""
        return not self.problems

    def object_ref(self) -> str:
        """``<Kind> <namespace>/<name>``, or ``<Kind> <name>`` when not namespaced (docs/cli.md)."""
        kind = self.kind if isinstance(self.kind, str) and self.kind else _display(self.kind)
        name = _display(self.name)
        if self.info is not None and self.info.namespaced:
            return f"{kind} {_display(self.namespace)}/{name}"
        return f"{kind} {name}"


def validate_document(
    raw: Any, *, rules: bool = True, owned: bool = False, null_free: bool = False
) -> ValidationResult:
    """Validate one parsed document; never raises on any JSON-like input.

    With ``rules=False`` only steps 1 to 3 run (identity, defaults, structure): what the
    Crossplane runtime checks, the API server having already run the CRD rules.
    With ``owned=True`` the caller hands over a value that is JSON already (string keys,
    JSON scalars: what manifests' readers build) and that nobody else holds: it is
    defaulted in place instead of copied first. With ``null_free=True`` the caller knows
    that no object in it has a null member (the fast reader saw no null in the file), so
    no spec or status is walked for nulls to prune.
    """
    try:
        return _validate(raw if owned else _normalize(raw), rules, null_free)
    except RecursionError:
        return ValidationResult(
            None, None, None, None, {}, [Problem("", "document nests too deeply")]
        )


def _validate(doc: Any, rules: bool = True, null_free: bool = False) -> ValidationResult:
    if not isinstance(doc, dict):
        return ValidationResult(
            None, None, None, None, {}, [Problem("", "document is not an object")]
        )
    kind = doc.get("kind")
    info = KIND_BY_NAME.get(kind) if isinstance(kind, str) else None
    result = ValidationResult(kind, info, _meta_field(doc, "name"), None, doc)
    if info is not None and info.namespaced:
        result.namespace = _meta_field(doc, "namespace") or "default"
    result.problems = _check_identity(doc)
    if result.problems or info is None:
        return result

    compiled = _compiled_kind(info.kind)
    defaulted = doc  # a private copy: _normalize rebuilt every container, or the caller's own
    # The content keys of the spec and status as written: their defaulted form, and so
    # their verdicts, follow from them.
    contents = _contents(defaulted)
    compiled.defaults(defaulted, contents, null_free)
    _default_namespace(defaulted, info)
    result.defaulted = defaulted
    result.name = _meta_field(defaulted, "name")
    if info.namespaced:
        result.namespace = _meta_field(defaulted, "namespace")

    # The fast verdicts first; the located walks of the same tree only to name what is wrong.
    if not compiled.shape.clean(defaulted, info, contents):
        result.problems = [_replaced(info.kind, p) for p in compiled.shape.locate(defaulted, info)]
        if result.problems:
            return result
    if rules and not compiled.rules.holds(defaulted, contents):
        result.problems = compiled.rules.locate(defaulted)
        if result.problems:
            return result
    try:
        result.model = _typed(info, defaulted, contents.get("spec"))
    except ValidationError as err:
        # The models and the schema are one source, so this is a bug; still no crash.
        result.problems = [
            Problem(_loc_path(e["loc"]), f"internal: {e['msg']}") for e in err.errors()
        ]
    return result


# Fields of the v0.3 shapes the v0.5 ones replaced: an old manifest's unknown field names
# its successor (docs/api.md, "ModelService and InferenceGateway").
REPLACED_FIELDS: dict[tuple[str, str], str] = {
    (
        "ModelEndpoint",
        "spec.url",
    ): "spec.origin (scheme://host[:port]) and spec.api.prefix (the path)",
    ("ModelEndpoint", "spec.rewritePath"): "spec.api.prefix (the backend's own path)",
    (
        "InferenceGateway",
        "spec.gatewayClassName",
    ): "spec.clusterName (the gateway runs on that cluster, in its stack's GatewayClass)",
}


def _replaced(kind: str, problem: Problem) -> Problem:
    successor = REPLACED_FIELDS.get((kind, problem.path))
    if successor is None or problem.message != "unknown field":
        return problem
    return Problem(problem.path, f"unknown field: replaced by {successor}")


# ---------------------------------------------------------------------------
# Rendering values the way the API server's messages spell them.


def _json(value: Any) -> str:
    """Compact JSON, as messages show values."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def _display(value: Any) -> str:
    """A name, namespace or kind in the object part of a problem line."""
    if value is None or value == "":
        return '""'
    if isinstance(value, str):
        return value
    return _json(value)


def _loc_path(loc: Iterable[int | str]) -> str:
    path: _Path | None = None
    for part in loc:
        path = _Path(path, str(part), bracket=isinstance(part, int))
    return _text(path)


def _normalize(value: Any) -> Any:
    """A JSON-like copy: string keys (as sigs.k8s.io/yaml turns YAML keys into JSON keys)."""
    if isinstance(value, dict):
        return {_key(k): _normalize(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_normalize(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    return str(key)


def _meta_field(doc: dict[str, Any], name: str) -> Any:
    meta = doc.get("metadata")
    return meta.get(name) if isinstance(meta, dict) else None


# ---------------------------------------------------------------------------
# Step 1: apiVersion and kind.


_KIND_NAMES = [k.kind for k in KINDS]


def _check_identity(doc: dict[str, Any]) -> list[Problem]:
    kind = doc.get("kind")
    if doc.get("apiVersion") == GROUP_VERSION and type(kind) is str and kind in KIND_BY_NAME:
        return []  # the common case, without building the messages' lists
    kinds = _KIND_NAMES
    return [
        *_check_enum_field(doc, "apiVersion", [GROUP_VERSION]),
        *_check_enum_field(doc, "kind", kinds),
    ]


def _check_enum_field(doc: dict[str, Any], name: str, allowed: list[str]) -> list[Problem]:
    value = doc.get(name)
    if value is None or value == "":
        return [Problem(name, "Required value")]
    if not isinstance(value, str):
        return [Problem(name, _type_message(value, ("string",)))]
    if value not in allowed:
        return [Problem(name, _enum_message(value, allowed))]
    return []


# ---------------------------------------------------------------------------
# Step 2: defaults.


def _default_namespace(doc: dict[str, Any], info: KindInfo) -> None:
    meta = doc.setdefault("metadata", {})
    if not isinstance(meta, dict):
        return
    if not info.namespaced:
        # The API server ignores a namespace on a cluster-scoped object.
        meta.pop("namespace", None)
    elif meta.get("namespace") in (None, ""):
        meta["namespace"] = "default"


# ---------------------------------------------------------------------------
# Step 3: structure (the messages; the checks are the compiled tree's, below).


def _expected_types(schema: Schema) -> tuple[str, ...]:
    if schema.get(INT_OR_STRING):
        return ("integer", "string")
    declared = schema.get("type")
    return (declared,) if isinstance(declared, str) else ()


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return "null"


def _type_message(value: Any, expected: tuple[str, ...]) -> str:
    return f"Invalid value: {_json(value)}: must be of type {' or '.join(expected)}"


def _enum_message(value: Any, allowed: Iterable[Any]) -> str:
    shown = _json(value)
    return f"Unsupported value: {shown}: supported values: " + ", ".join(_json(a) for a in allowed)


def _list_map_keys(schema: Schema) -> list[str]:
    """The keys that identify an entry of a ``x-kubernetes-list-type: map`` array, else none."""
    if schema.get("x-kubernetes-list-type") != "map":
        return []
    keys: list[str] = schema.get("x-kubernetes-list-map-keys", [])
    return keys


# Patterns come from our own schemas: a few dozen.
@memoized("api.validation.patterns", 1024)
def _regex(pattern: str) -> re.Pattern[str]:
    # In RE2 and ECMA-262, `$` matches only at the very end; Python's also matches before a
    # final newline, so spell it \Z. Our patterns use `$` only as an anchor.
    return re.compile(re.sub(r"(?<!\\)\$", r"\\Z", pattern))


_REMEMBERED_MATCH = 256
"""The longest value whose match is remembered (names, label keys and values repeat)."""


def _matches(pattern: str, value: str) -> bool:
    if len(value) <= _REMEMBERED_MATCH:
        return _matches_remembered(pattern, value)
    return _regex(pattern).search(value) is not None


# At 10,000 replicas the same label keys, class names and cluster names are matched
# 120,000 times; an entry is a pattern and a value of at most 256 characters.
@memoized("api.validation.pattern_verdicts", 32768)
def _matches_remembered(pattern: str, value: str) -> bool:
    return _regex(pattern).search(value) is not None


def _check_metadata(meta: Any, info: KindInfo, out: list[Problem]) -> None:
    """The ObjectMeta checks of step 3; other ObjectMeta fields are accepted unread."""
    if not isinstance(meta, dict):
        out.append(Problem("metadata", _type_message(meta, ("object",))))
        return
    name = meta.get("name")
    if name is None or name == "":
        out.append(Problem("metadata.name", "Required value"))
    elif not isinstance(name, str):
        out.append(Problem("metadata.name", _type_message(name, ("string",))))
    elif len(name) > 253 or not _matches(_DNS_SUBDOMAIN, name):
        out.append(
            Problem("metadata.name", f"Invalid value: {_json(name)}: must be a DNS subdomain")
        )
    if info.namespaced:
        namespace = meta.get("namespace")
        if not isinstance(namespace, str):
            out.append(Problem("metadata.namespace", _type_message(namespace, ("string",))))
        elif len(namespace) > 63 or not _matches(DNS_LABEL, namespace):
            out.append(
                Problem(
                    "metadata.namespace", f"Invalid value: {_json(namespace)}: must be a DNS label"
                )
            )
    _check_string_map(meta, "labels", out, check_values=True)
    _check_string_map(meta, "annotations", out, check_values=False)


def _check_string_map(
    meta: dict[str, Any], field_name: str, out: list[Problem], *, check_values: bool
) -> None:
    path = f"metadata.{field_name}"
    entries = meta.get(field_name)
    if entries is None:
        return
    if not isinstance(entries, dict):
        out.append(Problem(path, _type_message(entries, ("object",))))
        return
    for key in sorted(entries):
        entry_path = f"{path}[{key}]"
        if not _valid_label_key(key):
            out.append(
                Problem(entry_path, f"Invalid value: {_json(key)}: must be a valid label key")
            )
        value = entries[key]
        if not isinstance(value, str):
            out.append(Problem(entry_path, _type_message(value, ("string",))))
        elif check_values and (len(value) > 63 or not _matches(LABEL_VALUE, value)):
            out.append(
                Problem(entry_path, f"Invalid value: {_json(value)}: must be a valid label value")
            )


def _valid_label_key(key: str) -> bool:
    prefix, _, _ = key.rpartition("/")
    return len(prefix) <= 253 and _matches(LABEL_KEY, key)


# ---------------------------------------------------------------------------
# Steps 4 and 5: CEL rules and DRA selectors, evaluated and remembered (walked, in one
# depth-first walk, by the compiled tree's _Rules below).


def content_key(value: Any) -> bytes:
    """The key a JSON value's verdicts are remembered by: equal keys mean equal values.

    It is the value's ``marshal`` form (version 2, which writes every object in full, so
    the bytes follow from the value alone): made in C in about half the time of its
    ``repr``, and, as marshal reads it back, it tells 1, 1.0 and True apart and keeps key
    order and float signs. A value marshal refuses (nested past its depth) is keyed by its
    repr instead, behind a prefix no marshal form starts with.
    """
    try:
        return marshal.dumps(value, 2)
    except ValueError:
        return b"r" + repr(value).encode("utf-8", "surrogatepass")


_NULL_MARK = marshal.dumps(None, 2)
"""The one byte marshal writes for None: a content key without it holds no null."""


# The verdicts of rules on sub-objects, by rule text and the value's content. At 10,000
# replicas, their 166,000 rule evaluations had about 5,000 distinct (rule, value) pairs.
# An entry holds a sub-object's content key (a few KB at most), so the bound keeps the
# memo to tens of MB.
_RULE_VERDICTS: Memo[tuple[str, bytes], bool] = Memo("api.validation.rule_verdicts", 8192)


class _Reads:
    """What rules read of one value reached from ``self``: all of it, some of its fields,
    each of its items, or its size (a node of the tree ``rule_reads`` builds)."""

    __slots__ = ("whole", "fields", "each", "length")

    def __init__(self) -> None:
        self.whole = False
        self.fields: dict[str, _Reads] = {}
        self.each: _Reads | None = None
        self.length = False

    def field(self, name: str) -> _Reads:
        found = self.fields.get(name)
        if found is None:
            found = self.fields[name] = _Reads()
        return found

    def item(self) -> _Reads:
        if self.each is None:
            self.each = _Reads()
        return self.each


def rule_reads(texts: Iterable[str]) -> _Reads | None:
    """The parts of ``self`` the rules can read, from their parsed ASTs; None when one does
    not parse (it fails whatever it is given, so its verdict follows the whole value).

    A field selection reads that field (a missing one reads its absence); ``has()`` reads
    only whether the field is there.
    A macro over a value (``all``, ``exists``, ``exists_one``, ``map``, ``filter``) reads
    its length and, of each item, what the macro's variable is used for; an index by a
    constant reads the items the same way. ``size()`` reads the length. Any other use of a
    value (compared, passed to a function, put in a list, bound) reads all of it, and so
    does a field spelt with Kubernetes' CEL escapes (``a__dash__b`` reads ``a-b``).
    """
    root = _Reads()
    for text in texts:
        expr = _parsed(text)
        if expr is None:
            return None
        _use(_reached(expr, {"self": root}))
    return root


# Rule texts come from our own schemas: a few hundred, each read for its node, for its
# own key and for its subtree's (the AST is only read, never changed).
@memoized("api.validation.parsed_rules", 1024)
def _parsed(text: str) -> Any:
    """The parsed AST of a rule (macros expanded), or None when it does not parse."""
    try:
        return parse_expression(text, "rule")
    except CompileFailure:
        return None


def _use(node: _Reads | None) -> None:
    if node is not None:
        node.whole = True


def _reached(expr: Any, scope: dict[str, _Reads | None]) -> _Reads | None:
    """The part of ``self`` that ``expr`` evaluates to (None: a value not of ``self``),
    marking in the tree what evaluating it reads."""
    kind = expr.WhichOneof("expr_kind")
    if kind == "ident_expr":
        return scope.get(expr.ident_expr.name)
    if kind == "select_expr":
        select = expr.select_expr
        operand = _reached(select.operand, scope)
        if operand is None:
            return None
        if "__" in select.field:
            operand.whole = True
            return None
        if select.test_only:
            operand.field(select.field)  # has(): the field's presence, not its value
            return None
        return operand.field(select.field)
    if kind == "call_expr":
        call = expr.call_expr
        args = list(call.args)
        if call.function == "_[_]" and len(args) == 2 and not call.HasField("target"):
            indexed = _reached(args[0], scope)
            if indexed is not None and args[1].WhichOneof("expr_kind") == "const_expr":
                return indexed.item()
            _use(indexed)
            _use(_reached(args[1], scope))
            return None
        operands = ([call.target] if call.HasField("target") else []) + args
        if call.function == "size" and len(operands) == 1:
            sized = _reached(operands[0], scope)
            if sized is not None:
                sized.length = True
            return None
        for operand in operands:
            _use(_reached(operand, scope))
        return None
    if kind == "list_expr":
        for element in expr.list_expr.elements:
            _use(_reached(element, scope))
        return None
    if kind == "struct_expr":
        for entry in expr.struct_expr.entries:
            if entry.HasField("map_key"):
                _use(_reached(entry.map_key, scope))
            _use(_reached(entry.value, scope))
        return None
    if kind == "comprehension_expr":
        comp = expr.comprehension_expr
        ranged = _reached(comp.iter_range, scope)
        variable: _Reads | None = None
        if ranged is not None:
            if comp.iter_var2:
                ranged.whole = True  # an index or key beside each item: read it all
            else:
                variable = ranged.item()
        _use(_reached(comp.accu_init, scope))
        inner: dict[str, _Reads | None] = {**scope, comp.iter_var: variable, comp.accu_var: None}
        if comp.iter_var2:
            inner[comp.iter_var2] = None
        _use(_reached(comp.loop_condition, inner))
        _use(_reached(comp.loop_step, inner))
        _use(_reached(comp.result, {**scope, comp.accu_var: None}))
        return None
    if kind == "const_expr":
        return None
    # An expression kind this reading does not know: whatever it touches is read whole.
    for node in scope.values():
        _use(node)
    return None


def _merge(into: _Reads, other: _Reads) -> None:
    """Add what ``other`` reads to ``into`` (a copy: the two trees share no node)."""
    into.whole = into.whole or other.whole
    into.length = into.length or other.length
    for name, sub in other.fields.items():
        _merge(into.field(name), sub)
    if other.each is not None:
        _merge(into.item(), other.each)


Project = Callable[[Any], Any]


def _unread(_value: Any) -> None:
    return None


def _itself(value: Any) -> Any:
    return value


def projection(reads: _Reads | None) -> Project:
    """A function of a value to what ``reads`` say the rules see of it: the key their
    verdict is remembered by. Values it maps alike are read alike, so they get one verdict;
    a value of another shape than the reads expect is kept whole.

    An object keeps the fields read (their absence too), a list its length and each item's
    part read (an unread item becomes None), a string whose size alone is read becomes
    as many ``x`` (a name's length rule reads every name of that length alike), a value
    read whole or another scalar itself. An
    object iterated or sized is kept whole (its keys are read), as is a list whose
    fields are selected (an error either way, but kept as it is).
    """
    if reads is None or reads.whole:
        return _itself
    if not reads.fields and reads.each is None and not reads.length:
        return _unread
    fields = [(name, projection(sub)) for name, sub in reads.fields.items()]
    each = projection(reads.each) if reads.each is not None else None
    keyed = each is not None or reads.length
    sized_only = reads.length and not fields and each is None

    def project(value: Any) -> Any:
        kind = type(value)
        if kind is dict:
            if keyed:
                return value
            return {name: sub(value[name]) for name, sub in fields if name in value}
        if kind is list:
            if fields:
                return value
            if each is None:
                return [None] * len(value)
            return [each(item) for item in value]
        if kind is str and sized_only:
            # size() of a string counts its code points: a string of as many reads alike.
            return "x" * len(value)
        return value

    return project


# Rule texts come from our own schemas: a few hundred.
@memoized("api.validation.transition_rules", 1024)
def _is_transition_rule(text: str) -> bool:
    return re.search(r"\boldSelf\b", text) is not None


# Not memoised here: ``compile_rule`` remembers every rule (and its failure) already.
def _compiled(text: str) -> CompiledRule | None:
    try:
        return compile_rule(text)
    except CelError:
        return None


def _rule_holds(text: str, seen: Any) -> bool:
    """``_evaluate``, remembered by the rule and the content key of what it reads."""
    return _RULE_VERDICTS.get((text, content_key(seen)), partial(_evaluate, text, seen))


def _evaluate(text: str, seen: Any) -> bool:
    """True when the rule holds on what it reads of a value (``projection``); a rule that
    does not compile or errors counts as failed.

    The engine is given only what the rule reads: the same answer, a few values converted
    instead of the whole object (a rule at a document's root that reads its name does not
    convert its status), and the verdict is a function of its memo key. A value the
    engine cannot represent (a lone surrogate, an integer past uint64) fails a rule only
    where the rule reads it, as the API server's decoded object would not fail it at all.
    """
    compiled = _compiled(text)
    if compiled is None:
        return False
    try:
        return compiled.evaluate(seen) is True
    except Exception:  # noqa: BLE001 - the adapter promises False, but a user must never see a trace
        return False


# ---------------------------------------------------------------------------
# Each kind's schema compiled once (_compiled_kind): the defaults as closures, and one
# tree for the structure and one for the rules (at the end of this module), each node of
# which answers "nothing to report" fast and, for a refused document, names every
# problem from the same compiled facts. tests/api/test_validation_fast.py holds the tree
# to a plain walker over the schema (tests/api/validation_reference.py).

Clean = Callable[[Any], bool]
Defaults = Callable[[Any], None]

_TYPE_NAMES: dict[type, str] = {
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    dict: "object",
    list: "array",
    type(None): "null",
}


@dataclass(frozen=True)
class _CompiledKind:
    """One kind's schema, compiled once: its defaults, its structure, its rules."""

    defaults: Callable[[dict[str, Any], dict[str, bytes], bool], None]
    shape: _RootShape
    rules: _RootRules


_BODIES = ("spec", "status")
"""The root's fields whose verdicts are remembered by content (see _VERDICTS)."""

# The structural and rule verdicts of a kind's whole spec or status, by its content as
# written (its content key before defaulting, which the defaulted body follows from).
# Replicas of one deployment on one cluster have equal specs; clusters of one shape have
# equal statuses: a remembered verdict skips the walk. An entry holds one spec's or
# status's key (a few KB). Members of a body are remembered under "<body>.<member>"
# sites, by their defaulted content (see _remembered).
_VERDICTS: Memo[tuple[str, str, str, bytes], bool] = Memo("api.validation.verdicts", 16384)


# A kind's typed spec, by its content key as written: replicas with equal specs share one
# typed spec, and only their metadata and status are typed anew (about a quarter of the
# time). Sharing is safe because typed objects are values here: the core derives new
# ones (model_copy) and never assigns to a spec (tests/api/test_validation_fast.py).
_TYPED_SPECS: Memo[tuple[str, bytes], BaseModel] = Memo("api.validation.typed_specs", 4096)


def _typed(info: KindInfo, defaulted: dict[str, Any], content: bytes | None) -> KubeModel:
    """The typed object of a valid defaulted document, with a spec seen before shared."""
    if content is None or "spec" not in defaulted:
        return info.model.model_validate(defaulted)
    key = (info.kind, content)
    spec = _TYPED_SPECS.lookup(key)
    if isinstance(spec, BaseModel):
        return info.model.model_validate({**defaulted, "spec": spec})
    model = info.model.model_validate(defaulted)
    typed = getattr(model, "spec", None)
    if isinstance(typed, BaseModel):
        _TYPED_SPECS.put(key, typed)
    return model


def _body_verdict(
    site: tuple[str, str, str], content: bytes | None, verdict: Callable[[], bool]
) -> bool:
    """A spec's or status's verdict, remembered by its content key as written (a body a
    default added has none, and is judged each time)."""
    if content is None:
        return verdict()
    return _VERDICTS.get((*site, content), verdict)


def _contents(doc: dict[str, Any]) -> dict[str, bytes]:
    """The content keys of the root's remembered fields."""
    return {name: content_key(doc[name]) for name in _BODIES if name in doc}


@memoized("api.validation.compiled", 64)
def _compiled_kind(kind: str) -> _CompiledKind:
    """The compiled schema of one of the six kinds (by name)."""
    info = KIND_BY_NAME[kind]
    schema = validator_schema(info.model)
    return _CompiledKind(
        _compile_root_defaults(schema),
        _RootShape(schema, kind),
        _RootRules(schema, kind),
    )


def _compile_root_defaults(
    schema: Schema,
) -> Callable[[dict[str, Any], dict[str, bytes], bool], None]:
    """_apply_defaults on a document; a spec or status without null only gets its defaults.

    ``contents`` are the bodies' content keys taken before defaulting: a body holds no null
    when the caller says none does (``null_free``) or when its key has no null mark (a
    string holding that byte only costs the full walk).
    """
    whole = _compile_defaults(schema)
    properties: dict[str, Schema] = schema.get("properties", {})
    if isinstance(schema.get("additionalProperties"), dict) or "items" in schema:
        return lambda doc, contents, null_free: whole(doc) if whole is not None else None
    names = frozenset(properties)
    defaults = [(name, sub["default"]) for name, sub in properties.items() if "default" in sub]
    full = {name: _compile_defaults(sub) for name, sub in properties.items()}
    lean = {
        name: _compile_defaults(properties[name], False) for name in _BODIES if name in properties
    }

    def apply(doc: dict[str, Any], contents: dict[str, bytes], null_free: bool) -> None:
        _prune_and_fill(doc, names, defaults)
        for name, item in doc.items():
            content = contents.get(name)
            if name in lean and content is not None and (null_free or _NULL_MARK not in content):
                child = lean[name]
            else:
                child = full.get(name)
            if child is not None:
                child(item)

    return apply


def _compile_defaults(schema: Schema, prune: bool = True) -> Defaults | None:
    """_apply_defaults as a closure; None where it would change nothing.

    With ``prune=False``, for values known to hold no null: only the missing defaults are
    added, so a subtree whose schema has no default is not visited at all.
    """
    properties: dict[str, Schema] = schema.get("properties", {})
    extra = schema.get("additionalProperties")
    items = schema.get("items")
    extra_fn = _compile_defaults(extra, prune) if isinstance(extra, dict) else None
    items_fn = _compile_defaults(items, prune) if isinstance(items, dict) else None
    names = frozenset(properties) if prune else frozenset()
    defaults = [(name, sub["default"]) for name, sub in properties.items() if "default" in sub]
    children = {
        name: fn
        for name, sub in properties.items()
        if (fn := _compile_defaults(sub, prune)) is not None
    }
    if not names and not defaults and not children and extra_fn is None and items_fn is None:
        return None

    filling = bool(names or defaults)
    few = len(children) <= 2
    only = list(children.items())

    def apply(value: Any) -> None:
        if type(value) is dict or isinstance(value, dict):
            if filling:
                _prune_and_fill(value, names, defaults)
            if few:
                # Most objects have one or two members whose subtree holds a default:
                # those are looked up, not every member (a child of None does nothing).
                for name, fn in only:
                    item = value.get(name)
                    if item is not None:
                        fn(item)
            elif children:
                for name, item in value.items():
                    child = children.get(name)
                    if child is not None:
                        child(item)
            if extra_fn is not None:
                for entry in value.values():
                    extra_fn(entry)
        elif isinstance(value, list) and items_fn is not None:
            for item in value:
                items_fn(item)

    return apply


def _prune_and_fill(
    value: dict[str, Any], names: frozenset[str], defaults: list[tuple[str, Any]]
) -> None:
    """The same end state as _apply_defaults' one pass per property: the null fields of
    ``names`` go, then the missing ``defaults`` are appended in schema order."""
    if names and None in value.values():
        for name in [n for n, item in value.items() if item is None and n in names]:
            del value[name]
    for name, default in defaults:
        if name not in value:
            value[name] = _fresh(default)


def _fresh(default: Any) -> Any:
    """A default to put into a document: a scalar as it is, a container copied."""
    return copy.deepcopy(default) if isinstance(default, dict | list) else default


def _metadata_clean(meta: Any, namespaced: bool) -> bool:
    """True exactly when _check_metadata would find nothing."""
    if type(meta) is not dict:
        return False
    name = meta.get("name")
    if type(name) is not str or not name or len(name) > 253:
        return False
    if not _matches(_DNS_SUBDOMAIN, name):
        return False
    if namespaced:
        namespace = meta.get("namespace")
        if type(namespace) is not str or len(namespace) > 63:
            return False
        if not _matches(DNS_LABEL, namespace):
            return False
    for field_name, check_values in (("labels", True), ("annotations", False)):
        entries = meta.get(field_name)
        if entries is None:
            continue
        if type(entries) is not dict:
            return False
        for key, value in entries.items():
            if type(key) is not str or type(value) is not str:
                return False
            if len(key) > _LONGEST_KEY or (check_values and len(value) > 63):
                return False  # invalid whatever it says; kept out of the memo
            if not _entry_clean(key, value if check_values else None):
                return False
    return True


_LONGEST_KEY = 253 + 1 + 63
"""A label key's longest form: a DNS subdomain prefix, a slash, a 63-character name."""


# Label and annotation entries repeat across a fleet (the same keys, the same cluster and
# deployment names). An entry is a key and a label value (at most 63 characters for a
# valid one; an annotation's value is not part of the key, only its key is checked).
@memoized("api.validation.metadata_entries", 16384)
def _entry_clean(key: str, label_value: str | None) -> bool:
    if not _valid_label_key(key):
        return False
    return label_value is None or (len(label_value) <= 63 and _matches(LABEL_VALUE, label_value))


def _list_map_identity(values: list[Any]) -> Any:
    """Equal exactly when _check_array's JSON identities are equal; strings as they are."""
    if all(type(v) is str for v in values):
        return tuple(values)  # one string's JSON text is a function of the string
    return json.dumps(values, sort_keys=True, default=str)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


# ---------------------------------------------------------------------------
# One compiled tree per schema. Each node reads its schema once and keeps two walks of the
# same facts: ``clean``/``holds``, a closure that answers "nothing to report" without a
# path or a message (remembered by content where values repeat), and ``locate``, which a
# refused document takes to name every problem, depth-first, with its path.


class _Path:
    """A location in a document as a linked node (the root is None), made text only for
    a problem: valid documents never pay for their paths."""

    __slots__ = ("parent", "name", "bracket")

    def __init__(self, parent: _Path | None, name: str, bracket: bool = False) -> None:
        self.parent = parent
        self.name = name
        self.bracket = bracket

    def text(self) -> str:
        """Kubernetes notation: ``a.b[0][key].c``."""
        nodes: list[_Path] = []
        node: _Path | None = self
        while node is not None:
            nodes.append(node)
            node = node.parent
        text = ""
        for node in reversed(nodes):
            if node.bracket:
                text = f"{text}[{node.name}]"
            else:
                text = f"{text}.{node.name}" if text else node.name
        return text


def _text(path: _Path | None) -> str:
    return "" if path is None else path.text()


@dataclass(frozen=True)
class _ScalarCheck:
    """One scalar constraint: whether a value meets it, and the message when it does not."""

    holds: Clean
    message: Callable[[Any], str]


def _scalar_checks(schema: Schema) -> list[_ScalarCheck]:
    """The schema's scalar constraints, in the order their problems are reported."""
    checks: list[_ScalarCheck] = []
    if "enum" in schema:
        allowed = schema["enum"]
        checks.append(
            _ScalarCheck(
                lambda value: value in allowed, lambda value: _enum_message(value, allowed)
            )
        )
    if "minimum" in schema:
        low = schema["minimum"]
        checks.append(
            _ScalarCheck(
                lambda value: not (_is_number(value) and value < low),
                lambda value: (
                    f"Invalid value: {_json(value)}: must be greater than or equal to {low}"
                ),
            )
        )
    if "maximum" in schema:
        high = schema["maximum"]
        checks.append(
            _ScalarCheck(
                lambda value: not (_is_number(value) and value > high),
                lambda value: (
                    f"Invalid value: {_json(value)}: must be less than or equal to {high}"
                ),
            )
        )
    if "minLength" in schema:
        shortest = schema["minLength"]
        checks.append(
            _ScalarCheck(
                lambda value: not isinstance(value, str) or len(value) >= shortest,
                lambda value: (
                    f"Invalid value: {_json(value)}: must be at least {shortest} characters"
                ),
            )
        )
    if "maxLength" in schema:
        longest = schema["maxLength"]
        checks.append(
            _ScalarCheck(
                lambda value: not isinstance(value, str) or len(value) <= longest,
                lambda _value: f"Too long: must have at most {longest} characters",
            )
        )
    if "pattern" in schema:
        pattern = schema["pattern"]
        checks.append(
            _ScalarCheck(
                lambda value: not isinstance(value, str) or _matches(pattern, value),
                lambda value: f"Invalid value: {_json(value)}: must match '{pattern}'",
            )
        )
    return checks


def _always(_value: Any) -> bool:
    return True


def _all_hold(checks: list[_ScalarCheck]) -> Clean:
    if not checks:
        return _always
    if len(checks) == 1:
        return checks[0].holds
    if len(checks) == 2:
        first, second = checks[0].holds, checks[1].holds
        return lambda value: first(value) and second(value)
    tests = [check.holds for check in checks]
    return lambda value: all(test(value) for test in tests)


_SCALAR_TYPES: dict[tuple[str, ...], type] = {
    ("string",): str,
    ("integer",): int,
    ("boolean",): bool,
}
"""The node types whose ``clean`` is one exact type test and the constraints."""


class _Shape:
    """The structural checks of one schema node and, below it, of its children.

    A schema without a type (``items: {}``) takes any value: its object and array parts
    are compiled on first use, since compiling them eagerly would never end.
    ``body`` (kind, field) marks a spec or status: the verdicts of its members that are
    arrays or objects are remembered by content (a cluster's status differs from the
    next one's by its address, while its pools are the same).
    """

    __slots__ = ("schema", "body", "expected", "scalar", "parts", "clean")

    def __init__(self, schema: Schema, body: tuple[str, str] | None = None) -> None:
        self.schema = schema
        self.body = body
        self.expected = _expected_types(schema)
        self.scalar = _scalar_checks(schema)
        self.parts: dict[str, _ObjectShape | _ArrayShape] = {}
        self.clean = self._compile_clean()

    def part(self, actual: str) -> _ObjectShape | _ArrayShape:
        """The object or array part, compiled on first use."""
        found = self.parts.get(actual)
        if found is None:
            found = (
                _ObjectShape(self.schema, self.body)
                if actual == "object"
                else _ArrayShape(self.schema)
            )
            self.parts[actual] = found
        return found

    def _compile_clean(self) -> Clean:
        """True exactly when ``locate`` would report nothing (for any JSON value)."""
        expected = frozenset(self.expected)
        on_scalar = _all_hold(self.scalar)
        parts = self.parts
        part = self.part
        if self.expected in (("object",), ("array",)):
            return self._compile_container_clean(self.expected[0])
        scalar_type = _SCALAR_TYPES.get(self.expected)
        if scalar_type is not None:
            # A typed scalar: one type test (type() is exact, as _TYPE_NAMES's lookup is:
            # a bool is no integer), then its constraints.
            if not self.scalar:
                return lambda value: type(value) is scalar_type
            return lambda value: type(value) is scalar_type and on_scalar(value)

        def clean(value: Any) -> bool:
            actual = _TYPE_NAMES.get(type(value))
            if actual is None:
                return False  # not a plain JSON value: the located walk decides
            if expected and actual not in expected:
                return False
            if actual == "object" or actual == "array":
                found = parts.get(actual)
                return (found if found is not None else part(actual)).clean(value)
            return on_scalar(value)

        return clean

    def _compile_container_clean(self, actual: str) -> Clean:
        """``clean`` of a node typed object or array: its part, compiled on first use."""
        container = dict if actual == "object" else list
        part = self.part
        found: Clean | None = None

        def clean(value: Any) -> bool:
            nonlocal found
            if type(value) is not container:
                return False
            if found is None:
                found = part(actual).clean
            return found(value)

        return clean

    def locate(
        self, value: Any, path: _Path | None, out: list[Problem], duplicate: str = ""
    ) -> None:
        """Every structural problem of ``value`` and its children, depth-first."""
        actual = _json_type(value)
        if self.expected and actual not in self.expected:
            out.append(Problem(_text(path), _type_message(value, self.expected)))
            return
        if duplicate:
            out.append(Problem(_text(path), f"Duplicate value: {duplicate}"))
        if actual == "object" or actual == "array":
            self.part(actual).locate(value, path, out)
            return
        for check in self.scalar:
            if not check.holds(value):
                out.append(Problem(_text(path), check.message(value)))


class _HitRate:
    """Whether a memo site is worth its keys: a key costs a marshal, a lookup and, on a
    miss, an insertion, about a quarter of walking a replica's engines. A site that hit
    fewer than one lookup in five over the last window is not keyed for the next values
    (a verdict is the same keyed or not), then measured again."""

    __slots__ = ("lookups", "hits", "paused")

    WINDOW = 256
    PAUSE = 2048

    def __init__(self) -> None:
        self.lookups = 0
        self.hits = 0
        self.paused = 0

    def keying(self) -> bool:
        """True when the next value is to be keyed (the counters are advisory: threads
        racing on them change how often a site is keyed, never a verdict)."""
        if self.paused:
            self.paused -= 1
            return False
        return True

    def count(self, hit: bool) -> None:
        self.lookups += 1
        self.hits += hit
        if self.lookups >= self.WINDOW:
            if self.hits * 5 < self.lookups:
                self.paused = self.PAUSE
            self.lookups = self.hits = 0


def _remembered(check: Clean, kind: str, site: str) -> Clean:
    """``check`` with its verdicts on arrays and objects remembered by content, while
    they are found again (``_HitRate``)."""
    rate = _HitRate()

    def clean(value: Any) -> bool:
        if (type(value) is dict or type(value) is list) and rate.keying():
            key = ("clean", kind, site, content_key(value))
            known = _VERDICTS.lookup(key)
            rate.count(isinstance(known, bool))
            if isinstance(known, bool):
                return known
            return _VERDICTS.put(key, check(value))
        return check(value)

    return clean


class _ObjectShape:
    """The checks of an object: its size, then its fields (or its entries, for a map)."""

    __slots__ = ("least", "most", "entries", "fields", "required", "preserve", "clean")

    def __init__(self, schema: Schema, body: tuple[str, str] | None) -> None:
        self.least: int | None = schema.get("minProperties")
        self.most: int | None = schema.get("maxProperties")
        self.preserve = bool(schema.get(PRESERVE_UNKNOWN))
        properties: dict[str, Schema] | None = schema.get("properties")
        extra = schema.get("additionalProperties")
        # A map (entries of one schema), free-form (None, None) or fields.
        self.entries = _Shape(extra) if properties is None and isinstance(extra, dict) else None
        self.fields: dict[str, _Shape] | None = None
        if self.entries is None and (properties is not None or not self.preserve):
            self.fields = {name: _Shape(sub) for name, sub in (properties or {}).items()}
        # Only a required field the schema also describes is reported missing.
        self.required = [name for name in schema.get("required", []) if name in (self.fields or {})]
        self.clean = self._compile_clean(body)

    def sized(self, value: dict[str, Any]) -> bool:
        """True when the object has an allowed number of members."""
        count = len(value)
        return (self.least is None or count >= self.least) and (
            self.most is None or count <= self.most
        )

    def _compile_clean(self, body: tuple[str, str] | None) -> Clean:
        sized = self.sized
        if self.entries is not None:
            entry = self.entries.clean
            return lambda value: sized(value) and all(entry(item) for item in value.values())
        if self.fields is None:
            return sized
        subs = {name: sub.clean for name, sub in self.fields.items()}
        if body is not None:
            kind, field_name = body
            subs = {
                name: _remembered(sub, kind, f"{field_name}.{name}") for name, sub in subs.items()
            }
        required = self.required
        preserve = self.preserve

        def clean(value: dict[str, Any]) -> bool:
            if not sized(value):
                return False
            for name in required:
                if name not in value:
                    return False
            for name, item in value.items():
                sub = subs.get(name)
                if sub is None:
                    if not preserve:
                        return False  # an unknown field
                elif not sub(item):
                    return False
            return True

        return clean

    def locate(self, value: dict[str, Any], path: _Path | None, out: list[Problem]) -> None:
        """The size problems, then each member's, then the unknown fields (sorted)."""
        count = len(value)
        if self.least is not None and count < self.least:
            message = f"Invalid value: {count}: must have at least {self.least} properties"
            out.append(Problem(_text(path), message))
        if self.most is not None and count > self.most:
            message = f"Too many: {count}: must have at most {self.most} entries"
            out.append(Problem(_text(path), message))
        if self.entries is not None:
            for key in sorted(value):
                self.entries.locate(value[key], _Path(path, key, bracket=True), out)
            return
        if self.fields is None:
            return  # free-form
        for name, sub in self.fields.items():
            if name in value:
                sub.locate(value[name], _Path(path, name), out)
            elif name in self.required:
                out.append(Problem(_text(_Path(path, name)), "Required value"))
        if not self.preserve:
            for name in sorted(set(value) - set(self.fields)):
                out.append(Problem(_text(_Path(path, name)), "unknown field"))


class _ArrayShape:
    """The checks of an array: its length, then each item (and, for a list-map, duplicates)."""

    __slots__ = ("least", "most", "items", "keys", "clean")

    def __init__(self, schema: Schema) -> None:
        self.least: int | None = schema.get("minItems")
        self.most: int | None = schema.get("maxItems")
        self.items = _Shape(schema.get("items", {}))
        self.keys = _list_map_keys(schema)
        self.clean = self._compile_clean()

    def _compile_clean(self) -> Clean:
        least, most, keys = self.least, self.most, self.keys
        item_clean = self.items.clean

        def clean(value: list[Any]) -> bool:
            count = len(value)
            if (least is not None and count < least) or (most is not None and count > most):
                return False
            seen: set[Any] = set()
            for item in value:
                if keys and isinstance(item, dict) and all(k in item for k in keys):
                    identity = _list_map_identity([item[k] for k in keys])
                    if identity in seen:
                        return False  # a duplicate entry
                    seen.add(identity)
                if not item_clean(item):
                    return False
            return True

        return clean

    def locate(self, value: list[Any], path: _Path | None, out: list[Problem]) -> None:
        """The length problems, then each item's, a duplicate entry named on the item."""
        count = len(value)
        if self.least is not None and count < self.least:
            message = f"Invalid value: {count}: must have at least {self.least} items"
            out.append(Problem(_text(path), message))
        if self.most is not None and count > self.most:
            out.append(
                Problem(_text(path), f"Too many: {count}: must have at most {self.most} items")
            )
        keys = self.keys
        seen: set[Any] = set()
        for index, item in enumerate(value):
            duplicate = ""
            if keys and isinstance(item, dict) and all(k in item for k in keys):
                identity = _list_map_identity([item[k] for k in keys])
                if identity in seen:
                    duplicate = _json({k: item[k] for k in keys})
                seen.add(identity)
            self.items.locate(item, _Path(path, str(index), bracket=True), out, duplicate)


class _RootShape:
    """The structural checks of a whole document: metadata, spec, status, unknown fields."""

    __slots__ = ("kind", "bodies", "needed")

    def __init__(self, schema: Schema, kind: str) -> None:
        properties: dict[str, Schema] = schema["properties"]
        required = set(schema.get("required", []))
        self.kind = kind
        self.bodies = {
            name: _Shape(properties[name], (kind, name)) for name in _BODIES if name in properties
        }
        self.needed = [name for name in _BODIES if name in required]

    def clean(self, doc: dict[str, Any], info: KindInfo, contents: dict[str, bytes]) -> bool:
        """True exactly when ``locate`` would report nothing; bodies remembered by content."""
        for name in doc:
            if name not in _KNOWN_ROOT:
                return False
        for name in self.needed:
            if name not in doc:
                return False
        for name, shape in self.bodies.items():
            if name in doc and not _body_verdict(
                ("clean", self.kind, name), contents.get(name), partial(shape.clean, doc[name])
            ):
                return False
        for name in _BODIES:
            if name in doc and name not in self.bodies:
                return False  # no schema to check it by
        return _metadata_clean(doc.get("metadata", {}), info.namespaced)

    def locate(self, doc: dict[str, Any], info: KindInfo) -> list[Problem]:
        """Every structural problem of the document, in the order of api.md's reporting."""
        out: list[Problem] = []
        _check_metadata(doc.get("metadata", {}), info, out)
        for name in _BODIES:
            if name in doc:
                self.bodies[name].locate(doc[name], _Path(None, name), out)
            elif name in self.needed:
                out.append(Problem(name, "Required value"))
        for name in sorted(set(doc) - _KNOWN_ROOT):
            out.append(Problem(name, "unknown field"))
        return out


_KNOWN_ROOT = frozenset(_ROOT_ORDER)


def _rule_entries(schema: Schema) -> list[tuple[str, str]]:
    """A node's rules as (text, message), without transition rules (no previous object)."""
    return [
        (entry["rule"], entry["message"])
        for entry in schema.get(VALIDATIONS_KEY, [])
        if not _is_transition_rule(entry["rule"])
    ]


class _Rules:
    """The CEL rules and DRA selector check of one schema node below the root, and of the
    nodes below it; built only where something is checked (see ``build``)."""

    __slots__ = (
        "entries",
        "projections",
        "selector",
        "fields",
        "entry_rules",
        "items",
        "reads",
        "project_all",
        "holds",
    )

    def __init__(
        self,
        entries: list[tuple[str, str]],
        selector: bool,
        fields: dict[str, _Rules] | None,
        entry_rules: _Rules | None,
        items: _Rules | None,
    ) -> None:
        self.entries = entries
        # Each rule's key alone, for the located walk (the same key as ``holds`` uses for
        # a node of one rule).
        self.projections = [projection(rule_reads([text])) for text, _ in entries]
        self.selector = selector
        self.fields = fields
        self.entry_rules = entry_rules
        self.items = items
        self.reads = self._subtree_reads()
        # What every rule and selector of this subtree reads of its value: the key of the
        # subtree's verdict as a whole (see _RootRules.holds).
        self.project_all = projection(self.reads)
        self.holds = self._compile_holds()

    def _subtree_reads(self) -> _Reads:
        """The reads of this node's rules joined with its children's, placed where the
        children are: values projecting alike get one verdict of the whole subtree."""
        reads = rule_reads([text for text, _ in self.entries])
        if reads is None:
            reads = _Reads()
            reads.whole = True
        if self.selector or self.entry_rules is not None:
            reads.whole = True  # a selector's whole text; a map's entries (keys and values)
        for name, sub in (self.fields or {}).items():
            _merge(reads.field(name), sub.reads)
        if self.items is not None:
            _merge(reads.item(), self.items.reads)
        return reads

    @staticmethod
    def build(schema: Schema) -> _Rules | None:
        """The node's rules; None where neither it nor a node below has a rule or selector."""
        entries = _rule_entries(schema)
        selector = bool(schema.get(DRA_SELECTOR_KEY))
        properties: dict[str, Schema] | None = schema.get("properties")
        extra = schema.get("additionalProperties")
        items = schema.get("items")
        fields: dict[str, _Rules] | None = None
        entry_rules: _Rules | None = None
        if properties is not None:
            fields = {
                name: found
                for name, sub in properties.items()
                if (found := _Rules.build(sub)) is not None
            }
        elif isinstance(extra, dict):
            entry_rules = _Rules.build(extra)
        item_rules = _Rules.build(items) if isinstance(items, dict) else None
        if not (entries or selector or fields or entry_rules or item_rules):
            return None
        return _Rules(entries, selector, fields or None, entry_rules, item_rules)

    def _compile_holds(self) -> Clean:
        """True exactly when ``locate`` would report nothing."""
        texts = [text for text, _ in self.entries]
        # All of a node's rules as one entry: "each of these holds" (for one rule, the
        # same entry the located walk keeps), keyed by what any of them reads.
        together = "\n".join(texts)
        project = projection(rule_reads(texts))
        each_rule = list(zip(texts, self.projections, strict=True))
        selector = self.selector
        fields = {name: sub.holds for name, sub in (self.fields or {}).items()}
        entry_fn = self.entry_rules.holds if self.entry_rules is not None else None
        items_fn = self.items.holds if self.items is not None else None

        def all_hold(value: Any) -> bool:
            return all(_evaluate(text, seen(value)) for text, seen in each_rule)

        def holds(value: Any) -> bool:
            # Replicas of one deployment differ by their cluster, their pool, their
            # arguments, not by what their rules read: the verdict is remembered by what
            # the rules see (a container's name, not its arguments).
            if texts and not _RULE_VERDICTS.get(
                (together, content_key(project(value))), lambda: all_hold(value)
            ):
                return False
            if selector and isinstance(value, str) and check_selector(value) is not None:
                return False
            if isinstance(value, dict):
                for name, child in fields.items():
                    if name in value and not child(value[name]):
                        return False
                if entry_fn is not None:
                    for item in value.values():
                        if not entry_fn(item):
                            return False
            elif isinstance(value, list) and items_fn is not None:
                for item in value:
                    if not items_fn(item):
                        return False
            return True

        return holds

    def locate(self, value: Any, path: _Path, out: list[Problem]) -> None:
        """Every failed rule and bad selector of ``value`` and below, depth-first."""
        for (text, message), project in zip(self.entries, self.projections, strict=True):
            if not _rule_holds(text, project(value)):
                out.append(Problem(path.text(), message))
        if self.selector and isinstance(value, str):
            detail = check_selector(value)
            if detail is not None:
                out.append(Problem(path.text(), SELECTOR_PREFIX + detail))
        if isinstance(value, dict):
            if self.fields is not None:
                for name, sub in self.fields.items():
                    if name in value:
                        sub.locate(value[name], _Path(path, name), out)
            elif self.entry_rules is not None:
                for key in sorted(value):
                    self.entry_rules.locate(value[key], _Path(path, key, bracket=True), out)
        elif isinstance(value, list) and self.items is not None:
            for index, item in enumerate(value):
                self.items.locate(item, _Path(path, str(index), bracket=True), out)


class _RootRules:
    """The rules of a whole document: its own (which see all of it), then each field's."""

    __slots__ = ("kind", "entries", "projections", "fields")

    def __init__(self, schema: Schema, kind: str) -> None:
        self.kind = kind
        self.entries = _rule_entries(schema)
        self.projections = [projection(rule_reads([text])) for text, _ in self.entries]
        properties: dict[str, Schema] = schema.get("properties", {})
        self.fields = {
            name: found
            for name, sub in properties.items()
            if (found := _Rules.build(sub)) is not None
        }

    def holds(self, doc: dict[str, Any], contents: dict[str, bytes]) -> bool:
        """True exactly when ``locate`` would report nothing; a spec's or status's verdict
        remembered by its content as written and by what its rules and selectors read."""
        # A root rule reads the name's length (MD-01, IC-10): remembered by that.
        for (text, _), project in zip(self.entries, self.projections, strict=True):
            if not _rule_holds(text, project(doc)):
                return False
        for name, sub in self.fields.items():
            if name not in doc:
                continue
            if name in _BODIES:
                verdict = self._body_holds(name, sub, doc[name], contents.get(name))
            else:
                verdict = sub.holds(doc[name])
            if not verdict:
                return False
        return True

    def _body_holds(self, name: str, sub: _Rules, body: Any, content: bytes | None) -> bool:
        """A spec's or status's rules verdict: by its content as written (the key the
        document brought, a repeated spec's), else by what its rules read (replicas whose
        specs all differ, each its own arguments, still read alike: one lookup instead of
        one per rule node), else walked; remembered under both."""
        written = None if content is None else ("rules", self.kind, name, content)
        if written is not None:
            known = _VERDICTS.lookup(written)
            if isinstance(known, bool):
                return known
        verdict = _VERDICTS.get(
            ("rules", self.kind, name, b"p" + content_key(sub.project_all(body))),
            partial(sub.holds, body),
        )
        if written is not None:
            _VERDICTS.put(written, verdict)
        return verdict

    def locate(self, doc: dict[str, Any]) -> list[Problem]:
        """Every failed rule and bad selector of the document, depth-first."""
        out: list[Problem] = []
        for (text, message), project in zip(self.entries, self.projections, strict=True):
            if not _rule_holds(text, project(doc)):
                # A rule at the root checks the name (MD-01, IC-10), so it is reported there.
                out.append(Problem("metadata.name", message))
        for name, sub in self.fields.items():
            if name in doc:
                sub.locate(doc[name], _Path(None, name), out)
        return out
