"""The compiled validation gives a plain schema walker's answers, cold and warm.

validate_document reads each kind's schema through one tree compiled once: fast
verdicts remembered by content, and, from the same compiled nodes, a located walk that
names the problems of a refused document. Here a reference built from a plain walk of
the schema dict (tests/api/validation_reference.py: prune and default, structure,
rules) must give the same problems in the same order, the same defaulted document (key
order too) and the same typed object, for mutated examples and arbitrary values, twice
over (the second time every remembered verdict is warm), and after the memos are cleared.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_api_fuzz import EXAMPLE_DOCS, JSONISH, paths, replace
from validation_reference import apply_defaults, check_root, check_rules, rule_holds

from modelplane import memo
from modelplane.api import validation as v
from modelplane.api.kinds import KIND_BY_NAME
from modelplane.api.openapi import validator_schema
from modelplane.cel import compile_rule
from tests.builders import replica_labels, seed_replica_engine


def reference(raw: Any) -> tuple[list[v.Problem], str, str | None]:
    """(problems, defaulted JSON, typed object's JSON) by the located steps only (docs/api.md, "The
    steps (`validate_document`)").
    """
    doc = v._normalize(raw)
    if not isinstance(doc, dict):
        return [v.Problem("", "document is not an object")], "{}", None
    problems = v._check_identity(doc)
    info = KIND_BY_NAME.get(doc.get("kind")) if isinstance(doc.get("kind"), str) else None
    if problems or info is None:
        return problems, json.dumps(doc), None
    schema = validator_schema(info.model)
    apply_defaults(schema, doc)
    v._default_namespace(doc, info)
    problems = check_root(schema, doc, info) or check_rules(schema, doc, "")
    typed = None if problems else json.dumps(info.model.model_validate(doc).to_wire())
    return problems, json.dumps(doc), typed


def fast(raw: Any, null_free: bool = False) -> tuple[list[v.Problem], str, str | None]:
    result = v.validate_document(copy.deepcopy(raw), null_free=null_free)
    typed = None if result.model is None else json.dumps(result.model.to_wire())
    return result.problems, json.dumps(result.defaulted), typed


def has_null_member(value: Any) -> bool:
    if isinstance(value, dict):
        return None in value.values() or any(has_null_member(item) for item in value.values())
    return isinstance(value, list) and any(has_null_member(item) for item in value)


def same_both_ways(raw: Any) -> None:
    expected = reference(copy.deepcopy(raw))
    assert fast(raw) == expected  # cold or warm, depending on what ran before
    assert fast(raw) == expected  # warm: every verdict of this document remembered
    if not has_null_member(raw):  # what the fast reader may say of a file (null_free)
        assert fast(raw, null_free=True) == expected


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(range(len(EXAMPLE_DOCS))), st.data(), JSONISH)
def test_mutated_examples_get_the_located_answer(
    index: int, data: st.DataObject, value: Any
) -> None:
    document = EXAMPLE_DOCS[index]
    path = data.draw(st.sampled_from(paths(document)))
    same_both_ways(replace(document, path, value))


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(range(len(EXAMPLE_DOCS))), st.data(), JSONISH)
def test_the_located_walks_alone_name_what_the_reference_names(
    index: int, data: st.DataObject, value: Any
) -> None:
    """Without the fast verdicts in front: each compiled tree's located walk names the
    reference's problems, in its order, and its fast verdict is "clean" exactly when the
    walk names nothing."""
    document = EXAMPLE_DOCS[index]
    path = data.draw(st.sampled_from(paths(document)[1:]))
    doc = v._normalize(replace(document, path, value))
    info = KIND_BY_NAME.get(doc.get("kind")) if isinstance(doc.get("kind"), str) else None
    if v._check_identity(doc) or info is None:
        return
    schema = validator_schema(info.model)
    apply_defaults(schema, doc)
    v._default_namespace(doc, info)
    compiled = v._compiled_kind(info.kind)
    located = compiled.shape.locate(doc, info)
    assert located == check_root(schema, doc, info)
    assert compiled.shape.clean(doc, info, {}) == (not located)
    located_rules = compiled.rules.locate(doc)
    assert located_rules == check_rules(schema, doc, "")
    if not located:
        assert compiled.rules.holds(doc, {}) == (not located_rules)


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
        assert fast(document)[2] is not None


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


def _replica(cluster: str, name: str = "r-0") -> dict[str, Any]:
    """The seed's replica, pinned to ``cluster``."""
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelReplica",
        "metadata": {
            "name": name,
            "namespace": "ml-team",
            "labels": replica_labels(cluster=cluster),
        },
        "spec": {"clusterName": cluster, "engines": [seed_replica_engine()]},
    }


