"""The fast YAML reader reads exactly what the located PyYAML reader reads.

modelplane.fastyaml answers only for files where rapidyaml's JSON and PyYAML's SafeLoader
agree; everywhere else it returns None and the file is read the located way. These tests
pin both halves: where it answers, the values and document lines are the located reader's
(hypothesis, over documents full of scalars that YAML 1.1 resolves: yes, ~, 0x1F, 1_000,
.5, 1e3); and each known difference between the two readers sends the file the slow way.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
from collections import Counter
from typing import Any

import pytest
import ryml
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from modelplane import fastyaml, forked
from modelplane.manifests import Document, _Loader, load, read_yaml_located
from tests.builders import seed_replica
from tests.forking import counted_forks

# Scalars on which YAML 1.1 (PyYAML), YAML 1.2 (rapidyaml) and JSON disagree or nearly do.
TRICKY = [
    "yes", "No", "ON", "off", "y", "n", "true", "True", "FALSE", "null", "Null", "NULL", "~",
    "0", "-0", "+1", "007", "08", "0x1F", "0b101", "0o17", "1_000", "1:30", "190:20:30.15",
    "1.5", "1.", ".5", "-.5", "+.5", "1e3", "1.5e3", "1.5e+3", "1.e+3", "5e-3", "0.1e-5",
    "inf", ".inf", "-.Inf", ".NaN", "nan", "infinity", "<<", "=", "10.0.0.1", "2001-12-14",
    "9223372036854775807", "9223372036854775808", "-9223372036854775809", "a:b", "a b",
    "it's", 'say "hi"', "x#y", "[]", "{}", "-", "--", "a-", "ab_c", "Ω",
]  # fmt: skip


def located(data: bytes) -> list[tuple[int, Any]] | None:
    """What the located reader gives, when it gives only clean documents."""
    out: list[tuple[int, Any]] = []
    for item in read_yaml_located("f.yaml", data):
        if not isinstance(item, Document) or item.problems:
            return None
        out.append((item.line, item.content))
    return out


def agree(data: bytes) -> list[tuple[int, Any]] | None:
    """The fast answer, checked against the located reader's."""
    found = fastyaml.read(data)
    if found is None:
        return None
    fast = found.documents
    assert fast == located(data), data.decode(errors="replace")
    if found.null_free:
        assert not any(_has_null_member(value) for _, value in fast)
    return fast


def _has_null_member(value: Any) -> bool:
    if isinstance(value, dict):
        return None in value.values() or any(_has_null_member(v) for v in value.values())
    return isinstance(value, list) and any(_has_null_member(v) for v in value)


tokens = st.sampled_from(TRICKY) | st.text("ab01.-_:e+ ", min_size=1, max_size=6)
scalars = tokens | st.integers(-(2**64), 2**64) | st.floats(allow_nan=False) | st.booleans()
values = st.recursive(
    scalars | st.none(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(tokens, inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.dictionaries(tokens, values, min_size=1, max_size=4), min_size=1, max_size=3))
def test_dumped_documents_read_the_same(docs: list[dict[str, Any]]) -> None:
    for flow in (False, True):
        data = yaml.safe_dump_all(docs, default_flow_style=flow, allow_unicode=True).encode()
        agree(data)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(TRICKY), st.sampled_from(TRICKY)), min_size=1, max_size=5),
    st.sampled_from(["{k}: {v}\n", "- {k}\n- {v}\n", "{k}:\n  - {v}\n", "x:\n  {k}: {v}\n"]),
    st.booleans(),
)
def test_plain_scalars_written_by_hand_read_the_same(
    pairs: list[tuple[str, str]], shape: str, separate: bool
) -> None:
    """Scalars written unquoted, as a person writes them: PyYAML's YAML 1.1 typing holds."""
    parts = [shape.format(k=k, v=v) for k, v in pairs]
    data = ("---\n" if separate else "").join(parts if separate else parts[:1]).encode()
    agree(data)


def quoted(token: str, style: int) -> str:
    """The token plain (0), single-quoted (1) or double-quoted (2, when it has no quote)."""
    if style == 1:
        return "'" + token.replace("'", "''") + "'"
    if style == 2 and '"' not in token:
        return '"' + token + '"'
    return token


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(TRICKY),
            st.integers(0, 2),
            st.sampled_from(TRICKY),
            st.integers(0, 2),
        ),
        min_size=1,
        max_size=6,
    ),
    st.sampled_from(["{k}: {v}\n", "- {k}: {v}\n", "- {v}\n", "{k}:\n  {v}\n", "{k}: x\n  {v}\n"]),
)
def test_quoted_and_plain_scalars_side_by_side_read_the_same(
    rows: list[tuple[str, int, str, int]], shape: str
) -> None:
    """A quoted '8080' may take the fast path; the same text unquoted elsewhere may not."""
    lines = [
        f"r{i}:\n" + textwrap.indent(shape.format(k=quoted(k, ks), v=quoted(v, vs)), "  ")
        for i, (k, ks, v, vs) in enumerate(rows)
    ]
    agree("".join(lines).encode())


