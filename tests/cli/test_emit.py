"""render's JSON writer (cli/emit.py): always the standard library's text, byte for byte."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import math
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from modelplane.cli import emit


def standard(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


# Strings over the characters writers treat apart: quotes, backslashes, controls, DEL,
# the line separators, non-ASCII, astral characters and lone surrogates.
TEXT = st.text(
    alphabet=st.one_of(
        st.sampled_from('"\\/\x00\x01\x08\x0c\n\r\t\x1f\x7f\x80\u2028\u2029\ufeff\ud800\udfff'),
        st.characters(),
    ),
    max_size=12,
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1e16, 1e15, 1e-5, 1e-4, 0.1, 5e-324, 1.7976931348623157e308]),
    TEXT,
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.dictionaries(TEXT, inner, max_size=4),
    ),
    max_leaves=30,
)


@dataclasses.dataclass(frozen=True, slots=True)
class Point:
    x: int


@settings(max_examples=400)
@given(VALUES)
def test_the_text_is_the_standard_librarys(value: Any) -> None:
    try:
        expected = standard(value)
    except (TypeError, ValueError) as error:
        with pytest.raises(type(error)):
            emit.indented_json(value)
        return
    assert emit.indented_json(value) == expected


# What orjson writes apart or refuses: each must take the standard library's path.
SLOW = [
    ("NaN", [math.nan]),
    ("infinity", {"a": math.inf}),
    ("small float", {"x": 1e-5}),
    ("small float in exponent form", [2.5e-7]),
    ("integer past 64 bits", [2**64]),
    ("integer key", {1: "a"}),
    ("lone surrogate", ["\ud800"]),
    ("lone surrogate key", {"\udfff": 1}),
    ("nesting past orjson's depth", json.loads("[" * 300 + "]" * 300)),
]


@pytest.mark.parametrize(("case", "value"), SLOW, ids=[c for c, _ in SLOW])
def test_where_the_writers_differ_the_standard_library_writes(case: str, value: Any) -> None:
    assert emit._fast(value) is None, case
    assert emit.indented_json(value) == standard(value)


# What render prints: names, labels, quoted CEL, non-ASCII, empty containers, tuples.
FAST = [
    ("objects", [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}]),
    ("empty containers", {"a": {}, "b": [], "c": [{}], "d": ""}),
    ("escapes", ['device.capacity["gpu.nvidia.com"]', "a\nb\tc\x01\x7f", "caf\u00e9 \U0001f600"]),
    ("numbers", [0, -1, 2**63 - 1, -(2**63), 0.5, 1.0, 1e15, 1e16, 1e-4, True, False, None]),
    ("tuples", {"t": (1, ("a", {}))}),
]


@pytest.mark.parametrize(("case", "value"), FAST, ids=[c for c, _ in FAST])
def test_what_render_prints_takes_the_fast_writer(case: str, value: Any) -> None:
    assert emit._fast(value) == standard(value), case


# Where no float can stand, orjson's text is taken without the standard library's
# compact text: its strings, integers and booleans must be the standard library's tokens.


def test_every_character_is_escaped_as_the_standard_library_escapes_it() -> None:
    text = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000)
    value = {text: [text, 0, -1, 2**63 - 1, -(2**63), 2**64 - 1, True, False]}
    assert emit._no_float(emit.orjson.dumps(value))
    assert emit._fast(value) == standard(value)


# Values orjson writes where the standard library writes otherwise or refuses: never
# taken without the comparison.
class Keyed(dict[str, int]):
    def items(self) -> Any:
        return [("z", 1)]


class Named(enum.IntEnum):
    one = 1


WRITTEN_APART = [
    ("dict subclass", [Keyed(a=2)]),
    ("int subclass", {"a": Named.one}),
    ("date", [datetime.date(2026, 1, 1)]),
    ("dataclass", [Point(1)]),
]


@pytest.mark.parametrize(("case", "value"), WRITTEN_APART, ids=[c for c, _ in WRITTEN_APART])
def test_what_orjson_writes_apart_is_the_standard_librarys_or_refused(
    case: str, value: Any
) -> None:
    try:
        expected = standard(value)
    except TypeError:
        with pytest.raises(TypeError):
            emit.indented_json(value)
        return
    assert emit.indented_json(value) == expected, case


# Text that looks like a float or NaN inside a string, None, and floats at each place
# orjson writes one: the scan sends each to the comparison.
FLOAT_LIKE = [
    ("float after a key", {"a": 1.5}, False),
    ("float first in an array", [0.5], False),
    ("float later in an array", [1, 1e-7], False),
    ("negative exponent form", {"a": -1e16}, False),
    ("NaN", {"a": math.nan}, False),
    ("None", {"a": None}, False),
    ("float-like string", ["a:1.5"], False),
    ("null in a string", ["nullable"], False),
    ("version strings", {"image": "vllm:v0.6.3", "a": "1.5"}, True),
]


@pytest.mark.parametrize(
    ("case", "value", "scanned"), FLOAT_LIKE, ids=[c for c, _, _ in FLOAT_LIKE]
)
def test_a_value_where_a_float_may_stand_is_compared(case: str, value: Any, scanned: bool) -> None:
    assert emit._no_float(emit.orjson.dumps(value)) is scanned, case
    assert emit.indented_json(value) == standard(value), case


def test_a_value_neither_writer_takes_is_refused_as_before() -> None:
    with pytest.raises(TypeError):
        emit.indented_json({"a": object()})
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular"):
        emit.indented_json(loop)


# YAML: render's stream, byte for byte yaml.safe_dump_all with render's options.


def standard_yaml(objects: list[Any]) -> str:
    return yaml.safe_dump_all(objects, **emit.YAML_OPTIONS)


def test_the_yaml_options_are_renders() -> None:
    assert emit.YAML_OPTIONS == {
        "sort_keys": False,
        "explicit_start": True,
        "allow_unicode": True,
        "width": 100,
    }


# Strings PyYAML writes apart: indicators, ": " and " #", spaces at either end, the words
# and numbers its resolver reads as other types, dates, line breaks, controls, non-ASCII,
# and runs of words that reach the width of 100 at some depth.
WORDS = st.sampled_from(
    [
        "",
        " ",
        "a",
        "x y",
        "-",
        "- a",
        "-a",
        "?",
        "? a",
        ":",
        "a:",
        "a: b",
        "a:b",
        "#",
        "a #b",
        "a#b",
        "&a",
        "*a",
        "!a",
        "|",
        ">",
        "'",
        '"',
        "%",
        "@",
        "`",
        "{",
        "}",
        "[",
        "]",
        ",",
        "a,b",
        "yes",
        "No",
        "ON",
        "off",
        "y",
        "n",
        "true",
        "False",
        "null",
        "Null",
        "~",
        "=",
        "<<",
        "0",
        "-1",
        "+1",
        "1_000",
        "0x1F",
        "0o17",
        "017",
        "1.5",
        ".5",
        "1e3",
        "1.0e+3",
        "-.inf",
        ".NaN",
        "1:30",
        "190:20:30",
        "2001-12-14",
        "2001-12-14t21:59:43.10-05:00",
        "a\nb",
        "\n",
        "a\tb",
        "\t",
        "\x85",
        "\u2028",
        "\ufeff",
        "\x00",
        "\x7f",
        "caf\u00e9",
        "\U0001f600",
        "\u00a0",
        "a  b",
        "a ",
        " a",
        "it's",
        "---",
        "...",
        "a" * 30,
        "b " * 20,
        "cc " * 17,
        "d" * 95,
        "e " * 49 + "e",
    ]
)
YAML_TEXT = st.one_of(
    WORDS,
    st.lists(WORDS, min_size=1, max_size=6).map(" ".join),
    st.lists(WORDS, min_size=1, max_size=4).map("".join),
    st.text(
        alphabet=st.one_of(st.sampled_from(" -:#'\"\n\t,[]{}&*!|>%@`?"), st.characters()),
        max_size=12,
    ),
    st.text(alphabet="ab ", min_size=60, max_size=110),
    # Long runs of short words, single and double spaces, some quoted: folded at 100.
    st.tuples(
        st.sampled_from(["", " ", "- ", "'", "yes ", "a: "]),
        st.lists(
            st.sampled_from(["a", "bb", "cccc", "d" * 9, "'", "it's", ":", "#", ""]),
            min_size=10,
            max_size=70,
        ),
        st.sampled_from(["", " ", "'"]),
    ).map(lambda t: t[0] + " ".join(t[1]) + t[2]),
)
KEYS = st.one_of(YAML_TEXT, st.text(alphabet="k", min_size=95, max_size=130))
YAML_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1e16, 1e20, 1e-5, 0.1, 5e-324, 1.7976931348623157e308]),
    YAML_TEXT,
)
YAML_VALUES = st.recursive(
    YAML_SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.dictionaries(KEYS, inner, max_size=4),
    ),
    max_leaves=30,
)
DOCUMENTS = st.lists(
    st.one_of(st.dictionaries(KEYS, YAML_VALUES, min_size=1, max_size=5), YAML_VALUES),
    max_size=3,
)


@settings(max_examples=600)
@given(DOCUMENTS)
def test_the_yaml_stream_is_pyyamls(documents: list[Any]) -> None:
    assert emit.yaml_documents(documents) == standard_yaml(documents)


# The same strings on one line, so that most documents take the fast writer.
ONE_LINE = YAML_TEXT.map(lambda s: "".join(c for c in s if c.isprintable()))
ONE_LINE_VALUES = st.recursive(
    st.one_of(YAML_SCALARS.filter(lambda v: not isinstance(v, str)), ONE_LINE),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.dictionaries(ONE_LINE.filter(bool), inner, max_size=4),
    ),
    max_leaves=30,
)


@settings(max_examples=400)
@given(st.dictionaries(ONE_LINE.filter(bool), ONE_LINE_VALUES, min_size=1, max_size=5))
def test_a_document_the_fast_writer_takes_is_pyyamls(document: dict[str, Any]) -> None:
    fast = emit._yaml_document(document)
    if fast is not None:
        assert fast == standard_yaml([document])


# Containers met more than once: PyYAML writes an anchor where each is first met and an
# alias after (names in the order met again), nested, empty, in lists and in mappings.
@st.composite
def shared_documents(draw: st.DrawFn) -> dict[str, Any]:
    pool: list[Any] = []
    for _ in range(draw(st.integers(1, 4))):
        earlier = st.sampled_from(pool) if pool else st.nothing()
        inner = st.one_of(ONE_LINE_VALUES, earlier, earlier)
        pool.append(
            draw(
                st.one_of(
                    st.lists(inner, max_size=3),
                    st.tuples(inner),
                    st.dictionaries(ONE_LINE.filter(bool), inner, max_size=3),
                )
            )
        )
    picked = st.sampled_from(pool)
    leaves = st.one_of(picked, picked, picked, st.integers(0, 9))
    tree = st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4),
            st.dictionaries(st.sampled_from("abcde"), inner, max_size=4),
        ),
        max_leaves=12,
    )
    return draw(st.dictionaries(st.sampled_from("vwxyz"), tree, min_size=1, max_size=5))


@settings(max_examples=400)
@given(shared_documents())
def test_shared_containers_are_pyyamls_anchors_and_aliases(document: dict[str, Any]) -> None:
    assert emit.yaml_documents([document, document]) == standard_yaml([document, document])


def _shared_pair() -> dict[str, Any]:
    labels = {"app": "a"}
    return {"a": labels, "b": labels, "c": [labels, [labels]]}


def _shared_empty() -> dict[str, Any]:
    empty: list[Any] = []
    return {"a": [empty, empty], "b": {"c": empty}}


def _holds_itself() -> dict[str, Any]:
    inner: dict[str, Any] = {"a": 1}
    inner["self"] = inner
    return {"inner": inner}


def _root_holds_itself() -> dict[str, Any]:
    root: dict[str, Any] = {"a": 1}
    root["b"] = [root]
    return root


# What the YAML writer leaves to PyYAML: each document must come out None, then PyYAML's.
SLOW_YAML = [
    ("two lines", {"a": "x\ny"}),
    ("double quotes (a control character)", {"a": "\x01"}),
    ("a long key (explicit ?)", {"k" * 130: 1}),
    ("an empty key", {"": 1}),
    ("a root inside itself", _root_holds_itself()),
    ("a key that is not a string", {1: "a"}),
    ("a set", {"a": {1}}),
    ("a root that is not a mapping", ["a"]),
    ("an empty root", {}),
]


@pytest.mark.parametrize(("case", "document"), SLOW_YAML, ids=[c for c, _ in SLOW_YAML])
def test_where_the_yaml_writer_stops_pyyaml_writes(case: str, document: Any) -> None:
    assert emit._yaml_document(document) is None, case
    assert emit.yaml_documents([document, {"b": 1}]) == standard_yaml([document, {"b": 1}])


# What render prints: names, labels, quoted numbers and booleans, nesting, indentless lists.
FAST_YAML = [
    ("object", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}),
    ("quoted", {"data": {"port": "8080", "on": "yes", "v": "1.0", "e": "", "q": "it's"}}),
    ("nesting", {"a": [{"b": [1, [2, {"c": {}}]], "d": []}, [[]], ()]}),
    ("scalars", {"i": -3, "f": 0.5, "g": 1e20, "t": True, "n": None, "u": "caf\u00e9"}),
    ("words up to the width", {"description": "word " * 16 + "endends"}),
    ("words past the width, folded", {"a": {"b": ["x " * 60 + "'yes' " + "y  " * 30]}}),
    ("quoted words past the width, folded", {"a": [["- " * 70 + " "]]}),
    ("a container met twice", _shared_pair()),
    ("an empty list met twice", _shared_empty()),
    ("a mapping inside itself", _holds_itself()),
]


@pytest.mark.parametrize(("case", "document"), FAST_YAML, ids=[c for c, _ in FAST_YAML])
def test_what_render_prints_takes_the_fast_yaml_writer(case: str, document: Any) -> None:
    assert emit._yaml_document(document) == standard_yaml([document]), case


@pytest.mark.parametrize("value", [object(), type("S", (str,), {})("x")])
def test_a_value_neither_yaml_writer_takes_is_refused_as_before(value: Any) -> None:
    with pytest.raises(yaml.representer.RepresenterError):
        emit.yaml_documents([{"a": "b"}, {"a": value}])


# render writes its output in parts (a forked child writes one): the parts' texts joined
# must be the whole's.


@settings(max_examples=300)
@given(DOCUMENTS, st.lists(st.integers(min_value=0, max_value=3), max_size=3))
def test_a_yaml_stream_written_in_parts_is_the_whole_streams(
    documents: list[Any], cuts: list[int]
) -> None:
    parts = _cut(documents, cuts)
    texts = [emit.yaml_documents(p, followed=any(parts[i + 1 :])) for i, p in enumerate(parts)]
    assert "".join(texts) == standard_yaml(documents)


@settings(max_examples=300)
@given(DOCUMENTS, st.lists(st.integers(min_value=0, max_value=3), max_size=3))
def test_yaml_parts_sharing_their_tokens_are_each_parts_text(
    documents: list[Any], cuts: list[int]
) -> None:
    """yaml_parts writes each part as yaml_documents(part, followed=True) does alone: the
    scalar tokens one part learnt change no later part's text."""
    parts = _cut(documents, cuts)
    assert emit.yaml_parts(parts) == [emit.yaml_documents(p, followed=True) for p in parts]
    mappings = [[d for d in p if isinstance(d, dict)] for p in parts]
    if any(mappings):  # mappings end a stream as they end a part (what render relies on)
        assert "".join(emit.yaml_parts(mappings)) == standard_yaml(sum(mappings, []))