def test_equal_specs_share_one_typed_spec_of_equal_content() -> None:
    """Replicas with one spec share its typed object; another spec gets its own."""
    memo.clear_all()
    first = v.validate_document(_replica("us-east-1", "a"))
    second = v.validate_document(_replica("us-east-1", "b"))
    other = v.validate_document(_replica("eu-west-1", "c"))
    assert first.model is not None and second.model is not None and other.model is not None
    assert second.model.spec is first.model.spec  # type: ignore[attr-defined]
    assert second.model.metadata.name == "b"  # type: ignore[attr-defined]
    assert other.model.spec is not first.model.spec  # type: ignore[attr-defined]
    assert other.model.spec.cluster_name == "eu-west-1"  # type: ignore[attr-defined]


def test_a_rule_verdict_is_shared_by_what_the_rule_reads_and_still_refuses() -> None:
    """Specs that differ by cluster share the verdict of rules that do not read the cluster;
    a spec that differs where a rule reads is judged on its own, warm or cold."""
    memo.clear_all()
    for index in range(5):
        assert v.validate_document(_replica(f"cluster-{index}", f"r-{index}")).ok
    broken = _replica("cluster-0", "broken")
    broken["spec"]["serving"] = {"mode": "PrefillDecode"}  # one engine: the spec rules fail
    expected = reference(copy.deepcopy(broken))
    assert expected[0]
    assert fast(broken) == expected
    memo.clear_all()
    assert fast(broken) == expected


def test_every_rule_of_the_api_is_read_from_its_ast() -> None:
    """The API's own rules all parse, and none reads a field through a CEL escape."""
    from modelplane.api.base import RULES

    for rule in RULES.values():
        reads = v.rule_reads([rule.rule])
        assert reads is not None, rule.id
        assert all("__" not in name for name in reads.fields), rule.id


def _key(rules: list[str], value: Any) -> bytes:
    return v.content_key(v.projection(v.rule_reads(rules))(value))


_CONTAINER = {"name": "engine", "image": "vllm", "args": ["--model", "a"]}


@pytest.mark.parametrize(
    ("rules", "value", "alike", "unlike"),
    [
        # A macro's variable reads a field of each item: the items' other fields are unread.
        (
            ["self.exists_one(c, c.name == 'engine')"],
            [_CONTAINER],
            [{**_CONTAINER, "args": ["--model", "b"]}],
            [{**_CONTAINER, "name": "sidecar"}],
        ),
        # has() reads whether the field is there, not what it holds.
        (
            ["has(self.template.spec)"],
            {"template": {"spec": {"a": 1}}, "role": "x"},
            {"template": {"spec": {"a": 2}}, "role": "y"},
            {"template": {"other": {"a": 1}}},
        ),
        # size() reads the length only, of a list or of a string (its code points).
        (["size(self.engines) == 2"], {"engines": [1, 2]}, {"engines": [3, 4]}, {"engines": [1]}),
        (
            ["self.metadata.name.size() <= 3"],
            {"metadata": {"name": "abc", "uid": "1"}},
            {"metadata": {"name": "xyé"}},
            {"metadata": {"name": "abcd"}},
        ),
        (["size(self.a) == 1 && self.a == 'b'"], {"a": "b"}, {"a": "b"}, {"a": "c"}),
        # An index by a constant reads the items as a macro does (and the length).
        (
            ["self.members[0].role == 'Standalone'"],
            {"members": [{"role": "Standalone", "x": 1}]},
            {"members": [{"role": "Standalone", "x": 2}]},
            {"members": [{"role": "Standalone"}, {"role": "Standalone"}]},
        ),
        # A macro's own self is its item; the rule's self outside it is still the object.
        (
            ["self.items.all(self, self > 0) && self.a == 1"],
            {"items": [1], "a": 1, "b": 1},
            {"items": [1], "a": 1, "b": 2},
            {"items": [2], "a": 1},
        ),
        # A map's keys are read by a macro over it: the map is read whole.
        (["self.all(k, k != 'a')"], {"b": 1}, {"b": 1}, {"b": 2}),
        # Kept whole: self itself used, an escaped field name, a rule that does not parse.
        (["self.items.map(x, self).size() == 1"], {"items": [1]}, {"items": [1]}, {"z": 1}),
        (["self.a__dash__b == 1"], {"a-b": 1, "c": 1}, {"a-b": 1, "c": 1}, {"a-b": 1, "c": 2}),
        (["self.a +"], {"a": 1}, {"a": 1}, {"a": 1, "b": 2}),
        # A value of another shape than the rule expects is kept whole.
        (["self.a.b == 1"], {"a": [1, 2]}, {"a": [1, 2]}, {"a": [1, 3]}),
        (["size(self.a) == 1"], {"a": {"k": 1}}, {"a": {"k": 1}}, {"a": {"k": 2}}),
    ],
)
def test_a_rule_verdict_is_keyed_by_what_the_rule_reads(
    rules: list[str], value: Any, alike: Any, unlike: Any
) -> None:
    """Values that differ only where the rules cannot read share a key; values that
    differ where they read do not."""
    assert _key(rules, value) == _key(rules, alike)
    assert _key(rules, value) != _key(rules, unlike)