# Characters that need quoting, escaping or care in some style: quotes, backslashes, line
# breaks, tabs, comment and flow indicators, non-ASCII (some of which PyYAML breaks lines at).
_AWKWARD = "ab yes:#-,[]{}\"'\\\n\t\u00e9\u03a9\u2713\u0085\u2028\U0001f600\x7f\x00"
strings = tokens | st.text(_AWKWARD, max_size=12)
styled_values = st.recursive(
    strings | st.integers(-(2**63), 2**63 - 1) | st.booleans() | st.none(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(strings, inner, max_size=3),
    max_leaves=10,
)
# How tools write YAML: every string double-quoted (escapes), single-quoted, in blocks,
# flow collections, non-ASCII written out or escaped.
_STYLES: list[dict[str, Any]] = [
    {"default_style": '"'},
    {"default_style": "'"},
    {"default_style": "|"},
    {"default_flow_style": True},
    {"default_flow_style": True, "default_style": '"'},
    {"allow_unicode": True},
    {"allow_unicode": False, "width": 20},
]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.dictionaries(strings, styled_values, min_size=1, max_size=4), min_size=1, max_size=3
    )
)
def test_documents_in_every_writing_style_read_the_same(docs: list[dict[str, Any]]) -> None:
    """Quoted, escaped, block, flow and non-ASCII writing: where fastyaml answers, it agrees."""
    for style in _STYLES:
        agree(yaml.safe_dump_all(docs, **style).encode())
    # JSON is YAML too: one document a JSON text, indented or on one line.
    for indent in (None, 2):
        agree("".join(f"---\n{json.dumps(doc, indent=indent)}\n" for doc in docs).encode())


_ESCAPES = [
    "\\0", "\\a", "\\b", "\\t", "\\n", "\\v", "\\f", "\\r", "\\e", "\\ ", '\\"', "\\/",
    "\\\\", "\\N", "\\_", "\\L", "\\P", "\\x41", "\\x7f", "\\xe9", "\\x1f", "\\x00",
    "\\u00e9", "\\u2028", "\\ud7ff", "\\ue000", "\\ufffd", "\\ufeff", "\\u0000", "\\ud800",
    "\\U0001F600", "\\U0010FFFF", "\\U00110000", "\\q", "\\x4", "\\\n  ", "\\\n\n  ",
    "\n  ", "\n\n  ", "x", " ", "'", "#", "yes", "\u00e9",
]  # fmt: skip


@settings(max_examples=400, deadline=None)
# Found by hypothesis: rapidyaml folds the escaped newline before an escaped LS into a space.
@example([["\\n", "\\L", "\\L"]], "{k}: {v}\n")
@example([["\\n", "\\P"], ["\\N"]], "- {v}\n")
@given(
    st.lists(st.lists(st.sampled_from(_ESCAPES), max_size=6), min_size=1, max_size=4),
    st.sampled_from(["{k}: {v}\n", "- {v}\n", "{v}: {k}\n", "- [{v}, {k}]\n", "- {{{k}: {v}}}\n"]),
)
def test_double_quoted_escapes_read_the_same(parts: list[list[str]], shape: str) -> None:
    """Every escape YAML allows (and some it does not), alone or side by side, in block and
    flow collections: where fastyaml answers, it agrees; an invalid one is the located
    reader's to name."""
    lines = [shape.format(k=f"k{i}", v='"' + "".join(part) + '"') for i, part in enumerate(parts)]
    agree("".join(lines).encode())


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.dictionaries(tokens, values, min_size=1, max_size=4), min_size=1, max_size=3),
    st.lists(st.sampled_from(["# c", "# a: 'yes'", "#- 'on'", '# "~": x']), min_size=1),
    st.randoms(use_true_random=False),
)
def test_commented_documents_read_the_same(
    docs: list[dict[str, Any]], comments: list[str], rng: Any
) -> None:
    """Comments on lines of their own and after values, quoted look-alikes in them."""
    lines = yaml.safe_dump_all(docs).splitlines()
    out = []
    for line in lines:
        if rng.random() < 0.3:
            out.append(rng.choice(comments))
        out.append(line + (" " + rng.choice(comments) if rng.random() < 0.3 else ""))
    agree(("\n".join(out) + "\n").encode())


@settings(max_examples=200, deadline=None)
@given(st.lists(st.dictionaries(tokens, values, min_size=1, max_size=4), min_size=1, max_size=3))
def test_documents_beside_their_json_in_a_block_read_the_same(docs: list[dict[str, Any]]) -> None:
    """As kubectl keeps the last applied configuration: the document's JSON in a block
    scalar beside its plain scalars, whose quoted look-alikes hide none of them."""
    data = "".join(
        "---\n"
        + yaml.safe_dump({"applied": json.dumps(doc) + "\n"}, default_style="|")
        + yaml.safe_dump(doc)
        for doc in docs
    )
    agree(data.encode())


_KUBECTL = """\
apiVersion: modelplane.ai/v1alpha1
kind: ModelReplica
metadata:
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: |
      {"apiVersion":"modelplane.ai/v1alpha1","kind":"ModelReplica","spec":{"cel":"device.capacity[\\"gpu.nvidia.com\\"].memory"}}
  creationTimestamp: "2026-01-12T09:14:03Z"
  generation: 1
  managedFields:
  - apiVersion: modelplane.ai/v1alpha1
    fieldsType: FieldsV1
    fieldsV1:
      f:metadata:
        f:annotations:
          .: {}
          f:kubectl.kubernetes.io/last-applied-configuration: {}
      f:status:
        f:conditions:
          k:{"type":"Ready"}:
            .: {}
            f:status: {}
    manager: kubectl-client-side-apply
    operation: Update
    time: "2026-01-12T09:14:03Z"
  name: r
  resourceVersion: "1000001"
  uid: 6f1c2d3e-0001-4a5b-8c9d-000000000001
spec:
  selectors:
  - cel: "device.capacity[\\"gpu.nvidia.com\\"].memory >= quantity(\\"20Gi\\")"
status:
  conditions:
  - lastTransitionTime: "2026-01-12T09:15:41Z"
    status: "True"
    type: Ready
"""


