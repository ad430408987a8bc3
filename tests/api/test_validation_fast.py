"""The compiled validation (issue 16) gives the located walkers' answers, cold and warm.

validate_document decides with closures compiled once per kind and with verdicts
remembered by content, and walks the located checks only to name problems. Here a
reference built from the located steps alone (prune and default, structure, rules) must
give the same problems in the same order, the same defaulted document (key order too)
and the same typed object, for mutated examples and arbitrary values, twice over (the
second time every remembered verdict is warm), and after the memos are cleared.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from test_api_fuzz import EXAMPLE_DOCS, JSONISH, paths, replace

from modelplane import memo
from modelplane.api import validation as v
from modelplane.api.kinds import KIND_BY_NAME
from modelplane.api.openapi import validator_schema


def reference(raw: Any) -> tuple[list[v.Problem], str, bool]:
    """(problems, defaulted JSON, typed) by the located steps only (api.md §0.2)."""
    doc = v._normalize(raw)
    if not isinstance(doc, dict):
        return [v.Problem("", "document is not an object")], "{}", False
    problems = v._check_identity(doc)
    info = KIND_BY_NAME.get(doc.get("kind")) if isinstance(doc.get("kind"), str) else None
    if problems or info is None:
        return problems, json.dumps(doc), False
    schema = validator_schema(info.model)
    v._apply_defaults(schema, doc)
    v._default_namespace(doc, info)
    problems = v._check_root(schema, doc, info) or v._check_rules(schema, doc, "")
    return problems, json.dumps(doc), not problems


def fast(raw: Any) -> tuple[list[v.Problem], str, bool]:
    result = v.validate_document(copy.deepcopy(raw))
    return result.problems, json.dumps(result.defaulted), result.model is not None


def same_both_ways(raw: Any) -> None:
    expected = reference(copy.deepcopy(raw))
    assert fast(raw) == expected  # cold or warm, depending on what ran before
    assert fast(raw) == expected  # warm: every verdict of this document remembered


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(range(len(EXAMPLE_DOCS))), st.data(), JSONISH)
def test_mutated_examples_get_the_located_answer(
    index: int, data: st.DataObject, value: Any
) -> None:
    document = EXAMPLE_DOCS[index]
    path = data.draw(st.sampled_from(paths(document)))
    same_both_ways(replace(document, path, value))


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(range(len(EXAMPLE_DOCS))), st.data())
def test_examples_with_a_null_or_without_a_field_get_the_located_answer(
    index: int, data: st.DataObject
) -> None:
    document = EXAMPLE_DOCS[index]
    path = data.draw(st.sampled_from(paths(document)[1:]))
    same_both_ways(replace(document, path, None))  # pruned, then perhaps defaulted
    without = copy.deepcopy(document)
    node = without
    for part in path[:-1]:
        node = node[part]
    del node[path[-1]]
    same_both_ways(without)


def test_every_example_is_valid_cold_and_warm() -> None:
    memo.clear_all()
    for document in EXAMPLE_DOCS:
        same_both_ways(document)
        assert fast(document)[2]


def test_a_string_spelling_none_takes_the_full_walk() -> None:
    """The null check reads the spec's text: a name with None in it costs a walk, no change."""
    for document in EXAMPLE_DOCS:
        if "spec" in document and isinstance(document["spec"], dict):
            mutated = copy.deepcopy(document)
            mutated["spec"]["zNone"] = None
            same_both_ways(mutated)
            mutated["spec"]["zNone"] = "None"
            same_both_ways(mutated)


def test_equal_specs_share_a_verdict_but_not_a_defaulted_object() -> None:
    """Two documents with one spec: each is defaulted on its own (no shared containers)."""
    document = next(d for d in EXAMPLE_DOCS if d["kind"] == "ModelDeployment")
    first = v.validate_document(copy.deepcopy(document))
    second = v.validate_document(copy.deepcopy(document))
    assert first.ok and second.ok
    assert first.defaulted == second.defaulted
    assert first.defaulted["spec"] is not second.defaulted["spec"]


@settings(max_examples=200, deadline=None)
@given(JSONISH)
def test_arbitrary_values_get_the_located_answer(value: Any) -> None:
    same_both_ways(value)
    same_both_ways({"apiVersion": "modelplane.ai/v1alpha1", "kind": "ModelReplica", "spec": value})