def _rule_sites(schema: Any, value: Any, found: list[tuple[str, Any]]) -> None:
    """Every (rule, value it is checked on) of a document, below its root."""
    for entry in schema.get("x-kubernetes-validations", []):
        if not v._is_transition_rule(entry["rule"]):
            found.append((entry["rule"], value))
    if isinstance(value, dict):
        properties = schema.get("properties")
        extra = schema.get("additionalProperties")
        for name, item in value.items():
            if properties is not None and name in properties:
                _rule_sites(properties[name], item, found)
            elif properties is None and isinstance(extra, dict):
                _rule_sites(extra, item, found)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            _rule_sites(schema["items"], item, found)


def _example_rule_sites() -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    for document in EXAMPLE_DOCS:
        schema = validator_schema(KIND_BY_NAME[document["kind"]].model)
        for name in ("spec", "status"):
            if name in document:
                _rule_sites(schema["properties"][name], document[name], found)
    return found


_RULE_SITES = _example_rule_sites()


_REPRESENTS = compile_rule("true")
"""Holds exactly on a value the engine can represent (not a lone surrogate, not a NUL key)."""


@settings(max_examples=500, deadline=None)
@given(st.sampled_from(range(len(_RULE_SITES))), st.data(), JSONISH)
def test_a_rule_holds_on_what_it_reads_as_on_the_whole_value(
    index: int, data: st.DataObject, new: Any
) -> None:
    """Every rule of the examples, on its value changed anywhere: judged on what it reads
    (the memo's key and the engine's input), it holds exactly when it holds on the whole
    value; values keyed alike get one verdict."""
    text, value = _RULE_SITES[index]
    path = data.draw(st.sampled_from(paths(value)))
    changed = v._normalize(replace(value, path, new))  # a JSON value, as validation has it
    compiled = v._compiled(text)
    assert compiled is not None
    if _REPRESENTS.evaluate(changed):  # else only what the rule reads must be representable
        assert rule_holds(text, changed) == compiled.evaluate(changed)
    assert _key([text], copy.deepcopy(changed)) == _key([text], changed)
    if _key([text], changed) == _key([text], value):
        assert rule_holds(text, changed) == rule_holds(text, value)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(range(len(EXAMPLE_DOCS))), st.data(), JSONISH)
def test_bodies_keyed_alike_get_one_verdict_of_all_their_rules(
    index: int, data: st.DataObject, new: Any
) -> None:
    """A spec or status changed anywhere: when what its rules and selectors read is
    unchanged (the key of its verdict as a whole), the located walk of its rules names the
    same problems, or none on both."""
    document = EXAMPLE_DOCS[index]
    rules = v._compiled_kind(document["kind"]).rules
    for name in ("spec", "status"):
        if name not in document or name not in rules.fields:
            continue
        body, sub = document[name], rules.fields[name]
        changed = v._normalize(replace(body, data.draw(st.sampled_from(paths(body))), new))
        if v.content_key(sub.project_all(changed)) != v.content_key(sub.project_all(body)):
            continue
        before: list[v.Problem] = []
        after: list[v.Problem] = []
        sub.locate(body, v._Path(None, name), before)
        sub.locate(changed, v._Path(None, name), after)
        assert after == before