@settings(max_examples=300)
@given(st.lists(VALUES, max_size=6), st.lists(st.integers(min_value=0, max_value=6), max_size=3))
def test_a_json_array_written_in_parts_is_the_whole_arrays(
    items: list[Any], cuts: list[int]
) -> None:
    try:
        expected = standard(items)
    except (TypeError, ValueError):
        return
    parts = _cut(items, cuts)
    assert "".join(emit.array_pieces(emit.indented_json(p) for p in parts)) == expected


def _cut(items: list[Any], cuts: list[int]) -> list[list[Any]]:
    """``items`` cut at the given places (in order, clamped): parts may be empty."""
    at = sorted(min(c, len(items)) for c in cuts)
    bounds = [0, *at, len(items)]
    return [items[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


# Most of a fleet's distinct strings are names: their tokens are taken without PyYAML's
# scalar analysis, and must be the tokens it gives.
NAMES = st.one_of(
    st.from_regex(r"\A[A-Za-z][A-Za-z0-9_./-]{0,20}\Z"),
    st.sampled_from(["y", "n", "yes", "No", "ON", "off", "true", "False", "null", "Null", "NULL"]),
    st.sampled_from(["e5", "E1", "inf", "nan", "a---", "a...", "a/b", "x.1e5", "_a", "a:b"]),
)


@settings(max_examples=500)
@given(NAMES, st.sampled_from([emit._STR, emit._INT, emit._FLOAT, emit._BOOL, emit._NULL]))
def test_a_names_token_is_pyyamls_analysis(text: str, tag: str) -> None:
    assert emit._token(tag, text) == emit._analysed(tag, text)
    document = {text: [text, {"k": text}]}
    assert emit.yaml_documents([document]) == standard_yaml([document])


def test_a_key_of_a_str_subclass_equal_to_a_key_met_is_refused_as_before() -> None:
    key = type("S", (str,), {})("a")
    with pytest.raises(yaml.representer.RepresenterError):
        emit.yaml_documents([{"a": "b"}, {key: "b"}])
