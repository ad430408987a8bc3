"""render's writers: indented JSON and YAML streams, byte for byte the standard ones, faster.

JSON: ``json.dumps(value, indent=2, ensure_ascii=False)``.

The standard library writes indented JSON in Python (its C encoder has no indentation),
about 0.85 s for the 28 MB that ``render -o json`` prints for a fleet of 1,000 clusters.
orjson writes the same layout in C (two spaces a level, ``", "`` never, ``": "`` between a
key and its value, ``{}`` and ``[]`` for empty containers) in about 0.04 s, but its tokens
are not always the standard library's: floats (``0.00001`` against ``1e-05``,
``2.5e-7`` against ``2.5e-07``, ``1e+16`` against ``1e16``), NaN and the infinities
(``null`` against ``NaN``); and it takes values the standard library writes otherwise or
refuses (integers past 64 bits, keys that are not strings, lone surrogates, nesting past
255 levels, subclasses of dict, list, str and int, dataclasses, dates). So orjson writes
only a container whose compact text it writes with the subclasses, dataclasses and dates
passed through (refused), and in which no float can stand: no ``null`` and no number
token holding ``.``, ``e`` or ``E`` right after a ``:``, ``,`` or ``[``, where orjson
writes every float (its floats always hold one of them). What is left in such a value is
exact dicts, lists and tuples of exact strings (each character escaped alike:
``tests/cli/test_emit.py`` checks them all), integers of at most 64 bits, booleans,
and nothing else render composes (its values are the loaders' and ``to_wire``'s JSON
data; an Enum or UUID, which orjson writes and the standard library refuses, is never
among them). Where a string holds such text (``"a:1.5"``) or a value holds None,
orjson's text is taken only when its compact text equals the standard library's compact
text byte for byte (the standard library's compact writer is C: about 0.19 s for the
fleet's value); anything else is written by the standard library, as before.
``tests/cli/test_emit.py`` compares the two on hypothesis values and on the cases that
differ.

YAML: ``yaml.safe_dump_all(objects, **YAML_OPTIONS)`` (render's options). PyYAML's emitter
is Python, about 19 s for the YAML of a fleet of 1,000 clusters, and libyaml's is not
byte-identical to it. ``yaml_documents`` writes each document itself when the document
holds only what it can write as PyYAML would: block mappings with string keys, block
sequences (indentless as a mapping's value, as PyYAML writes them), ``{}`` and ``[]``,
and scalars written plain or single-quoted on one line. Each scalar's style is decided by
PyYAML's own resolver and scalar analysis (an implicit scalar that would resolve to
another type is quoted, a non-string that would need a tag is not taken), so the choice
is PyYAML's; a one-line scalar that passes the width of 100 is folded at its
spaces as PyYAML folds it, and a container met twice in a document is written with
PyYAML's anchor (``&id001``) and aliases (``*id001``). What this writer leaves to PyYAML is what it would have to
reproduce: a scalar on more than one line or double-quoted, a key too long to be a
simple key or empty, a document that holds itself, a type other than dict, list,
tuple, str, int, float, bool and None. At the first such thing the whole document is
written by ``yaml.safe_dump_all`` instead, as before (with the documents next to it that
also take that path, and as the stream's middle where another document follows: PyYAML
writes ``...`` after a plain scalar at a document's root only at the stream's end). A
document the fast writer takes starts ``---`` on a line of its own and ends with a line
break, so the stream is the documents' texts in order. ``tests/cli/test_emit.py`` compares the two on
hypothesis documents full of the strings PyYAML treats apart.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterable
from typing import Any

import yaml
import yaml.emitter
import yaml.resolver

from modelplane.errors import ModelplaneError

try:  # pragma: no cover - the import either works or it does not
    import orjson
except ImportError:  # pragma: no cover
    orjson = None  # type: ignore[assignment]


def _standard(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def indented_json(value: Any) -> str:
    """``json.dumps(value, indent=2, ensure_ascii=False)``, the same text."""
    fast = _fast(value)
    return _standard(value) if fast is None else fast


def array_pieces(texts: Iterable[str]) -> list[str]:
    """The indented text of one array, in pieces, from the indented texts of its parts in
    order (each ``indented_json`` of a list): the items, two spaces in, one a line, joined
    by ``,``."""
    items = [text[2:-2] for text in texts if text != "[]"]
    if not items:
        return ["[]"]
    pieces = ["[\n"]
    for item in items:
        pieces.extend((item, ",\n"))
    pieces[-1] = "\n]"
    return pieces


def _fast(value: Any) -> str | None:
    """orjson's indented text where it is the standard library's, else None."""
    if orjson is None:
        return None
    try:
        compact = orjson.dumps(value, option=_STRICT)
        indented = orjson.dumps(value, option=_STRICT | orjson.OPT_INDENT_2)
    except (TypeError, orjson.JSONEncodeError):
        return None
    if type(value) in (dict, list, tuple) and _no_float(compact):
        return indented.decode("utf-8")
    try:
        standard = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError):  # pragma: no cover - the indented writer raises the same
        return None
    # The standard text may hold a lone surrogate, which has no UTF-8 form: never equal then.
    if compact != standard.encode("utf-8", "surrogatepass"):
        return None
    return indented.decode("utf-8")


# orjson refuses what the standard library writes otherwise or refuses: subclasses of
# dict, list, str and int (an overridden items(), say), dataclasses and dates.
_STRICT = (
    (
        orjson.OPT_PASSTHROUGH_SUBCLASS
        | orjson.OPT_PASSTHROUGH_DATACLASS
        | orjson.OPT_PASSTHROUGH_DATETIME
    )
    if orjson is not None
    else 0
)
# A float in orjson's compact text: a number token with a fraction or an exponent after
# a key or in an array (each searched for apart: a literal first byte is found fastest).
_FLOATS = tuple(re.compile(start + rb"-?[0-9]+[.eE]") for start in (rb":", rb",", rb"\["))


def _no_float(compact: bytes) -> bool:
    """No float can stand in the value orjson wrote as ``compact``: no NaN or infinity
    (written ``null``, as None is) and no number with a fraction or an exponent."""
    return b"null" not in compact and not any(p.search(compact) for p in _FLOATS)


# render's YAML options (cli/render.py), the ones the fast writer reproduces.
YAML_OPTIONS: dict[str, Any] = {
    "sort_keys": False,
    "explicit_start": True,
    "allow_unicode": True,
    "width": 100,
}
_WIDTH = 100  # PyYAML's best_width for width=100 (above twice the indent of 2)
_INDENT = 2
# A simple key's length with its tag ("!!str", 5) must stay under PyYAML's 128; keys
# longer than this are left to PyYAML, which writes them in the explicit "? " form.
_LONGEST_KEY = 100
_STR = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_BOOL = "tag:yaml.org,2002:bool"
_NULL = "tag:yaml.org,2002:null"

_ANALYSER = yaml.emitter.Emitter(io.StringIO(), allow_unicode=True)
_RESOLVER = yaml.resolver.Resolver()


class _Slow(ModelplaneError):
    """The document holds something only PyYAML writes."""


def _standard_yaml(objects: list[Any]) -> str:
    text: str = yaml.safe_dump_all(objects, **YAML_OPTIONS)
    return text


def yaml_documents(objects: Iterable[Any], followed: bool = False) -> str:
    """``yaml.safe_dump_all(objects, **YAML_OPTIONS)``, the same text; ``followed``: the
    stream's part before more documents, so that the parts' texts joined are the whole
    stream's."""
    return _documents(objects, followed, _Tokens())