def test_kubectl_get_output_is_read_fast() -> None:
    """What `kubectl get -o yaml` prints (managedFields, a last-applied block, escaped
    selectors, quoted timestamps and numbers) takes the fast path, twice in a stream."""
    fast = agree((_KUBECTL + "---\n" + _KUBECTL).encode())
    assert fast is not None and len(fast) == 2
    assert fast[0][1]["status"]["conditions"][0]["status"] == "True"


@pytest.mark.parametrize(
    ("text", "fast"),
    [
        ("# c\n\n---\n# c2\n\na: 1\n---\n\n---\nb: 2\n", True),  # lines after comments
        ("--- # comment\na: 1\n--- b\n--- 'c'\n", True),  # content on the marker's line
        ("a: 1 # x\nb: 'x # y'\nc: x#y\nd: \"q\"\n", True),
        ("a: b\n  c\n  d\ne: f\n", True),  # a plain scalar over three lines
        ("- - a\n  - b\n- - c\n", True),
        ("a: {}\nb: []\nc: {x: 1, y: [1, 2]}\nd: [a, b, {c: d}]\n", True),
        ("a: [1, 2,\n  3]\n", True),
        ("a: 'it''s'\nb: ''\nc: \"\"\n", True),
        ("a: 'true'\nb: true\nc: 'null'\nd: null\ne: '1'\nf: 1\n", True),
        ("'1': a\n'true': b\n", True),  # quoted keys: strings to both
        ('a: "\\_\\x41\\u00e9\\U0001F600\\"\\\\\\/\\ \\t"\n', True),  # escapes
        ('a: "\\N\\L\\P"\n', False),  # escaped line-break characters: the slow way
        ('a: "device.capacity[\\"gpu.nvidia.com\\"].memory"\n', True),  # a CEL selector
        ("a: 'C:\\x\\y'\nb: C:\\x\\d+\n", True),  # backslashes outside double quotes
        ('a: "x \\\n  y"\n', True),  # an escaped line break
        ("a: |\n  x\n  y\nb: >-\n  x\n\n  y\nc: |+\n  z\n\nd: 1\n", True),  # block scalars
        ("a: é\nb: 'Ω ✓'\n", True),  # UTF-8
        ("a: {b: 'True', c: ['yes', \"~\"]}\nd: {'on': 1}\n", True),  # quoted in flow
        ("# a: 'yes'\nb: 'yes' # 'no'\n", True),
        ("a: 0.5\nb: 1.\nc: .5\nd: 5.e3\n", False),
        ("a: 12:30:00\n", False),  # sexagesimal: an integer to PyYAML
        ("a: 1\r\n", False),
        ("\ufeffa: 1\n", False),
    ],
)
def test_hand_written_files_read_the_same(text: str, fast: bool) -> None:
    assert (agree(text.encode()) is not None) == fast


@pytest.mark.parametrize(
    "text",
    [
        "a: yes\nb: x\n  'yes'\n",  # a quoted-looking continuation cannot hide a plain yes
        "a:\t1\n",  # a tab: rapidyaml reads one string
        "a: inf\n",  # rapidyaml writes .inf
        "a: -.5\n",  # a string to PyYAML, a number to rapidyaml
        "a: 1e3\n",  # a string to PyYAML (no dot), a number to rapidyaml
        "a: yes\n",  # a boolean to PyYAML
        "a: ~\n",
        "a: 0x1F\n",
        "1: a\n",  # a non-string key
        "a: !!str 1\n",  # tags are dropped by rapidyaml's JSON
        "a: &x 1\nb: *x\n",  # aliases too
        'a: "\\0"\n',  # rapidyaml's JSON text ends at a NUL
        'a: "\\x00"\n',
        'a: "\\u0000"\n',
        'a: "\\ud800"\n',  # a surrogate
        'a: "\\e"\n',  # control characters come out raw in rapidyaml's JSON
        'a: "\\x1f"\n',
        'a: "\\q"\n',  # invalid: the located reader names the line
        "a: x\u0085y\n",  # NEL, LS and PS break lines for PyYAML
        "a: x\u2028y\n",
        "a: \u0080\n",  # a C1 control character
        "a: x\n# b: 'yes'\nb: yes\n",  # a quoted yes in a comment hides no plain one
        "a: x # c: 'on'\nb: on\n",
        "a: x\n  - 'yes'\nb: yes\n",  # nor one inside a multi-line scalar
        "a: \"x\n  - 'yes'\n  z\"\nb: yes\n",
        "a: 'x\n  - \"on\"\n  z'\nb: on\n",
        "a: |\n  - 'yes'\nb: yes\n",
        'a: |\n  {"s":"True"}\nb: True\n',  # nor one in a block holding JSON
        "a: 1\na: 2\n",  # a duplicate key
        "a: 9223372036854775808\n",  # outside int64
        "%YAML 1.1\n---\na: 1\n",
        "a: b: c\n",  # invalid: the located reader names the line
        "a: " + "[" * 95 + "]" * 95 + "\n",  # past MAX_DEPTH in flow style
        "x:\n" + "".join(" " * i + f"k{i}:\n" for i in range(1, 60)),  # deep in block style
    ],
)
def test_each_known_difference_is_read_the_located_way(text: str) -> None:
    assert fastyaml.read(text.encode()) is None


