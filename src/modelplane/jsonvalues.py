"""Only JSON values, as the API server accepts them (docs/api.md, "Input limits and JSON-only
values").

The API server reads a manifest as JSON (sigs.k8s.io/yaml converts YAML to JSON first,
and strict decoding refuses duplicate fields), so a document may hold only null,
booleans, int64 integers, finite numbers, strings, arrays and objects with string keys.
Here a YAML node graph (from libyaml's composer) or a parsed JSON value becomes such a
value, and everything else is a located problem naming the field: a non-JSON tag
(``!!set``, ``!!binary``, ``!!timestamp``, ``!!python/...``, any local tag), NaN or an
infinity, an integer outside int64, a duplicate key, a non-string key. Limits on how
much work a document may cause (aliases, depth) are enforced on the way.
"""

from __future__ import annotations

import json
import math
from typing import Any

import yaml

from modelplane.errors import ModelplaneError
from modelplane.fieldpath import Keys

MAX_DEPTH = 100
"""How deeply arrays and objects may nest in one document."""
ALIAS_SLACK = 10_000
"""Values a YAML file may construct beyond one per input byte (see JsonValues)."""
INT64 = (-(2**63), 2**63 - 1)

_TAG = "tag:yaml.org,2002:"
_SCALAR_TAGS = {_TAG + t for t in ("str", "int", "float", "bool", "null")}
_MERGE = _TAG + "merge"
_STR = _TAG + "str"


class TooLarge(ModelplaneError):
    """A document whose aliases expand past the budget, or that nests past MAX_DEPTH."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.line = line


Where = tuple["Where", str | int] | None
"""A field's location built lazily (parent, key): its keys are listed only when a problem
names it, and its path written only then, with the kind's schema (modelplane.fieldpath)."""


def where_keys(where: Where) -> Keys:
    """The keys from the document's root to a lazily built location."""
    keys: list[str | int] = []
    while where is not None:
        where, key = where
        keys.append(key)
    return tuple(reversed(keys))


def _short_tag(tag: str) -> str:
    return "!!" + tag[len(_TAG) :] if tag.startswith(_TAG) else tag


class JsonValues:
    """Constructs JSON values from YAML nodes, counting every value against one budget.

    The budget is per file: one value per input byte plus ALIAS_SLACK. Without aliases a
    file cannot come near it; with them, expansion stops as soon as it is spent.
    """

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.problems: list[tuple[Where, str]] = []

    def document(self, loader: Any, node: yaml.Node) -> tuple[Any, list[tuple[Keys, str]]]:
        """The document's value (bad values as None) and its (keys, message) problems."""
        self.problems = []
        value = self._value(loader, node, None, 0)
        return value, [(where_keys(where), message) for where, message in self.problems]

    def _spend(self, node: yaml.Node) -> None:
        self.budget -= 1
        if self.budget < 0:
            raise TooLarge(
                f"document aliases expand past the limit (one value per input byte plus {ALIAS_SLACK:,})",
                node.start_mark.line + 1,
            )

    def _value(self, loader: Any, node: yaml.Node, path: Where, depth: int) -> Any:
        self._spend(node)
        if isinstance(node, yaml.ScalarNode):
            if node.tag == _STR:
                return node.value  # most values: no constructor, nothing to check
            return self._scalar(loader, node, path)
        if depth >= MAX_DEPTH:
            raise TooLarge(
                f"document nests deeper than {MAX_DEPTH} levels", node.start_mark.line + 1
            )
        if isinstance(node, yaml.SequenceNode) and node.tag == _TAG + "seq":
            return [
                self._value(loader, item, (path, i), depth + 1) for i, item in enumerate(node.value)
            ]
        if isinstance(node, yaml.MappingNode) and node.tag == _TAG + "map":
            return self._mapping(loader, node, path, depth)
        self._refuse_tag(path, node.tag)
        return None

    def _refuse_tag(self, path: Where, tag: str) -> None:
        self.problems.append(
            (
                path,
                f"Invalid value: {_short_tag(tag)}: not a JSON value (null, boolean, "
                "number, string, array or object)",
            )
        )

    def _scalar(self, loader: Any, node: yaml.ScalarNode, path: Where) -> Any:
        if node.tag not in _SCALAR_TAGS:
            self._refuse_tag(path, node.tag)
            return None
        try:
            # The SafeLoader's own scalar constructors (YAML 1.1 ints, floats, booleans).
            value = loader.yaml_constructors[node.tag](loader, node)
        except (yaml.YAMLError, ValueError, KeyError, TypeError, OverflowError):
            # `!!int abc`, `!!bool maybe`, or more digits than Python converts (sys.get_int_max_str_digits).
            shown = node.value if len(node.value) <= 40 else node.value[:40] + "..."
            digits = node.value.lstrip("+-").replace("_", "")
            reason = (
                "an integer must be within int64"
                if node.tag == _TAG + "int" and digits.isdigit()
                else f"not a valid {_short_tag(node.tag)}"
            )
            self.problems.append((path, f"Invalid value: {shown}: {reason}"))
            return None
        return self._checked(value, path, node.value)

    def _checked(self, value: Any, path: Where, text: str) -> Any:
        problem = number_problem(value, text)
        if problem is None:
            return value
        self.problems.append((path, problem))
        return None

    def _mapping(self, loader: Any, node: yaml.MappingNode, path: Where, depth: int) -> Any:
        own: dict[str, Any] = {}
        key_nodes: dict[str, yaml.Node] = {}
        merged: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE:
                self._merge(loader, value_node, path, depth, merged)
                continue
            key = self._key(loader, key_node, path)
            if key is None:
                continue
            if key in own:
                self.problems.append(
                    (
                        (path, key),
                        f"Duplicate value: {json.dumps(key)}: "
                        f"the key is already set on line {key_nodes[key].start_mark.line + 1}",
                    )
                )
                self._value(loader, value_node, (path, key), depth + 1)
                continue
            key_nodes[key] = key_node
            own[key] = self._value(loader, value_node, (path, key), depth + 1)
        if not merged:
            return own
        # YAML merge keys (as sigs.k8s.io/yaml reads them): the mapping's own keys win.
        return {**merged, **own}

    def _merge(
        self, loader: Any, node: yaml.Node, path: Where, depth: int, merged: dict[str, Any]
    ) -> None:
        sources = node.value if isinstance(node, yaml.SequenceNode) else [node]
        for source in sources:
            value = self._value(loader, source, path, depth)
            if not isinstance(value, dict):
                self.problems.append((path, "Invalid value: a merge key (<<) takes objects only"))
                continue
            for key, item in value.items():
                merged.setdefault(key, item)  # the earlier of several merged objects wins

    def _key(self, loader: Any, node: yaml.Node, path: Where) -> str | None:
        self._spend(node)
        if isinstance(node, yaml.ScalarNode) and node.tag == _TAG + "str":
            return str(node.value)
        shown = node.value if isinstance(node, yaml.ScalarNode) else _short_tag(node.tag)
        self.problems.append(
            ((path, str(shown)), f"Invalid value: key {shown}: an object key must be a string")
        )
        return None