def yaml_parts(parts: Iterable[Iterable[Any]]) -> list[str]:
    """The text of each of several parts of one stream, each as followed by more documents
    (``yaml_documents(part, followed=True)``), the scalars' tokens learnt once for all of
    them (a part a cluster's objects: a fleet's clusters repeat their strings)."""
    tokens = _Tokens()
    return [_documents(part, True, tokens) for part in parts]


def _documents(objects: Iterable[Any], followed: bool, tokens: _Tokens) -> str:
    parts = []
    slow: list[Any] = []
    for document in objects:
        fast = _yaml_document(document, tokens)
        if fast is None:
            slow.append(document)
            continue
        if slow:
            parts.append(_within(slow))
            slow = []
        parts.append(fast)
    if slow:
        parts.append(_within(slow) if followed else _standard_yaml(slow))
    return "".join(parts)


# A document after which PyYAML's text is known: it starts with "---", so it also ends
# what a plain scalar at the root leaves open (PyYAML writes "..." after that one only
# at the stream's end).
_NEXT = {"next": 1}
_NEXT_TEXT = "---\nnext: 1\n"


def _within(documents: list[Any]) -> str:
    """The documents' text in the middle of a stream: followed by another document."""
    text = _standard_yaml([*documents, _NEXT])
    if not text.endswith(_NEXT_TEXT):  # pragma: no cover - PyYAML writes the mapping so
        raise AssertionError(text)
    return text[: -len(_NEXT_TEXT)]