def test_a_fleet_snapshot_is_read_fast_with_its_lines() -> None:
    """What `yaml.safe_dump_all` writes for a fleet (selectors, quoted numbers) takes the fast path."""
    replica = {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelReplica",
        "metadata": {"name": "r", "labels": {"modelplane.ai/replica-index": "0"}},
        "spec": {
            "selectors": [{"cel": 'device.capacity["gpu.nvidia.com"].memory >= quantity("20Gi")'}],
            "empty": [],
            "address": "10.0.1.2",
            "flag": True,
            "ratio": 0.5,
        },
    }
    data = ("# a fleet\n" + yaml.safe_dump_all([replica, replica, replica])).encode()
    fast = agree(data)
    assert fast is not None
    assert [line for line, _ in fast] == [
        2,
        2 + data.count(b"\n") // 3,
        2 + 2 * data.count(b"\n") // 3,
    ]


def test_a_parse_error_prints_nothing_and_is_located(tmp_path: Any, capfd: Any) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("a: 1\n---\nb: c: d\n")
    loaded = load([str(path)])
    assert (
        loaded.problems[-1]
        == f"{path}:3: invalid YAML: mapping values are not allowed in this context"
    )
    assert capfd.readouterr().err == ""


@settings(max_examples=400, deadline=None)
@given(st.text("-+0123456789._:xobeEaflsnuyYNTtrOF~<=", min_size=1, max_size=8))
def test_the_resolved_pattern_is_pyyamls(token: str) -> None:
    """RESOLVED matches exactly the plain scalars PyYAML's loader does not read as strings.

    (The empty plain scalar is null too, but rapidyaml writes it as null, never as "".)
    """
    tag = _Loader.resolve(_Loader, yaml.ScalarNode, token, (True, False))  # type: ignore[arg-type]
    assert (re.fullmatch(fastyaml.RESOLVED, token) is not None) == (tag != "tag:yaml.org,2002:str")


@settings(max_examples=300, deadline=None)
@given(st.from_regex(rf"\A(?:{fastyaml.TYPED})\Z", fullmatch=True))
def test_rapidyaml_writes_the_typed_plain_scalars_as_json_values(token: str) -> None:
    """What TYPED assumes: these plain scalars never come out of rapidyaml as strings.

    So a JSON string of that form was quoted in the file, and needs no search for a plain
    occurrence (PyYAML reads a quoted '8080' as a string too).
    """
    tree = ryml.parse_in_arena(f"a: {token}\n".encode())
    value = json.loads(ryml.emit_json_malloc(tree, tree.root_id()))["a"]
    assert not isinstance(value, str)


_CANDIDATES = re.compile(rb"[!&*?%@`\[{]")


def _scan_by_candidates(data: bytes) -> tuple[bool, bool]:
    """The definition of fastyaml's scan, one candidate at a time (what it replaced)."""
    if not data.isascii() or data.translate(None, fastyaml._PRINTABLE) or b"\n..." in data:
        return True, False
    if fastyaml._BAD_ESCAPE.search(data):
        return True, False
    if data.startswith(b"...") or re.search(rb"(?:\A|\n)[ -]{40}", data):
        return True, False
    flow = False
    for found in _CANDIDATES.finditer(data):
        at = found.start()
        char = data[at : at + 1]
        if at and data[at - 1 : at] not in b" \n[{,:":
            continue  # inside a plain scalar
        if char in b"[{":
            flow = flow or data[at + 1 : at + 2] not in (b"]", b"}")
            continue
        return True, False
    lowered = data.lower()
    for found in re.finditer(rb"inf|nan", lowered):
        before = lowered[found.start() - 1 : found.start()] if found.start() else b" "
        after = lowered[found.end() : found.end() + 1]
        if not (before.isalnum() or before == b"_" or after.isalnum() or after == b"_"):
            return True, False
    for found in re.finditer(rb"[-+]\.[0-9]", data):
        before = data[found.start() - 1 : found.start()] if found.start() else b" "
        if not before.isalnum() and before not in b"_.":
            return True, False
    return False, flow


@settings(max_examples=1500, deadline=None)
@given(st.text(" \n-+._:#!&*?%@`|>[]{},\\aIiNnFf059xz=", max_size=24))
def test_the_scan_is_its_candidate_by_candidate_definition(text: str) -> None:
    """The scan's searches run in C; they decide exactly as one look per candidate."""
    data = text.encode()
    scan = (True, False) if fastyaml._unsafe_bytes(data) else fastyaml._scan_nodes(data)
    assert scan == _scan_by_candidates(data)


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(["---", "--- ", "---x", "-", "\n", " ", "#", "a: 1", "..."])))
def test_the_document_markers_are_the_anchored_patterns(parts: list[str]) -> None:
    """Markers found with bytes.find are what the line-anchored pattern finds."""
    data = "".join(parts).encode()
    expected = [m.start() for m in re.finditer(rb"(?m)^---(?=[ \n]|\Z)", data)]
    assert fastyaml._markers(data) == expected