def test_a_body_is_keyed_by_what_its_rules_read() -> None:
    """Replicas differing by their engine's arguments share a key; by a member's role not."""
    sub = v._compiled_kind("ModelReplica").rules.fields["spec"]
    first = _replica("cluster-0")["spec"]
    args = copy.deepcopy(first)
    args["engines"][0]["members"][0]["template"]["spec"]["containers"][0]["args"] = ["--x"]
    role = copy.deepcopy(first)
    role["engines"][0]["members"][0]["role"] = "Leader"
    assert v.content_key(sub.project_all(args)) == v.content_key(sub.project_all(first))
    assert v.content_key(sub.project_all(role)) != v.content_key(sub.project_all(first))


def test_a_value_the_engine_cannot_hold_fails_a_rule_only_where_the_rule_reads_it() -> None:
    """A lone surrogate (a JSON file may spell one) where a rule does not read is no
    failure of that rule; where it reads, the rule fails."""
    rule = "self.source != 'Existing' || has(self.existing)"
    unread = {"source": "Existing", "existing": {"secretRef": {"name": "k\ud800"}}}
    assert rule_holds(rule, unread)
    assert not rule_holds(rule, {"source": "Existing\ud800"})


def test_the_examples_rules_are_read_in_part() -> None:
    """Not vacuous: most example rules read less than their whole value."""
    parts = [v.rule_reads([text]) for text in {text for text, _ in _RULE_SITES}]
    assert sum(1 for reads in parts if reads is not None and not reads.whole) >= len(parts) // 2


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(_JSON_VALUES, _JSON_VALUES)
def test_equal_content_keys_mean_equal_values(first: Any, second: Any) -> None:
    """A content key tells values apart that == does not (1, 1.0, True; key order)."""
    same = v.content_key(first) == v.content_key(second)
    written_alike = repr(first) == repr(second)
    assert same == written_alike
    assert v.content_key(copy.deepcopy(first)) == v.content_key(first)


def test_a_value_marshal_cannot_write_is_keyed_by_its_text() -> None:
    """Not a JSON value (a caller's own object): keyed by its repr, apart from every JSON key."""

    class Odd:
        def __repr__(self) -> str:
            return "Odd()"

    assert v.content_key([Odd()]) == b"r[Odd()]"
    assert v.content_key([Odd()]) != v.content_key(["Odd()"])


def test_a_document_nested_past_every_walker_is_refused_whole() -> None:
    deep: Any = "leaf"
    for _ in range(3000):
        deep = [deep]
    document = {"apiVersion": "modelplane.ai/v1alpha1", "kind": "ModelReplica", "spec": deep}
    assert v.validate_document(document, owned=True).problems == [
        v.Problem("", "document nests too deeply")
    ]


def test_a_site_that_keeps_missing_is_keyed_again_after_a_pause_with_the_same_verdicts() -> None:
    """Values that never repeat stop being keyed for a while (each still judged, so the
    verdicts are the same); values that repeat stay keyed."""
    memo.clear_all()
    judged: list[Any] = []

    def check(value: Any) -> bool:
        judged.append(value)
        return bool(value[0] % 2)

    clean = v._remembered(check, "Test", "spec.differs")
    window, pause = v._HitRate.WINDOW, v._HitRate.PAUSE
    values = [[index] for index in range(window + pause - 1)]  # one paused value left
    assert [clean(value) for value in values] == [bool(index % 2) for index in range(len(values))]
    assert len(judged) == len(values)  # nothing repeated: every value judged
    before = v._VERDICTS.stats()
    assert clean(values[-1]) is bool((len(values) - 1) % 2)  # paused: judged, not looked up
    assert v._VERDICTS.stats().misses == before.misses
    assert clean(values[0]) is False  # keyed again: remembered from the first window
    assert v._VERDICTS.stats().hits == before.hits + 1

    judged.clear()
    repeating = v._remembered(check, "Test", "spec.repeats")
    for _ in range(window + 10):
        assert repeating([1, 2])
    assert len(judged) == 1  # keyed all along: judged once