def _token(tag: str, text: str) -> str | None:
    """The scalar as PyYAML writes it in block context on one line, or None.

    PyYAML's choice (Emitter.choose_scalar_style): plain when the text resolves to its own
    tag and its analysis allows a plain block scalar, else single-quoted for a string
    whose analysis allows it; a tagged scalar, double quotes or several lines: None.
    """
    if _SIMPLE.fullmatch(text) is not None:
        # Emitter.analyze_scalar's answer for such text, without its walk (most of a
        # fleet's distinct strings): one line, no indicator (a letter first, none of
        # ":#,?[]{}" or spaces after), printable ASCII, so plain and single quotes allowed.
        if _RESOLVER.resolve(yaml.ScalarNode, text, (True, False)) == tag:  # type: ignore[no-untyped-call]
            return text
        return "'" + text + "'" if tag == _STR else None
    return _analysed(tag, text)


def _analysed(tag: str, text: str) -> str | None:
    """``_token`` by PyYAML's scalar analysis, whatever the text."""
    analysis = _ANALYSER.analyze_scalar(text)
    if analysis.multiline:
        return None
    if (
        analysis.allow_block_plain
        and _RESOLVER.resolve(yaml.ScalarNode, text, (True, False)) == tag  # type: ignore[no-untyped-call]
    ):
        return text
    if tag == _STR and analysis.allow_single_quoted:
        return "'" + text.replace("'", "''") + "'"
    return None


# Text PyYAML's analysis allows plain and single-quoted on one line: a letter, then
# letters, digits and "_./-" (indicators only at the start or before a space).
_SIMPLE = re.compile(r"[A-Za-z][A-Za-z0-9_./-]*")

_CONSTANTS = {
    True: _token(_BOOL, "true"),
    False: _token(_BOOL, "false"),
    None: _token(_NULL, "null"),
}


def _float_text(value: float) -> str:
    """SafeRepresenter.represent_float's text."""
    if value != value:
        return ".nan"
    if value == float("inf"):
        return ".inf"
    if value == -float("inf"):
        return "-.inf"
    text = repr(value).lower()
    if "." not in text and "e" in text:
        text = text.replace("e", ".0e", 1)
    return text