_SUSPECT_BY_DEFINITION = re.compile(
    '"'
    + fastyaml._FIRST
    + "(?:(?P<key>"
    + fastyaml.RESOLVED
    + ')":|'
    + fastyaml._NOT_TYPED
    + "(?P<value>"
    + fastyaml.RESOLVED
    + ')")'
)


@settings(max_examples=1500, deadline=None)
@given(
    st.lists(
        st.sampled_from(TRICKY) | st.text('"yYnNtTfFoO0123456789.+-_:~<=e GZm/\\xb', max_size=5)
    )
)
@example(["2026-01-12T09:14:03Z", "64Gi", "--model", "0x1F", "0b1", "-.inf", "<<", "True"])
def test_the_suspect_pattern_finds_what_its_definition_finds(strings: list[str]) -> None:
    """The lookaheads only pass quotes over sooner; the matches are the same."""
    text = json.dumps({s: [s, {s: s}] for s in strings})
    found = [(m.start(), m["key"], m["value"]) for m in fastyaml._SUSPECT_STRING.finditer(text)]
    expected = [(m.start(), m["key"], m["value"]) for m in _SUSPECT_BY_DEFINITION.finditer(text)]
    assert found == expected


@settings(max_examples=1500, deadline=None)
@given(st.from_regex(rf"\A(?:{fastyaml.RESOLVED})\Z", fullmatch=True))
@example("yes")
@example("Yes")
@example("YES")
@example("no")
@example("No")
@example("NO")
@example("true")
@example("True")
@example("TRUE")
@example("false")
@example("False")
@example("FALSE")
@example("on")
@example("On")
@example("ON")
@example("off")
@example("Off")
@example("OFF")
@example("null")
@example("Null")
@example("NULL")
@example("<<")
@example("~")
@example("=")
@example(".nan")
@example(".NaN")
@example(".NAN")
@example("+.inf")
@example("-.Inf")
@example(".INF")
@example("0b1_0")
@example("0xFF_aB")
@example("-1:30.5")
@example("+1_0.5e-3")
@example("0_7")
def test_every_resolvable_text_is_made_of_the_alphabet_the_scan_passes(token: str) -> None:
    """The suspect scan passes a quote over where the text up to the next quote has a
    character outside fastyaml._ALPHABET: no resolvable text has one."""
    assert re.fullmatch(fastyaml.RESOLVED, token) is not None
    assert re.fullmatch(f"[{fastyaml._ALPHABET}]+", token) is not None


@pytest.mark.parametrize(
    "text",
    [
        "- " * 20 + "a\n",  # the first line, as deep as a later one
        "a:\n" + "- " * 20 + "b\n",
        "a:\n" + " " * 40 + "b\n",
    ],
)
def test_a_line_indented_past_the_nesting_bound_is_read_the_located_way(text: str) -> None:
    assert fastyaml.read(text.encode()) is None


def test_documents_written_on_one_line_read_as_written() -> None:
    """Each document is emitted as one-line JSON: the same values, block or flow, any depth."""
    docs = [
        {"a": {"b": [1, {"c": "d, e"}, []], "f": {}}, "g": "x: y"},
        [1, [2, [3]]],
        "text",
        {"empty": None, "n": -5, "f": 0.25},
    ]
    data = yaml.safe_dump_all(docs).encode()
    fast = agree(data)
    assert fast is not None
    assert [value for _, value in fast] == docs


_LINUX = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="files are read with a forked child on Linux only"
)


@_LINUX
@settings(max_examples=60, deadline=None)
@given(st.lists(st.dictionaries(tokens, values, min_size=1, max_size=4), min_size=2, max_size=5))
def test_a_file_read_in_halves_with_a_child_reads_as_read_here(docs: list[dict[str, Any]]) -> None:
    """The child's half and checks give the answer this process gives alone."""
    for data in (yaml.safe_dump_all(docs).encode(), _hand_written(docs)):
        assert fastyaml._middle_marker(data) is not None
        assert fastyaml.read(data, fork=True) == fastyaml.read(data, fork=False)


def _hand_written(docs: list[dict[str, Any]]) -> bytes:
    return "".join(f"---\n{k}: {v}\n" for doc in docs for k, v in doc.items()).encode()


_DUMPER: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


