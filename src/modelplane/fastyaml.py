"""The fast reader of plain YAML, the form fleet snapshots are written in.

PyYAML with libyaml reads a 7 MB fleet file in about 2 s: the parser is C, but every node
and value is built by Python code. Here rapidyaml (``ryml``, a C++ parser with Python
wheels) parses the file, emits it as JSON, and ``json.loads`` builds the values: about a
quarter of that time. The result must be exactly what :mod:`modelplane.manifests` builds
with PyYAML (the same values, the same document lines), so this reader answers only for
files where the two provably agree, and returns None for every other file, which is then
read the located way (``manifests.read_yaml_located``), messages and all.

A file is read here only when all of these hold (each is a difference between rapidyaml's
JSON and PyYAML's SafeLoader that tests/api/test_fast_yaml.py pins):

* printable ASCII or UTF-8, newlines and spaces only: no tab (rapidyaml reads ``a:<TAB>1``
  as one string), no CR, no control character, none of the characters PyYAML breaks lines
  at (NEL, LS, PS), no byte order mark; no double-quoted escape of a NUL, a surrogate or
  NEL, LS or PS (``\\N``, ``\\L``, ``\\P``), and no escaped line break before an empty
  line (every other escape, ``\\"`` in a CEL
  selector among them, rapidyaml writes as PyYAML reads it; a control character it writes
  raw, which json.loads refuses);
* no node property or indicator where a node starts (at a line start, after a space or a
  flow indicator): no tag ``!`` (rapidyaml's JSON drops tags), anchor ``&`` or alias ``*``
  (written as the text ``*x``), complex key ``?``, directive ``%``, reserved ``@`` or
  backtick; no ``...`` document end. Block scalars and flow collections are read (both
  readers agree on them), and then the values' nesting is measured after parsing;
* no plain scalar that rapidyaml spells anew: ``inf`` / ``.NaN`` (it writes ``.inf`` /
  ``.nan``), a sign before a leading dot (``-.5``: a string to PyYAML, a number to
  rapidyaml);
* no line starting with 40 or more spaces and dashes (a block document can then not nest
  past jsonvalues.MAX_DEPTH, whose located error the slow path gives);
* every number of the JSON is one PyYAML reads the same (an int64 integer; a float in
  PyYAML's float syntax, so ``1e3``, a string to PyYAML, is not), every object has
  distinct keys, and no JSON string that PyYAML would have resolved to a non-string
  (``yes``, ``~``, ``0x1F``, ``1_000``, ``<<``, or any such key) came from a plain scalar:
  each is written quoted as a whole scalar at least as often as it occurs, not counting
  the look-alikes inside longer strings (a comment is never counted; a quoted ``"True"``
  on a line of a block scalar is in the JSON too, and taken off). A ``"8080"`` or
  ``"true"`` value needs no search: rapidyaml writes those plain scalars as JSON numbers
  and booleans, TYPED;
* rapidyaml parses the file, and its documents are the non-empty documents found between
  ``---`` markers (which gives each document's first line).

Each of these is decided before rapidyaml parses the bytes it is about where it can be
(the bytes), after it where it needs the JSON; a file read in parts is checked part by
part where the checks of the parts give the whole file's answer (each cut is at a line
start, and no refused sequence crosses one).

Its parse errors are not read here: rapidyaml prints them on file descriptor 2, which is
closed to it while it parses, and the slow path then names the line.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Generic, TypeVar

import ryml

from modelplane.errors import ModelplaneError
from modelplane.forked import Child, ChildFailed, Send
from modelplane.jsonvalues import INT64, MAX_DEPTH, nests_past

_PRINTABLE = bytes(range(0x20, 0x7F)) + b"\n"
_PRINTABLE_OR_HIGH = _PRINTABLE + bytes(range(0x80, 0x100))
_UNPRINTABLE_TEXT = re.compile("[\x80-\x9f\u2028\u2029\ufeff\ufffe\uffff]")
# The double-quoted escapes rapidyaml does not write as PyYAML reads them: a NUL (its
# JSON text ends there), a surrogate (written as bytes that are no character), an escaped
# line break before an empty line (a space to rapidyaml, a newline to PyYAML), and the
# escapes of the characters YAML counts as line breaks, NEL, LS and PS (``"\\n\\L"`` loses
# its newline to a space in rapidyaml). Control characters come out raw, which json.loads
# refuses (read the slow way); every other escape, and every invalid one (refused by
# both), is left to rapidyaml.
_BAD_ESCAPE = re.compile(
    rb"\\(?:0|x00|u0000|U00000000|u[dD][89a-fA-F]|U0000[dD][89a-fA-F]|\n[ ]*\n|[NLP])"
)
# Characters that may start a node property or indicator; where one follows a space or a
# line start, _unsafe_indicator looks at it.
# bytes.find and bytes.translate run at memory speed, a regular-expression search at a
# few ns a byte: the scan finds each candidate character with them and only then looks
# around it (tests/api/test_fast_yaml.py checks the scan against its definition).
_PROPERTIES = b"!&*?%@`"  # a node property or indicator the readers may read apart
_NOT_PROPERTIES = bytes(c for c in range(256) if c not in _PROPERTIES)
_WORD = frozenset(b"0123456789abcdefghijklmnopqrstuvwxyz_")
# A flow collection ([a, {b: c}]) nests without indenting: where one starts, the values
# are measured after parsing instead.
_MAX_FLOW_DEPTH = MAX_DEPTH - 10
# rapidyaml 0.15 writes no JSON for a tree nesting deeper than this (its emitter stops with
# a visit error: the slow path), so no document it writes passes _MAX_FLOW_DEPTH and the
# values need no walk to measure it (pinned by tests/api/test_fast_yaml.py).
_RAPIDYAML_MAX_DEPTH = 64
_ITEM_PREFIX = re.compile(rb"[ ]*(?:-[ ]+)*\Z")
# A line starting with 40 spaces and dashes: the first line, any other line.
_DEEP_START = re.compile(rb"[ -]{40}")
_DEEP_LINE = re.compile(rb"\n[ -]{40}")
# An inf or nan that ends a word (the scan then looks at the byte before it in Python):
# one pattern each, so the engine searches for a literal.
_WORD_ENDS = (re.compile(rb"inf(?![0-9a-z_])"), re.compile(rb"nan(?![0-9a-z_])"))
# A sign, a dot and a digit, one pattern per sign for the same reason (a literal is found
# several times faster than bytes.find finds these two bytes among a fleet's dashes).
_SIGNED_DOTS = (re.compile(rb"-\.[0-9]"), re.compile(rb"\+\.[0-9]"))
# PyYAML 6's implicit resolvers (yaml/resolver.py) without the timestamp one, which the
# loader drops: a plain scalar matching one is not a string to PyYAML. As one alternation,
# tested against PyYAML's own resolver in tests/api/test_fast_yaml.py.
RESOLVED = (
    r"yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF"
    r"|[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?"
    r"|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)"
    r"|[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+"
    r"|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+"
    r"|<<|~|null|Null|NULL|="
)
# A lookahead on the first two characters first: most strings ("name", "template") fail
# there, before the alternation is tried.
_FIRST = "(?=[-+0-9.~<=]|[yY][eE]|[nN][oOuU]|[tT][rR]|[fF][aA]|[oO][nNfF]|YE|NO|NU|TR|FA|O[NF])"
# The plain scalars rapidyaml writes as JSON numbers, booleans and null (pinned by
# tests/api/test_fast_yaml.py): a JSON value string of this form was quoted in the YAML,
# as PyYAML reads it too. Every other resolvable value string is a suspect, and so is
# every resolvable key (JSON keys are strings whatever the YAML said).
TYPED = r"true|false|null|-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?"
_NOT_TYPED = "(?!(?:" + TYPED + ')")'
# A JSON text of a fleet has a quote every few bytes: each is passed over by a one-character
# lookahead, then by one that the text up to the next quote is made of the characters a
# resolvable text is made of (a `kubectl` file's timestamps, ``--model`` arguments and
# ``64Gi`` quantities stop there, in one repeat of one set), before the two-character one
# is tried; and a key branch is only tried on a string a colon follows (the same matches
# as without them, in half the time: tests/api/test_fast_yaml.py).
_FIRST_CHARACTER = "(?=[-+0-9.~<=yYnNtTfFoO])"
_ALPHABET = "-+.0-9_:<~=a-fA-FxbilnorstuyILNORSTUY"
"""Every character of every text RESOLVED matches (as a set, for a character class)."""
_ALPHABET_AHEAD = "(?=[" + _ALPHABET + ']+")'
_KEY_AHEAD = '(?=[^"]*":)'
_SUSPECT_STRING = re.compile(
    '"'
    + _FIRST_CHARACTER
    + _ALPHABET_AHEAD
    + _FIRST
    + "(?:"
    + _KEY_AHEAD
    + "(?P<key>"
    + RESOLVED
    + ')":|'
    + _NOT_TYPED
    + "(?P<value>"
    + RESOLVED
    + ')")'
)
# The quotes of a resolvable text written inside a JSON string: 'yes' or \\"yes\\".
_INNER_QUOTES = ("'", '\\"')
_COLON_AHEAD = re.compile("[ ]*:")
_TYPED_FULL = re.compile("(?:" + TYPED + r")\Z")
_PYYAML_FLOAT = re.compile(r"[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+][0-9]+)?\Z")
_CONTENT_LINE = re.compile(rb"(?m)^(?![ ]*(?:#.*)?$)")


class _Unfaithful(ModelplaneError):
    """The JSON would differ from what PyYAML reads: the file is read the slow way."""


J = TypeVar("J")

Judge = Callable[[dict[str, Any], bool], J]
"""What the caller does with each object document while the child still reads: called
with the document (the caller's to change) and whether it is known to hold no null."""


@dataclass(frozen=True)
class FastRead(Generic[J]):
    """What the fast reader read from one file."""

    documents: list[tuple[int, Any]]
    """The (first line, value) of every non-empty document."""
    null_free: bool
    """No object of any document has a null member (there is nothing to prune): the file's
    JSON has no ``null`` at all, not even inside a string."""
    judged: list[J | None] = field(default_factory=list)
    """The judge's answers for the first documents, in order (None for a document that is
    not an object): those this process judged while the child was still reading."""


def read(
    data: bytes, *, fork: bool | None = None, judge: Judge[J] | None = None
) -> FastRead[J] | None:
    """The documents of a file, or None to read it the slow way.

    A file of 1 MiB or more (``fork``: None decides by size) is read on two cores: a forked
    child checks the bytes of the later part of the documents, parses it and checks the
    whole text while this process checks the bytes of the first part, parses it and
    decodes both (modelplane.forked). With a ``judge``, this process also judges every
    object document as soon as it is decoded: its own part's while the child parses (its
    part is then the smaller), the child's, sent in two parts, each as it arrives. The
    answers are ``judged``, and count only when the file is read here (a file read the
    slow way is read anew). Where no child can help, the file is read here alone, with the
    same documents.
    """
    wanted = len(data) >= _FORK_FROM if fork is None else fork
    cuts = _cuts(data, _SHARES if judge is None else _JUDGED_SHARES) if wanted else None
    if cuts is not None:
        try:
            return _read_in_parts(data, cuts, judge)
        except ChildFailed:
            pass  # read here alone
    if _unsafe_bytes(data):
        return None  # decided before rapidyaml sees the file
    return _read_whole(data)


# A file this large is read on two cores (fleet snapshots are megabytes; a small file is
# read in less time than a fork takes, about 5 ms for a loaded process).
_FORK_FROM = 1 << 20


def _read_whole(data: bytes) -> FastRead[Any] | None:
    parsed = _json_text(data)
    if parsed is None:
        return None
    text, stream = parsed
    unsafe, flow, starts = _checks(data)
    if unsafe or _resolved_plain(data, _with_embedded(_suspects(text), [text])):
        return None
    documents = _assembled([(_decoded(text), stream)], starts, flow)
    return None if documents is None else FastRead(documents, "null" not in text)


def _read_in_parts(data: bytes, cuts: list[int], judge: Judge[J] | None) -> FastRead[J] | None:
    """The file read with a child: it checks the bytes of each part of ``data`` from the
    first cut on (each a document marker's line on), parses it and sends its JSON text,
    then checks the whole text; this process checks and parses the part before the first
    cut and decodes them all. Each looks for the suspects of its own parts' JSON in its
    own bytes (their quoted and embedded occurrences: a line never crosses a cut), and
    this process counts the few one side has that the other has not.

    A ``judge`` is given this process's documents once they are decoded, while the child
    still parses, and each of the child's parts once it is: on a fleet file most of the
    judging is done by the time the child's verdict comes."""
    cut = cuts[0]
    child = Child.start(partial(_later_parts, data, cuts))
    if child is None:
        raise ChildFailed("no child")
    with child:
        head = data[:cut]
        if _unsafe_bytes(head):
            return None  # decided before rapidyaml sees this part
        first = _json_text(head)
        del head
        if first is None:
            return None  # a part that does not parse: the slow path names the line
        text, stream = first
        del first
        suspects = _suspects(text)
        tokens = {token for token, _ in suspects}
        quoted = {token: _quoted(data, token, 0, cut) for token in tokens}
        embedded = _embedded(tokens, text)
        parts = [(_decoded(text), stream)]
        if parts[0][0] is _UNFAITHFUL:
            return None  # values PyYAML does not read so: the slow path, whatever follows
        null_free = "null" not in text
        judged = _judged(parts[0], judge, null_free) if judge is not None else []
        other_texts: list[str] = []
        for _ in cuts:
            answer = child.receive()
            if answer is not None and not _is_parsed(answer):
                raise ChildFailed("the child's answer is not a parsed part")
            if answer is None:
                return None  # unsafe bytes or no parse: the slow path
            other_text, other_stream = answer
            del answer
            other_texts.append(other_text)
            part = (_decoded(other_text), other_stream)
            if part[0] is _UNFAITHFUL:
                return None
            parts.append(part)
            part_null_free = "null" not in other_text
            if judge is not None:
                judged += _judged(part, judge, part_null_free)  # while the child goes on
            null_free = null_free and part_null_free
        verdict = child.receive()
    if not _is_verdict(verdict):
        raise ChildFailed("the child's last answer is not the checks' verdict")
    unsafe, flow, starts, other_suspects, other_quoted, other_embedded = verdict
    if unsafe:
        return None
    suspects += Counter(other_suspects)
    other_tokens = {token for token, _ in other_suspects}
    # What one side has counted for its suspects, the other counts here for them too.
    for token in other_tokens - tokens:
        quoted[token] = _quoted(data, token, 0, cut)
        embedded[token] = _embedded({token}, text)[token]
    for token in tokens - other_tokens:
        other_quoted[token] = _quoted(data, token, cut, len(data))
        other_embedded[token] = sum(_embedded({token}, other)[token] for other in other_texts)
    del text, other_texts
    for token in tokens | other_tokens:
        quoted[token] += other_quoted[token]
        if embedded[token] + other_embedded[token]:
            suspects[(token, "embedded")] = embedded[token] + other_embedded[token]
    if _resolved_plain(data, suspects, quoted):
        return None
    documents = _assembled(parts, starts, flow)
    return None if documents is None else FastRead(documents, null_free, judged)


def _judged(part: tuple[Any, bool], judge: Judge[J], null_free: bool) -> list[J | None]:
    """The judge's answer for each non-empty document of a decoded part, in order."""
    value, stream = part
    values = value if stream else [value]
    return [
        judge(doc, null_free) if type(doc) is dict else None for doc in values if doc is not None
    ]


def _is_parsed(answer: Any) -> bool:
    """The shape of _json_text's answer: (JSON text, is a stream)."""
    return _shaped(answer, str, bool)


def _is_verdict(answer: Any) -> bool:
    """The shape of _later_parts' last answer: (unsafe, flow, lines, suspect counts,
    quoted counts, embedded counts), a count of each kind for each suspect text."""
    if not _shaped(answer, bool, bool, list, dict, dict, dict):
        return False
    lines, suspects, quoted, embedded = answer[2:]
    tokens = {key[0] for key in suspects if _shaped(key, str, str)}
    return (
        all(type(line) is int for line in lines)
        and all(_shaped(key, str, str) and type(count) is int for key, count in suspects.items())
        and all(
            set(counts) == tokens and all(type(count) is int for count in counts.values())
            for counts in (quoted, embedded)
        )
    )


def _shaped(answer: Any, *types: type) -> bool:
    """A tuple of as many values as ``types``, each of exactly its type."""
    return (
        type(answer) is tuple
        and len(answer) == len(types)
        and all(type(value) is kind for value, kind in zip(answer, types, strict=True))
    )


def _later_parts(data: bytes, cuts: list[int], send: Send) -> None:
    """The child's part: the JSON text of each part from the first cut on, in order (None,
    and no more, for unsafe bytes or no parse), then the checks of the whole text with its
    parts' suspects and their quoted and embedded occurrences in its bytes (this process,
    which decodes every part, has the more work)."""
    texts: list[str] = []
    for start, end in zip(cuts, [*cuts[1:], len(data)], strict=True):
        part = data[start:end]
        parsed = None if _unsafe_bytes(part) else _json_text(part)
        del part
        send(parsed)
        if parsed is None:
            return
        texts.append(parsed[0])
    unsafe, flow, starts = _checks(data)
    suspects: Counter[tuple[str, str]] = Counter()
    if not unsafe:
        for text in texts:
            suspects += _suspects(text)
    tokens = {token for token, _ in suspects}
    quoted = {token: _quoted(data, token, cuts[0], len(data)) for token in tokens}
    embedded = dict.fromkeys(tokens, 0)
    for text in texts:
        for token, count in _embedded(tokens, text).items():
            embedded[token] += count
    send((unsafe, flow, starts, dict(suspects), quoted, embedded))


# Where the file is cut, as shares of its bytes: this process parses the part before the
# first cut, the child each part after it, sending each one's JSON as soon as it is parsed.
# The child also checks the whole text while this process decodes every part, so it gets
# more than half (the two then finish together on a fleet file, plain or written by
# `kubectl get -o yaml`). Where this process also judges the documents, it parses less
# and the child sends its first part early, so that this process can decode and judge it
# while the child parses the second.
_SHARES = (0.42,)
_JUDGED_SHARES = (0.2, 0.6)


def _cuts(data: bytes, shares: tuple[float, ...]) -> list[int] | None:
    """The document markers nearest ``shares`` of the bytes, each after the one before;
    None where there is none (the file is then read here alone)."""
    cuts: list[int] = []
    for share in shares:
        at = _middle_marker(data, share)
        if at is not None and at > (cuts[-1] if cuts else 0):
            cuts.append(at)
    return cuts or None


def _middle_marker(data: bytes, share: float = _SHARES[0]) -> int | None:
    """The document marker (as _markers finds them, not the first byte) nearest the cut
    at ``share`` of the bytes."""
    middle = int(len(data) * share)
    near = (_marker_after(data, middle), _marker_before(data, middle + 4))
    found = [at for at in near if at]
    return min(found, key=lambda at: abs(at - middle)) if found else None


def _marker_after(data: bytes, start: int) -> int | None:
    at = data.find(b"\n---", start)
    while at >= 0 and not _ends_marker(data, at + 4):
        at = data.find(b"\n---", at + 4)
    return at + 1 if at >= 0 else None


def _marker_before(data: bytes, end: int) -> int | None:
    at = data.rfind(b"\n---", 0, end)
    while at >= 0 and not _ends_marker(data, at + 4):
        at = data.rfind(b"\n---", 0, at)
    return at + 1 if at >= 0 else None


def _ends_marker(data: bytes, at: int) -> bool:
    """``---`` ending just before ``at`` is a marker: a space, a newline or the end follows."""
    return data[at : at + 1] in (b" ", b"\n", b"")


def _assembled(
    parts: list[tuple[Any, bool]], starts: list[int], flow: bool
) -> list[tuple[int, Any]] | None:
    """The documents of the parts, in order, given their lines; None where they disagree."""
    documents: list[Any] = []
    for value, stream in parts:
        if value is _UNFAITHFUL:
            return None
        documents.extend(value if stream else [value])
    if not starts:
        return None  # no content at all (comments, blank lines): the slow path says so
    present = [doc for doc in documents if doc is not None]
    if (
        flow
        and _RAPIDYAML_MAX_DEPTH > _MAX_FLOW_DEPTH
        and any(nests_past(doc, _MAX_FLOW_DEPTH) for doc in present)
    ):
        return None  # the slow path names the line where nesting passes MAX_DEPTH
    if len(present) != len(starts):
        return None
    return list(zip(starts, present, strict=True))


_UNFAITHFUL: Any = object()
"""What _decoded gives for a JSON text whose values PyYAML would not read the same."""


def _json_text(data: bytes) -> tuple[str, bool] | None:
    """rapidyaml's JSON of the file and whether it is a stream; None when it does not parse."""
    try:
        with _quiet_stderr():
            tree = ryml.Tree()
            tree.reserve(_node_estimate(data))
            ryml.parse_in_arena(data, tree=tree)
            root = tree.root_id()
            stream = tree.is_stream(root)
            _on_one_line(tree, root, stream)
            text = ryml.emit_json_malloc(tree, root)
    except Exception:  # noqa: BLE001 - rapidyaml's own parse errors: the slow path explains them
        return None
    return (text, bool(stream)) if isinstance(text, str) else None


def _decoded(text: str) -> Any:
    """The JSON text's values, or _UNFAITHFUL."""
    try:
        return json.loads(
            text,
            object_pairs_hook=_object,
            parse_int=_int,
            parse_float=_float,
            parse_constant=_constant,
        )
    except (_Unfaithful, ValueError, RecursionError):
        return _UNFAITHFUL


def _checks(data: bytes) -> tuple[bool, bool, list[int]]:
    """(unsafe, flow, document lines): the look at the whole text that needs no JSON."""
    unsafe, flow = _scan_nodes(data)
    if unsafe:
        return True, False, []
    return False, flow, _document_lines(data)


def _on_one_line(tree: ryml.Tree, root: int, stream: bool) -> None:
    """Each document written as flow, so as JSON on one line (the same values).

    Block style writes a document's JSON indented, one value a line: twice the text for
    the string check and ``json.loads`` to pass over. A flow container's children are
    written flow, so a document needs only its own node marked.
    """
    for node in ryml.children(tree, root) if stream else (root,):
        if tree.is_container(node):
            tree.set_container_style(node, ryml.FLOW_SL)


def _node_estimate(data: bytes) -> int:
    """About as many tree nodes as the file needs, so rapidyaml never grows its node array.

    Growing the array while parsing costs about as much as the parse itself: a 14 MB fleet
    file parses in 0.22-0.24 s into an empty tree, 0.12-0.13 s into one reserved this
    large (each in a fresh process). A block line holds one node, a ``- `` item one more, a flow
    collection one per ``, `` (plus its opening bracket; an empty one is the line's node);
    the documents and the stream add a few. Reserving costs about as much a node as
    parsing one, so the commas and braces of JSON kept in a block scalar (the last-applied
    configuration of a `kubectl get -o yaml` file: ``,"`` and ``{}``) are not counted.
    Too low only costs the growth, so the estimate is capped at one node per two
    bytes: a hostile file cannot make it reserve more memory than its size asks.

    A large file is counted in _SAMPLES slices spread over it and the count scaled to its
    size, with a few percent to spare: seven counts of 39 MB took 0.25 s, as long as the
    parse (fleet files repeat one shape of document, so the slices see the same mix).
    """
    if len(data) <= 2 * _SAMPLES * _SAMPLE_BYTES:
        wanted = _nodes_in(data)
    else:
        step = len(data) // _SAMPLES
        sample = b"".join(data[at : at + _SAMPLE_BYTES] for at in range(0, step * _SAMPLES, step))
        wanted = _nodes_in(sample) * len(data) // len(sample) * 103 // 100
    return min(wanted + 64, len(data) // 2 + 64)


_SAMPLES = 16
_SAMPLE_BYTES = 1 << 17


def _nodes_in(data: bytes) -> int:
    """The nodes _node_estimate counts in ``data``."""
    return (
        data.count(b"\n")
        + data.count(b"- ")
        + data.count(b", ")
        + data.count(b"[")
        - data.count(b"[]")
        + data.count(b"{")
        - data.count(b"{}")
    )


def _document_lines(data: bytes) -> list[int]:
    """The line of the first content of each document that has content."""
    offsets: list[int] = []
    bounds = [0, *_markers(data), len(data)]
    for index, (begin, end) in enumerate(zip(bounds, bounds[1:], strict=False)):
        at = begin
        if index > 0:  # every part but the first starts at a marker
            newline = data.find(b"\n", begin, end)
            line_end = end if newline < 0 else newline
            rest = data[begin + 3 : line_end].strip()
            if rest and not rest.startswith(b"#"):
                offsets.append(begin)  # content on the marker's own line
                continue
            at = line_end + 1
        found = _first_content(data, at, end)
        if found is not None:
            offsets.append(found)
    lines: list[int] = []
    line, counted = 1, 0
    for offset in offsets:  # counted forward once: a file of many documents stays linear
        line += data.count(b"\n", counted, offset)
        counted = offset
        lines.append(line)
    return lines


def _markers(data: bytes) -> list[int]:
    """The offset of every ``---`` that starts a line and ends at a space, a newline or the end.

    Found with bytes.find: a regular expression anchored at line starts is tried at every
    line, several times slower (tests/api/test_fast_yaml.py holds the two equal).
    """
    markers: list[int] = []
    found = data.find(b"\n---")
    candidate = 0 if data.startswith(b"---") else (found + 1 if found >= 0 else -1)
    while candidate >= 0:
        if _ends_marker(data, candidate + 3):
            markers.append(candidate)
        found = data.find(b"\n---", candidate + 3)
        candidate = found + 1 if found >= 0 else -1
    return markers


def _first_content(data: bytes, at: int, end: int) -> int | None:
    """The first line at or after the line start ``at`` (before ``end``) that is neither blank
    nor a comment; most often the line at ``at`` itself, which needs no search."""
    if at < end and data[at] not in b" #\n":
        return at
    found = _CONTENT_LINE.search(data, min(at, end), end)
    return None if found is None else found.start()


def _unsafe_bytes(data: bytes) -> bool:
    """A byte the readers may read apart, found before the file is parsed (a few ms)."""
    if data.isascii():
        if data.translate(None, _PRINTABLE):
            return True  # a tab, CR or control character
    elif _unsafe_text(data):
        return True
    return b"\\" in data and _BAD_ESCAPE.search(data) is not None


def _unsafe_text(data: bytes) -> bool:
    """A file with bytes above 0x7f that is not UTF-8 made of characters both readers
    read alike: PyYAML also breaks lines at NEL, LS and PS, skips a byte order mark and
    refuses the C1 controls and U+FFFE / U+FFFF."""
    if data.translate(None, _PRINTABLE_OR_HIGH):
        return True
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return _UNPRINTABLE_TEXT.search(text) is not None


def _scan_nodes(data: bytes) -> tuple[bool, bool]:
    """(unsafe, flow) of a file _unsafe_bytes passed: a line, indicator or scalar the two
    readers may read apart; a flow collection that is not empty (whose nesting is then
    measured after parsing).

    Each candidate character is found by bytes.find, then looked around: a few tens of
    milliseconds for a 15 MB fleet file (tests/api/test_fast_yaml.py checks the scan
    against its candidate-by-candidate definition).
    """
    if data.startswith(b"...") or b"\n..." in data or _deep_line(data):
        return True, False  # a document end marker; a line nesting past the bound
    if data.translate(None, _NOT_PROPERTIES) and any(
        _at_node(data, at) for char in _PROPERTIES for at in _positions(data, bytes([char]))
    ):
        return True, False
    if _special_float(data.lower()) or _signed_dot(data):
        return True, False
    flow = any(
        _at_node(data, at) and data[at + 1 : at + 2] not in (b"]", b"}")
        for char in (b"[", b"{")
        for at in _positions(data, char)
    )
    return False, flow


def _positions(data: bytes, char: bytes) -> Iterator[int]:
    """Every offset of ``char`` in ``data``, found by bytes.find."""
    at = data.find(char)
    while at >= 0:
        yield at
        at = data.find(char, at + 1)


def _at_node(data: bytes, at: int) -> bool:
    """A node may start at ``at``: the first byte, or one after a space, a newline or a flow
    indicator (``[!!int 1]``, ``{"a":&x 1}``); in a plain scalar such as ``a,!b`` this
    only sends the file the slow way."""
    return at == 0 or data[at - 1] in b" \n[{,:"


def _deep_line(data: bytes) -> bool:
    """A line (the first one too) that starts with 40 or more spaces and dashes."""
    return _DEEP_START.match(data) is not None or _DEEP_LINE.search(data) is not None


def _special_float(lowered: bytes) -> bool:
    """inf, .inf, -.inf, nan, .NaN as a word of their own: rapidyaml writes them anew."""
    for pattern in _WORD_ENDS:
        for found in pattern.finditer(lowered):
            at = found.start()
            if at == 0 or lowered[at - 1] not in _WORD:
                return True
    return False


def _signed_dot(data: bytes) -> bool:
    """-.5 after no word character or dot: a string to PyYAML, a number to rapidyaml."""
    for pattern in _SIGNED_DOTS:
        for found in pattern.finditer(data):
            at = found.start()
            before = data[at - 1 : at] if at else b" "
            if not before.isalnum() and before not in b"_.":
                return True
    return False


def _suspects(text: str) -> Counter[tuple[str, str]]:
    """The JSON strings that PyYAML would resolve to a non-string had they been plain,
    counted by (text, role): role "key" or "value". A string such as ``"8080"`` or
    ``"true"`` is not one: rapidyaml writes those plain scalars as a number or a boolean
    (TYPED), so the YAML quoted it."""
    return Counter(
        (m["key"], "key") if m["key"] is not None else (m["value"], "value")
        for m in _SUSPECT_STRING.finditer(text)
    )


def _with_embedded(
    suspects: Counter[tuple[str, str]], texts: list[str]
) -> Counter[tuple[str, str]]:
    """``suspects`` with role "embedded": how often each suspect text is quoted inside a
    longer JSON string of ``texts`` (``x 'yes' y``, ``say \\"on\\"``). There the same bytes
    that look like a whole quoted scalar in the file are part of another scalar, so they
    prove nothing (_resolved_plain takes them off the file's count).

    Only the suspects' own texts are looked for (a file has none or a few: a `kubectl` file
    one, ``True``), each by str.find, every occurrence counted, overlapping ones too
    (``'yes'yes'``: twice): at least as many as any one scan of the JSON for quoted
    resolvable texts finds, which is all the verdict needs (taking off more only sends
    more files the slow way). A TYPED text (``true``, ``1``) counts only where a colon
    follows, as after a key: rapidyaml writes a plain one as a JSON value, so only its
    keys are suspects. One scan of every quoted resolvable text took 0.25 s of the 39 MB
    `kubectl` replica file."""
    if not suspects:
        return suspects
    found = Counter(suspects)
    tokens = {token for token, _ in suspects}
    for text in texts:
        for token, count in _embedded(tokens, text).items():
            if count:
                found[(token, "embedded")] += count
    return found


def _embedded(tokens: set[str], text: str) -> dict[str, int]:
    """How often each of ``tokens`` is quoted inside a longer JSON string of ``text`` (what
    _with_embedded counts, one text at a time: each side's in its own process)."""
    found = dict.fromkeys(tokens, 0)
    # A quote the text does not hold at all (a `kubectl` file's JSON has no ``'``) is not
    # searched for after each token: found by memchr, its absence saves a pass per token.
    openings = [opening for opening in _INNER_QUOTES if opening in text]
    for token in tokens:
        typed = _TYPED_FULL.match(token) is not None
        for opening in openings:
            needle = opening + token
            at = text.find(needle)
            while at >= 0:
                end = at + len(needle)
                for closing in _INNER_QUOTES:
                    if text.startswith(closing, end) and (
                        not typed or _COLON_AHEAD.match(text, end + len(closing))
                    ):
                        found[token] += 1
                at = text.find(needle, at + 1)
    return found


def _resolved_plain(
    data: bytes, in_json: Counter[tuple[str, str]], counted: dict[str, int] | None = None
) -> bool:
    """True when a suspect JSON string (``yes``, ``~``, ``0x1F``) may have come from a
    plain scalar.

    Each is fine only where it was quoted: it must occur in the JSON at most as often as
    it is written quoted in ``data`` as a whole scalar. Bytes that look like a whole
    quoted scalar may also be part of a longer one (a line of a block scalar holding
    JSON, of a multi-line string): each such look-alike is in the JSON as an "embedded"
    text, so those are taken off the file's count first (never more are miscounted than
    are embedded, so what is left cannot hide a plain scalar).

    ``counted``: the quoted occurrences of some suspects, counted already (_quoted by the
    forked child, which reads the same bytes); the others are counted here.
    """
    in_text: Counter[str] = Counter()
    embedded: Counter[str] = Counter()
    for (text, kind), count in in_json.items():
        (embedded if kind == "embedded" else in_text)[text] += count
    if not in_text:
        return False
    known = counted or {}
    quoted = {
        token: known[token] if token in known else _quoted(data, token, 0, len(data))
        for token in in_text
    }
    return any(count > quoted[token] - embedded[token] for token, count in in_text.items())


def _quoted(data: bytes, token: str, start: int, end: int) -> int:
    """How often ``token`` is written quoted in ``data[start:end]`` as a whole scalar: a
    key, or a value where it is not TYPED (a quoted ``"1"`` value proves nothing: see
    TYPED). Each occurrence is looked at on its line in ``data``; the count of a file is
    the sum of its halves' counts where they are cut at a line start (no token holds a
    newline).

    The occurrences are found one by one, not by a scan matching every quoted
    resolvable text (a `kubectl get -o yaml` file quotes 150,000 numbers in its
    last-applied JSON, and one suspect, 'True'): the same count. An occurrence such a scan
    passes over starts at the closing quote of a text it matched, so the line before it
    ends with that text, and _whole_scalar counts no such occurrence.
    """
    typed = _TYPED_FULL.match(token) is not None
    count = 0
    for quote in (b"'", b'"'):
        needle = quote + token.encode() + quote
        # A literal pattern finds it faster than bytes.find among a fleet's many quotes
        # (0.02 s against 0.03 s a pass over 39 MB); searched again one byte on, overlapping
        # occurrences ('True'True') are each looked at, as with bytes.find.
        pattern = re.compile(re.escape(needle))
        found = pattern.search(data, start, end)
        while found is not None:
            at = found.start()
            role = _whole_scalar(data, at, at + len(needle))
            if role == "key" or role == "value" and not typed:
                count += 1
            found = pattern.search(data, at + 1, end)
    return count


def _whole_scalar(data: bytes, start: int, end: int) -> str | None:
    """ "key" or "value" when data[start:end] is a whole node on its line (an item is a value).

    Strict on purpose: a quoted-looking text that is not counted (say a scalar on the line
    after its key) only sends the file the slow way, while one counted by mistake could
    hide a plain scalar of the same text. Nothing after a ``#`` on the line is counted (it
    may be a comment); text inside a longer scalar is caught by its JSON (_suspects).
    """
    line_start = data.rfind(b"\n", 0, start) + 1
    before = data[line_start:start]
    if b"#" in before:
        return None
    newline = data.find(b"\n", end)
    rest = data[end : len(data) if newline < 0 else newline].lstrip(b" ")
    ends_line = not rest or rest.startswith(b"#")
    is_key = rest.startswith(b":") and rest[1:2] in (b"", b" ")
    if _ITEM_PREFIX.match(before):  # indentation and "- " markers only
        if is_key:
            return "key"
        return "value" if ends_line and b"-" in before else None
    stripped = before.rstrip(b" ")
    if stripped != b"---" and not stripped.endswith((b":", b"[", b"{", b",")):
        return None  # inside some other scalar
    if rest.startswith(b":") and stripped.endswith((b"[", b"{", b",")):
        return "key"  # {'yes': 1}, {"yes":1}
    return "value" if ends_line or rest[:1] in (b",", b"]", b"}") else None


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise _Unfaithful("duplicate key")
    return result


def _int(text: str) -> int:
    value = int(text)
    if not INT64[0] <= value <= INT64[1]:
        raise _Unfaithful("outside int64")
    return value


def _float(text: str) -> float:
    if _PYYAML_FLOAT.match(text) is None:
        raise _Unfaithful("not a PyYAML float")
    return float(text.replace("_", ""))


def _constant(text: str) -> Any:
    raise _Unfaithful(text)


@contextmanager
def _quiet_stderr() -> Iterator[None]:
    """rapidyaml prints its parse errors on file descriptor 2; the slow path reports them."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
            try:
                yield
            finally:
                os.dup2(saved, 2)
    finally:
        os.close(saved)