class _Tokens:
    """The tokens of the scalars one stream has met (fleets repeat their strings)."""

    __slots__ = ("keys", "numbers", "strings")

    def __init__(self) -> None:
        self.strings: dict[str, str | None] = {}
        self.numbers: dict[str, str | None] = {}
        self.keys: dict[str, str] = {}  # a mapping key's token, where it can be a simple key

    def key(self, key: Any) -> str:
        """A mapping key's token, or _Slow."""
        if type(key) is not str or not key or len(key) > _LONGEST_KEY:
            raise _Slow
        token = self.string(key)
        if token is None:
            raise _Slow
        self.keys[key] = token
        return token

    def string(self, text: str) -> str | None:
        try:
            return self.strings[text]
        except KeyError:
            token = self.strings[text] = _token(_STR, text)
            return token

    def scalar(self, value: Any) -> str:
        """The scalar's token, or _Slow."""
        kind = type(value)
        token: str | None
        if kind is str:
            token = self.string(value)
        elif kind is int:
            text = "i" + str(value)
            token = self.numbers.get(text, "")
            if token == "":
                token = self.numbers[text] = _token(_INT, text[1:])
        elif kind is float:
            text = "f" + _float_text(value)
            token = self.numbers.get(text, "")
            if token == "":
                token = self.numbers[text] = _token(_FLOAT, text[1:])
        elif kind is bool or value is None:
            token = _CONSTANTS[value]
        else:
            raise _Slow
        if token is None:
            raise _Slow
        return token


def _yaml_document(document: Any, tokens: _Tokens | None = None) -> str | None:
    """The document's text as ``yaml.safe_dump_all([document], **YAML_OPTIONS)``, or None."""
    if type(document) is not dict or not document:
        return None
    tokens = _Tokens() if tokens is None else tokens
    try:
        try:
            return _written(document, None, tokens)
        except _Shared:
            return _written(document, _anchor_names(document), tokens)
    except (_Slow, RecursionError):
        return None


class _Shared(_Slow):
    """A container met twice: written again with PyYAML's anchors."""


def _written(document: dict[Any, Any], anchors: dict[int, str] | None, tokens: _Tokens) -> str:
    writer = _Writer(["---"], set(), anchors, tokens)
    if anchors is not None and id(document) in anchors:
        raise _Slow  # the root inside itself: PyYAML anchors the document's root
    writer.seen.add(id(document))
    _mapping(document, 0, False, writer)
    writer.out.append("\n")
    return "".join(writer.out)


class _Writer:
    """One document's text so far, the containers met and their anchors (None: none yet)."""

    __slots__ = ("anchors", "out", "seen", "tokens")

    def __init__(
        self, out: list[str], seen: set[int], anchors: dict[int, str] | None, tokens: _Tokens
    ) -> None:
        self.out = out
        self.seen = seen
        self.anchors = anchors
        self.tokens = tokens


def _anchor_names(document: Any) -> dict[int, str]:
    """PyYAML's anchors (Serializer.anchor_node): a container's name is given when it is
    met the second time in a walk that does not enter a container met before; names run
    ``id001``, ``id002``, ... in the order given. The empty tuple is never one."""
    names: dict[int, str] = {}
    met: set[int] = set()

    def walk(value: Any) -> None:
        kind = type(value)
        if kind is dict:
            items = value.values()
        elif kind is list or (kind is tuple and value):
            items = value
        else:
            return
        key = id(value)
        if key in met:
            if key not in names:
                names[key] = f"id{len(names) + 1:03d}"
            return
        met.add(key)
        for item in items:
            walk(item)

    walk(document)
    return names


def _anchor(value: Any, writer: _Writer) -> str:
    """ "" for a container without an anchor, "&name" where it is first written, "*name"
    where it is met again; without anchors yet, _Shared for a container met twice."""
    key = id(value)
    if writer.anchors is None:
        if key in writer.seen:
            raise _Shared
        writer.seen.add(key)
        return ""
    name = writer.anchors.get(key)
    if name is None:
        return ""
    if key in writer.seen:
        return "*" + name
    writer.seen.add(key)
    return "&" + name