@functools.cache
def _fleet_file() -> bytes:
    """A file large enough to be read with a child (made once: PyYAML writes it slowly)."""
    replica = {"kind": "ModelReplica", "spec": {"engines": [{"name": "e", "copies": 1}]}}
    data = yaml.dump_all([replica] * (fastyaml._FORK_FROM // 40), Dumper=_DUMPER).encode()
    assert len(data) >= fastyaml._FORK_FROM
    return data


@_LINUX
def test_a_fleet_file_is_read_with_one_child_that_is_gone_after(monkeypatch: Any) -> None:
    forks = counted_forks(monkeypatch)
    data = _fleet_file()
    fast = fastyaml.read(data)
    assert fast is not None and len(fast.documents) == fastyaml._FORK_FROM // 40
    assert fast == fastyaml.read(data, fork=False)
    assert len(forks) == 1
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)  # reaped: no child is left behind


@_LINUX
@pytest.mark.parametrize("judged", [False, True])
@pytest.mark.parametrize(
    "how", ["raises", "is killed", "answers nothing", "answers once", "answers garbage"]
)
def test_a_child_that_fails_leaves_the_file_read_here(
    how: str, judged: bool, monkeypatch: Any
) -> None:
    """However the child fails, the file is read here alone, with the same answer (with a
    judge the child sends two parts: "answers once" stops after the first)."""
    real = fastyaml._later_parts

    def failing(data: bytes, cuts: list[int], send: Any) -> None:
        if how == "raises":
            raise RuntimeError("only in the child")
        if how == "is killed":
            os.kill(os.getpid(), signal.SIGKILL)
        if how == "answers once":
            sent: list[Any] = []
            real(data, cuts, lambda value: None if sent else sent.append(send(value)))
            os._exit(0)
        if how == "answers garbage":
            real(data, cuts, lambda value: send("not what the reader expects"))

    monkeypatch.setattr(fastyaml, "_later_parts", failing)
    data = _fleet_file()
    found = fastyaml.read(data, judge=(lambda doc, null_free: 1) if judged else None)
    alone = fastyaml.read(data, fork=False)
    assert found is not None and alone is not None
    assert (found.documents, found.null_free) == (alone.documents, alone.null_free)
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


@_LINUX
@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.dictionaries(tokens, values, min_size=1, max_size=4)
        | st.lists(values, min_size=1, max_size=3),
        min_size=2,
        max_size=6,
    )
)
def test_a_judge_answers_for_every_object_document_in_order(docs: list[Any]) -> None:
    """With a judge, the file reads as without one, and each object document is judged
    once, in order, told it holds no null only where none of its objects has one (a
    document that is not an object is not judged: None)."""
    if not forked.may_fork():
        pytest.skip("this process has threads another test started: it never forks")
    data = yaml.safe_dump_all(docs).encode()
    seen: list[Any] = []

    def judge(doc: dict[str, Any], null_free: bool) -> str:
        seen.append(doc)
        assert not (null_free and _has_null_member(doc))
        return json.dumps(doc)

    found = fastyaml.read(data, fork=True, judge=judge)
    alone = fastyaml.read(data, fork=False)
    if alone is None:
        assert found is None  # read the slow way; whatever was judged is not used
        return
    assert found is not None and found.documents == alone.documents
    assert found.null_free == alone.null_free
    expected = [json.dumps(v) if isinstance(v, dict) else None for _, v in alone.documents]
    assert found.judged == expected
    assert len(seen) == sum(answer is not None for answer in expected)


@_LINUX
def test_a_fleet_validated_while_it_is_read_loads_as_one_validated_after(
    tmp_path: Any, monkeypatch: Any
) -> None:
    """The documents validated while the child reads give the objects and problem lines,
    in order, that validating them after reading gives: an invalid document in either part,
    a name taken twice across the cut."""
    counted_forks(monkeypatch)  # skips where this process may not fork
    replicas = [seed_replica(f"c-{i:04d}", i) for i in range(1100)]
    replicas[3]["spec"]["engines"] = "not a list"
    replicas[-3]["metadata"]["name"] = "Not A Name"
    replicas.append(copy.deepcopy(replicas[1]))
    fleet = tmp_path / "fleet.yaml"
    fleet.write_bytes(yaml.dump_all(replicas, Dumper=_DUMPER).encode())
    assert fleet.stat().st_size >= fastyaml._FORK_FROM
    reads: list[Any] = []
    real = fastyaml.read

    def spied(data: bytes, **options: Any) -> Any:
        reads.append(real(data, **options))
        return reads[-1]

    monkeypatch.setattr(fastyaml, "read", spied)
    judged = load([str(fleet)])
    assert len(reads[0].judged) == len(replicas)  # every document validated while reading
    monkeypatch.setattr(fastyaml, "_FORK_FROM", 1 << 40)  # read alone, validated after
    after = load([str(fleet)])
    assert reads[1].judged == []
    assert len(judged.problems) == 3 and judged.problems == after.problems
    assert [(o.name, o.line, o.raw, o.model) for o in judged.objects] == [
        (o.name, o.line, o.raw, o.model) for o in after.objects
    ]


def test_a_file_with_a_null_member_is_not_called_null_free() -> None:
    found = fastyaml.read(b"a: 1\nb:\n  c: null\n")
    assert found is not None and not found.null_free
    found = fastyaml.read(b"a: 1\nb:\n  c: 2\n")
    assert found is not None and found.null_free