def number_problem(value: Any, text: str) -> str | None:
    """Why a scalar is not a JSON value (NaN, an infinity, outside int64), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and not INT64[0] <= value <= INT64[1]:
        return f"Invalid value: {text}: an integer must be within int64"
    if isinstance(value, float) and not math.isfinite(value):
        return f"Invalid value: {text}: a number must be finite (no NaN or infinity)"
    return None


def _json_text(value: int | float) -> str:
    """A number as JSON writes it; NaN and the infinities as JavaScript does."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return json.dumps(value)


class _Duplicates(dict[str, Any]):
    """A JSON object that had duplicate keys: the repeated keys, first value kept."""

    repeated: list[str]


def json_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` for json.loads: an object, marking any repeated key."""
    result = dict(pairs)
    if len(result) == len(pairs):
        return result
    marked = _Duplicates()
    marked.repeated = []
    for key, value in pairs:
        if key in marked:
            marked.repeated.append(key)
        else:
            marked[key] = value
    return marked


def nests_past(value: Any, bound: int) -> bool:
    """True when ``value`` has an array or object ``bound`` or more levels below it (itself
    at 0), as json_problems refuses one at depth MAX_DEPTH: measured level by level, so a
    wide value (an InferenceCluster's status may list hundreds) costs one pass."""
    level = [value] if type(value) is dict or type(value) is list else []
    for _ in range(bound):
        if not level:
            return False
        below: list[Any] = []
        for node in level:
            below.extend(
                child
                for child in (node.values() if type(node) is dict else node)
                if type(child) is dict or type(child) is list
            )
        level = below
    return bool(level)


def json_problems(value: Any, depth: int = 0) -> list[tuple[Keys, str]]:
    """The (keys, message) problems of a parsed JSON value (the YAML rules, for JSON)."""
    out: list[tuple[Where, str]] = []
    _json_walk(value, None, depth, out)
    return [(where_keys(where), message) for where, message in out]


def _json_walk(value: Any, where: Where, depth: int, out: list[tuple[Where, str]]) -> None:
    if isinstance(value, dict):
        if depth >= MAX_DEPTH:
            raise TooLarge(f"document nests deeper than {MAX_DEPTH} levels", 1)
        for key in getattr(value, "repeated", ()):
            out.append(
                ((where, key), f"Duplicate value: {json.dumps(key)}: the key is set more than once")
            )
        for key, item in value.items():
            if _lone_surrogate(key):
                out.append(((where, key), f"Invalid value: {json.dumps(key)}: {_NOT_TEXT}"))
            _json_walk(item, (where, key), depth + 1, out)
    elif isinstance(value, list):
        if depth >= MAX_DEPTH:
            raise TooLarge(f"document nests deeper than {MAX_DEPTH} levels", 1)
        for index, item in enumerate(value):
            _json_walk(item, (where, index), depth + 1, out)
    elif isinstance(value, str):
        if _lone_surrogate(value):
            out.append((where, f"Invalid value: {json.dumps(value)}: {_NOT_TEXT}"))
    elif isinstance(value, (int, float)):
        problem = number_problem(value, _json_text(value))
        if problem is not None:
            out.append((where, problem))


# JSON may escape half of a UTF-16 pair alone (``"\\ud800"``); json.loads keeps it as a
# lone surrogate, which is no Unicode character: no UTF-8 output can carry it.
_NOT_TEXT = "a lone UTF-16 surrogate escape is not a Unicode character"


def _lone_surrogate(text: str) -> bool:
    """True when ``text`` holds a surrogate code point (only a JSON escape can put one there)."""
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