def _mapping(value: dict[Any, Any], indent: int, inline: bool, writer: _Writer) -> None:
    """A non-empty block mapping at indent; inline: its first key follows a "- " already written."""
    out = writer.out
    tokens = writer.tokens
    keys = tokens.keys
    strings = tokens.strings
    line = "\n" + " " * indent
    for key, item in value.items():
        token = keys.get(key)
        if token is None or type(key) is not str:  # a str subclass may equal a key met
            token = tokens.key(key)
        if inline:
            inline = False
            out.append(token)
        else:
            out.append(line + token)
        # A string value, the most common, written here (as _node writes it).
        if type(item) is str:
            text = strings.get(item, "")  # "" for unseen: no token is empty
            if text == "":
                text = tokens.string(item)
            if text is None:
                raise _Slow
            column = indent + len(token) + 2
            if column + len(text) > _WIDTH and " " in text:
                out.append(": " + _folded(text, column, indent + _INDENT))
            else:
                out.append(": " + text)
        elif type(item) is dict and writer.anchors is None:
            # A mapping under a key, no anchors yet (as _node and _anchor write it).
            seen = writer.seen
            if id(item) in seen:
                raise _Shared
            seen.add(id(item))
            if item:
                out.append(":")
                _mapping(item, indent + _INDENT, False, writer)
            else:
                out.append(": {}")
        else:
            out.append(":")
            _node(item, indent, indent + len(token) + 1, True, writer)


def _sequence(
    value: list[Any] | tuple[Any, ...], indent: int, inline: bool, writer: _Writer
) -> None:
    """A non-empty block sequence whose dashes stand at indent."""
    out = writer.out
    line = "\n" + " " * indent
    for item in value:
        if inline:
            inline = False
            out.append("-")
        else:
            out.append(line)
            out.append("-")
        _node(item, indent, indent + 1, False, writer)


def _node(value: Any, indent: int, column: int, in_mapping: bool, writer: _Writer) -> None:
    """A mapping's value (in_mapping) or a sequence's item, after its ":" or "-" at column."""
    out = writer.out
    kind = type(value)
    if kind is dict or kind is list or kind is tuple:
        anchor = "" if kind is tuple and not value else _anchor(value, writer)
        if anchor:
            out.append(" " + anchor)
            if anchor[0] == "*":
                return
        if not value:
            out.append(" {}" if kind is dict else " []")
        elif kind is dict:
            if in_mapping or anchor:  # on the next line
                _mapping(value, indent + _INDENT, False, writer)
            else:
                out.append(" ")
                _mapping(value, indent + _INDENT, True, writer)
        elif in_mapping:
            _sequence(value, indent, False, writer)  # indentless, as PyYAML writes it
        elif anchor:
            _sequence(value, indent + _INDENT, False, writer)
        else:
            out.append(" ")
            _sequence(value, indent + _INDENT, True, writer)
    else:
        token = writer.tokens.scalar(value)
        out.append(" ")
        if column + 1 + len(token) > _WIDTH and " " in token:
            out.append(_folded(token, column + 1, indent + _INDENT))
        else:
            out.append(token)


def _folded(token: str, column: int, indent: int) -> str:
    """A one-line scalar token starting at column, folded as PyYAML folds it.

    Emitter.write_plain and write_single_quoted: a run of exactly one space after which
    the line has passed the width becomes a line break and the scalar's indent (inside
    single quotes, not a run at either end of the text); every other run is written as
    it is.
    """
    quoted = token[0] == "'"
    inner = token[1:-1] if quoted else token
    line = "\n" + " " * indent
    runs = _RUNS.findall(inner)
    last = len(runs) - 1
    parts = ["'"] if quoted else []
    column += quoted
    for i, run in enumerate(runs):
        if run == " " and column > _WIDTH and (not quoted or 0 < i < last):
            parts.append(line)
            column = indent
        else:
            parts.append(run)
            column += len(run)
    if quoted:
        parts.append("'")
    return "".join(parts)


_RUNS = re.compile(" +|[^ ]+")