@_LINUX
def test_a_fleet_file_read_with_a_child_writes_this_process_output_alone(tmp_path: Any) -> None:
    """The child writes nothing, and output pending when it forks is written once."""
    fleet = tmp_path / "fleet.yaml"
    fleet.write_bytes(_fleet_file())
    script = (
        "import sys\n"
        "from modelplane import fastyaml\n"
        "sys.stdout.write('pending out, ')\n"
        "sys.stderr.write('pending err, ')\n"
        f"assert fastyaml.read(open({str(fleet)!r}, 'rb').read()) is not None\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout == "pending out, " and done.stderr == "pending err, "


def _depth(value: Any) -> int:
    """Levels of arrays and objects: 0 for a scalar."""
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


@pytest.mark.parametrize("block", [0, 1, 10, 30, 38])
def test_rapidyaml_writes_no_json_nesting_past_its_bound(block: int) -> None:
    """The fast reader measures no document's nesting: rapidyaml writes none deeper than
    fastyaml._RAPIDYAML_MAX_DEPTH (block keys, then flow sequences and mappings), which is
    under the bound the located reader names (so that file is read the slow way)."""
    assert fastyaml._RAPIDYAML_MAX_DEPTH < fastyaml._MAX_FLOW_DEPTH
    deepest = 0
    for flow in range(0, 100):
        for opening, closing in (("[", "]"), ('{"k": ', "}")):
            head = "".join(" " * i + f"k{i}:\n" for i in range(block))
            text = head + " " * block + "z: " + opening * flow + "1" + closing * flow + "\n"
            parsed = fastyaml._json_text(text.encode())
            if parsed is None:
                assert fastyaml.read(text.encode()) is None
                continue
            depth = _depth(json.loads(parsed[0]))
            assert depth <= fastyaml._RAPIDYAML_MAX_DEPTH
            deepest = max(deepest, depth)
    assert deepest >= fastyaml._RAPIDYAML_MAX_DEPTH - 2  # the bound itself was reached


# The quoted-scalar count as first written: one scan matching every quoted resolvable
# text, each looked at on its line (fastyaml now finds only the suspects' own).
_EVERY_QUOTED = re.compile(
    b"['\"]" + fastyaml._FIRST.encode() + b"(" + fastyaml.RESOLVED.encode() + b")['\"]"
)


def _quoted_by_scan(data: bytes, tokens: set[str]) -> dict[str, int]:
    quoted = dict.fromkeys(tokens, 0)
    for found in _EVERY_QUOTED.finditer(data):
        if data[found.start()] != data[found.end() - 1]:
            continue
        role = fastyaml._whole_scalar(data, found.start(), found.end())
        token = found.group(1).decode()
        if token in quoted and (
            role == "key" or role == "value" and not fastyaml._TYPED_FULL.match(token)
        ):
            quoted[token] += 1
    return quoted


_QUOTED_PIECES = st.lists(
    st.sampled_from(
        ["'", '"', "True", "yes", "1", "0.5", "~", "on", "x", ":", " ", "- ", "\n", "#",
         "[", "{", ",", "]", "---", "a: ", "\\"]
    ),
    max_size=40,
).map("".join)  # fmt: skip


@settings(max_examples=300)
@given(_QUOTED_PIECES)
@example("a: '1'True'\nb: 'True'\n- 'yes\"yes'\n- \"on\": 1\n")
def test_suspects_are_counted_as_the_full_scan_counted_them(text: str) -> None:
    data = text.encode()
    tokens = {"True", "yes", "1", "0.5", "~", "on"}
    counted = _quoted_by_scan(data, tokens)
    for token in tokens:
        for count in range(4):  # the verdict turns where the file's count is passed
            suspects: Counter[tuple[str, str]] = Counter({(token, "value"): count})
            assert fastyaml._resolved_plain(data, suspects) == (count > counted[token])


# The scan of every resolvable text quoted inside a JSON string, as first written (the
# reader now looks for the suspects' own texts only: fastyaml._with_embedded).
_EVERY_EMBEDDED = re.compile(
    "(?:'|\\\\\")"
    + fastyaml._FIRST_CHARACTER
    + fastyaml._FIRST
    + "("
    + fastyaml.RESOLVED
    + ")(?:'|\\\\\")(?P<colon>[ ]*:)?"
)


@settings(max_examples=1500, deadline=None)
@given(
    st.lists(
        st.sampled_from(["'", '\\"', '"', "True", "yes", "1", "on", "~", " ", ":", "x", "\\"]),
        max_size=30,
    ).map("".join)
)
@example("'yes'True'True': 'True'")
@example('\\"1\\"1\': x')
def test_embedded_texts_are_counted_at_least_as_the_full_scan_counted_them(text: str) -> None:
    """Taking off at least as many look-alikes as the full scan found keeps the verdict safe."""
    scanned: Counter[str] = Counter(
        m[1]
        for m in _EVERY_EMBEDDED.finditer(text)
        if m["colon"] or not fastyaml._TYPED_FULL.match(m[1])
    )
    for token in ("True", "yes", "1", "on", "~"):
        suspects: Counter[tuple[str, str]] = Counter({(token, "value"): 1})
        found = fastyaml._with_embedded(suspects, [text, "x"])
        assert found[(token, "embedded")] >= scanned[token], (token, text)
        assert found[(token, "value")] == 1


def test_a_file_without_suspects_is_not_searched_for_embedded_texts() -> None:
    assert fastyaml._with_embedded(Counter(), ["'yes'"]) == Counter()


@_LINUX
@pytest.mark.parametrize(("status", "fast"), [("'True'", True), ("True", False), ("yes", False)])
def test_suspects_counted_by_the_child_give_the_answer_given_here(status: str, fast: bool) -> None:
    """The child counts the quoted occurrences of its half's suspects (``'True'`` on every
    condition of a `kubectl get -o yaml` file); a plain one anywhere still sends the file
    the slow way, whichever half it is in."""
    doc = "---\nkind: ModelReplica\nstatus:\n  conditions:\n  - type: Ready\n    status: 'True'\n"
    count = fastyaml._FORK_FROM // len(doc) + 1
    docs = [doc] * count
    docs[count // 4] = docs[count // 4].replace("'True'", status)
    docs[3 * count // 4] = docs[3 * count // 4].replace("'True'", status)
    data = "".join(docs).encode()
    found = fastyaml.read(data, fork=True)
    assert found == fastyaml.read(data, fork=False)
    assert (found is not None) == fast


# Lines of a file cut in halves at a document marker: each half's bytes, quoted scalars and
# embedded texts are looked at in its own process.
_HALF_LINES = st.lists(
    st.sampled_from(
        [
            "---", "--- ", "...", "a: 1", "a: 'True'", "- 'yes'", '"on": 1', "b: yes",
            'c: "x \\"True\\" y"', "d: \"\\N\"", 'e: "a\\', "", "  ", "\t", "f: Ω", "# 'True'",
            "g: '1'", "h: [True, 'True']", "i: \x85", "j: \u2028", "k: \\0",
        ]
    ),
    max_size=12,
)  # fmt: skip


@settings(max_examples=1500, deadline=None)
@given(_HALF_LINES, _HALF_LINES)
def test_a_file_cut_at_a_marker_is_checked_as_its_halves(head: list[str], tail: list[str]) -> None:
    """Unsafe bytes and whole quoted scalars never cross the line a half starts at."""
    cut_line = "---"
    data = "\n".join([*head, cut_line, *tail, ""]).encode()
    cut = len("\n".join([*head, ""]).encode()) if head else 0
    assert data[cut : cut + 3] == b"---"
    halves = fastyaml._unsafe_bytes(data[:cut]) or fastyaml._unsafe_bytes(data[cut:])
    assert fastyaml._unsafe_bytes(data) == halves
    for token in ("True", "yes", "on", "1"):
        head, tail = (fastyaml._quoted(data, token, *span) for span in ((0, cut), (cut, len(data))))
        assert fastyaml._quoted(data, token, 0, len(data)) == head + tail


@_LINUX
@pytest.mark.parametrize(
    ("first", "second", "fast"),
    [
        ("'True'", "'yes'", True),  # each half has a suspect the other has not
        ("'yes'", "'True'", True),
        ("yes", "'True'", False),  # a plain one in the half whose suspect the other lacks
        ("'True'", "on", False),
        # A look-alike of a whole quoted scalar in one half (a line of a block scalar) is
        # taken off that half's quoted count even where only the other half has the suspect.
        ("yes", "|\n    - 'yes'", False),
        ("|\n    - 'yes'", "yes", False),
        ("'yes'", "|\n    - 'yes'", True),
    ],
)
def test_suspects_of_one_half_only_are_counted_in_the_other(
    first: str, second: str, fast: bool
) -> None:
    """Each process counts its own half's suspects in its own half; what only one half
    has is counted in the other half too, so the answer is the one given here alone."""
    template = "---\nkind: ModelReplica\nstatus:\n  ready: {}\n"
    count = fastyaml._FORK_FROM // len(template) + 1
    docs = [template.format("'True'")] * count
    docs[count // 4] = template.format(first)
    docs[3 * count // 4] = template.format(second)
    data = "".join(docs).encode()
    found = fastyaml.read(data, fork=True)
    assert found == fastyaml.read(data, fork=False)
    assert (found is not None) == fast


@_LINUX
@pytest.mark.parametrize("judged", [False, True])
@pytest.mark.parametrize("where", [0, 1, 3])
@pytest.mark.parametrize(
    "unsafe", ["a:\tb", 'a: "\\N"', "a: \x85", "a: !!str b", "a: yes", "a: 1\na: 2"]
)
def test_a_refused_text_in_any_part_sends_the_file_the_slow_way(
    where: int, unsafe: str, judged: bool
) -> None:
    """Bytes refused before the parse (a tab, ``\\N``, NEL), a tag and a plain ``yes``
    found after it and a key set twice found when decoding, in the part this process
    reads or in either of the child's (with a judge the child's bytes are two parts)."""
    doc = "---\nkind: ModelReplica\nspec: {}\n"
    count = fastyaml._FORK_FROM // len(doc) + 1
    docs = [doc] * count
    docs[where * count // 4] = f"---\n{unsafe}\n"
    data = "".join(docs).encode()
    shares = fastyaml._JUDGED_SHARES if judged else fastyaml._SHARES
    cuts = fastyaml._cuts(data, shares)
    assert cuts is not None and len(cuts) == len(shares)
    judge = (lambda doc, null_free: 1) if judged else None
    assert fastyaml.read(data, fork=True, judge=judge) is None


@pytest.mark.parametrize(
    "verdict",
    [
        (False, False, [1], {("True", "value"): 2}, {}, {"True": 0}),  # a count missing
        (False, False, [1], {("True", "value"): 2}, {"True": 1}, {"True": 0, "yes": 0}),
        (False, False, [1], {"True": 2}, {"True": 1}, {"True": 0}),  # not a (text, role) key
        (False, False, [1], {("True", "value"): 2}, {"True": 1.0}, {"True": 0}),
        (False, False, [1], {}, {}),  # the shape before the embedded counts
    ],
)
def test_a_malformed_verdict_is_no_verdict(verdict: tuple[Any, ...]) -> None:
    assert not fastyaml._is_verdict(verdict)
    good = (False, False, [1], {("True", "value"): 2}, {"True": 1}, {"True": 0})
    assert fastyaml._is_verdict(good)
