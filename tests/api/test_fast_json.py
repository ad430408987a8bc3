"""A JSON file is read with each item parsed once where it holds only plain JSON values.

manifests reads a JSON file the fast way (each array item parsed once, the values' checks
made by the decoder's hooks) and falls back to the located reader for any file that may
hold a value json_problems refuses, and for every file json.loads refuses. These tests
pin that both give the same documents, lines and problems: on generated files (hypothesis)
and on each value where Python's json and the checks part ways (duplicate keys, integers
past int64, NaN, infinities, overflowing floats, nesting at the bound, bad grammar).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from modelplane.jsonvalues import MAX_DEPTH
from modelplane.manifests import Document, _json_documents, _read_json, _read_json_located


def _shown(items: list[Document | str]) -> str:
    """The items as text: NaN equal to itself, 1 and 1.0 and True apart."""
    return repr(
        [
            item
            if isinstance(item, str)
            else (item.file, item.line, item.content, item.problems, type(item.content))
            for item in items
        ]
    )


def _both(text: str) -> tuple[list[Document] | None, list[Document | str]]:
    """(the fast documents or None, what the file reads as), the fast ones checked."""
    fast = _json_documents("f.json", text)
    read = list(_read_json("f.json", text.encode()))
    slow = list(_read_json_located("f.json", text)) if text.strip() else []
    assert _shown(read) == _shown(slow), text
    if fast is not None:
        assert _shown(list(fast)) == _shown(slow), text
        for doc in fast:
            if doc.null_free:
                assert "null" not in json.dumps(doc.content)
    return fast, read


scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**64), 2**64)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6)
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=15,
)
spaces = st.sampled_from(["", " ", "\n", "\n  ", "\t", "\r\n", " \n\n "])


@settings(max_examples=400, deadline=None)
@given(st.lists(values, max_size=5), spaces, spaces, st.booleans(), st.integers(0, 2))
def test_generated_files_read_the_same(
    items: list[Any], before: str, between: str, array: bool, indent: int
) -> None:
    if array:
        text = (
            before
            + "["
            + ("," + between).join(json.dumps(item, indent=indent or None) for item in items)
            + between
            + "]"
            + before
        )
    else:
        text = before + json.dumps(items[0] if items else {}, indent=indent or None) + between
    _both(text)


@pytest.mark.parametrize(
    ("text", "fast"),
    [
        ('[{"a": 1}, {"b": [1, 2.5, "x"]}]', True),
        ('\n\n  {"a": {"b": null}}\n', True),
        ("[]", True),
        ("[ ]\n", True),
        ('[42, "x", [1], null]', True),
        ('{"a": -0.0, "b": 1E5, "c": 1e-300, "d": 9223372036854775807}', True),
        ('{"a": -9223372036854775808}', True),
        ('{"a": 9223372036854775808}', False),
        ('{"a": -9223372036854775809}', False),
        ('[{"a": 18446744073709551616}]', False),
        ('{"a": 1e400}', False),
        ('{"a": -1e400}', False),
        ('{"a": NaN}', False),
        ('{"a": Infinity}', False),
        ('[{"a": -Infinity}]', False),
        ('{"a": 1, "a": 2}', False),
        ('[{"x": {"a": 1, "b": 2, "a": 3}}]', False),
        ('[{"a": 1},]', False),
        ('[{"a": 1} {"b": 2}]', False),
        ('[{"a": 1}] x', False),
        ('{"a": 1} {"b": 2}', False),
        ('[{"a": 1}', False),
        ('{"a": "\\ud800"}', False),  # a lone surrogate: refused
        ('{"a": "\\ud83d\\ude00"}', False),  # a pair: read the located way, as one character
        ('{"a": "' + "9" * 5000 + '"}', True),
        ('{"a": ' + "9" * 5000 + "}", False),
        ("[" * (MAX_DEPTH - 2) + "]" * (MAX_DEPTH - 2), True),
        ("[" * MAX_DEPTH + "]" * MAX_DEPTH, True),  # the item's deepest array: depth 99
        ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), False),
        ('{"a": ' * MAX_DEPTH + "1" + "}" * MAX_DEPTH, True),
        ('{"a": ' * (MAX_DEPTH + 1) + "1" + "}" * (MAX_DEPTH + 1), False),
        ('{"a": ' * MAX_DEPTH + "{}" + "}" * MAX_DEPTH, False),  # an empty one counts
        ("[" + json.dumps({"status": [{"n": [i]} for i in range(200)]}) + "]", True),
        ("[" * 100_000, False),
    ],
)
def test_hand_written_files_read_the_same(text: str, fast: bool) -> None:
    found, _ = _both(text)
    assert (found is not None) == fast


def test_a_byte_order_mark_and_lines_of_array_items() -> None:
    text = '\ufeff[\n  {"a": 1},\n\n  {"b": null}\n]\n'
    read = list(_read_json("f.json", text.encode("utf-8")))
    assert [(d.line, d.null_free) for d in read if isinstance(d, Document)] == [
        (2, True),
        (4, False),
    ]


@pytest.mark.parametrize("levels", range(MAX_DEPTH - 4, MAX_DEPTH + 3))
@pytest.mark.parametrize("array", [True, False])
def test_nesting_at_the_bound_reads_the_same(levels: int, array: bool) -> None:
    """Items with as many brackets as the bound are measured: refused exactly where the
    located reader refuses them, read fast where it reads them."""
    deep: Any = {}
    for index in range(levels - 1):
        deep = [deep] if index % 2 else {"k": deep, "n": [1]}
    text = json.dumps([{"x": 1}, deep] if array else deep)
    found, read = _both(text)
    refused = any(isinstance(item, str) for item in read)
    assert (found is None) == refused
