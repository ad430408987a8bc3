"""validate never raises, whatever it is fed; every valid document becomes a typed object."""

from __future__ import annotations

import copy
import os
import tempfile
from typing import Any

import yaml
from api_helpers import EXAMPLES
from hypothesis import given, settings
from hypothesis import strategies as st

from modelplane.api.validation import Problem, validate_document
from modelplane.manifests import load, read_file

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=True),
    st.text(max_size=20),
    st.sampled_from(
        ["ModelDeployment", "InferenceCluster", "modelplane.ai/v1alpha1", "engine", "Worker"]
    ),
)
KEYS = st.one_of(
    st.text(max_size=12),
    st.sampled_from(
        ["apiVersion", "kind", "metadata", "spec", "name", "template", "engines", "members"]
    ),
    st.integers(),
    st.booleans(),
)
JSONISH = st.recursive(
    SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(KEYS, children, max_size=5)
    ),
    max_leaves=30,
)


def example_documents() -> list[dict[str, Any]]:
    return [o.raw for o in load([str(EXAMPLES)]).objects]


EXAMPLE_DOCS = example_documents()


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            found += paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += paths(child, (*prefix, index))
    return found


def replace(document: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    clone = copy.deepcopy(document)
    node = clone
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return clone


def check(document: Any) -> None:
    result = validate_document(document)
    assert all(isinstance(p, Problem) for p in result.problems)
    assert isinstance(result.object_ref(), str)
    if result.ok:
        assert result.model is not None
        assert result.model.to_wire()["kind"] == result.info.kind  # type: ignore[union-attr]


@settings(max_examples=300, deadline=None)
@given(JSONISH)
def test_garbage_never_raises(document: Any) -> None:
    check(document)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(range(len(EXAMPLE_DOCS))), st.data(), JSONISH)
def test_mutated_examples_never_raise(index: int, data: st.DataObject, value: Any) -> None:
    document = EXAMPLE_DOCS[index]
    path = data.draw(st.sampled_from(paths(document)))
    check(replace(document, path, value))


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(range(len(EXAMPLE_DOCS))), st.data())
def test_examples_without_one_field_never_raise(index: int, data: st.DataObject) -> None:
    document = copy.deepcopy(EXAMPLE_DOCS[index])
    path = data.draw(st.sampled_from(paths(document)[1:]))
    node = document
    for part in path[:-1]:
        node = node[part]
    del node[path[-1]]
    check(document)


@settings(max_examples=200, deadline=None)
@given(
    st.text(alphabet=st.sampled_from(list("ab:-[]{}'\"#&*!|>%@ \n\t,?.0123456789")), max_size=80)
)
def test_yaml_text_never_raises(text: str) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "x.yaml")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        for item in read_file(path):
            if not isinstance(item, str):
                check(item.content)
        load([path])


def test_recursive_yaml_alias_does_not_crash() -> None:
    document = yaml.safe_load("&a [*a]")
    check({"apiVersion": "modelplane.ai/v1alpha1", "kind": "ModelDeployment", "spec": document})


NAMES = st.from_regex(r"\A[a-z]([-a-z0-9]{0,20}[a-z0-9])?\Z")


@st.composite
def deployments(draw: st.DrawFn) -> dict[str, Any]:
    """Valid ModelDeployments: random shapes within every bound and rule."""
    engine_names = draw(st.lists(NAMES, min_size=1, max_size=8, unique=True))
    multi = draw(st.booleans())
    engines = []
    for name in engine_names:
        roles = ["Leader", "Worker"] if multi and draw(st.booleans()) else ["Standalone"]
        members = []
        for role in roles:
            member: dict[str, Any] = {
                "role": role,
                "template": {
                    "spec": {
                        "containers": [
                            {"name": "engine", "image": draw(st.text(min_size=1, max_size=10))}
                        ]
                    }
                },
            }
            if role == "Worker":
                member["worker"] = {"nodes": draw(st.integers(1, 63))}
            if role != "Worker" or draw(st.booleans()):
                member["nodeSelector"] = {
                    "devices": [
                        {
                            "name": "gpu",
                            "count": draw(st.integers(1, 64)),
                            "selectors": [{"cel": 'device.driver == "gpu.nvidia.com"'}],
                        }
                    ]
                }
            members.append(member)
        if all("nodeSelector" not in m for m in members):
            members[0]["nodeSelector"] = members[-1].get("nodeSelector") or {
                "devices": [{"name": "gpu", "selectors": [{"cel": "true"}]}]
            }
        engines.append({"name": name, "copies": draw(st.integers(1, 64)), "members": members})
    spec: dict[str, Any] = {"engines": engines}
    if multi:
        spec["modelCacheRef"] = {"name": draw(NAMES)}
    if draw(st.booleans()):
        spec["tolerations"] = [{"key": draw(NAMES), "operator": "Exists"}]
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelDeployment",
        "metadata": {"name": draw(NAMES), "namespace": draw(NAMES)},
        "spec": {"replicas": draw(st.integers(0, 100)), "template": {"spec": spec}},
    }


@settings(max_examples=100, deadline=None)
@given(deployments())
def test_valid_deployments_become_typed_objects(document: dict[str, Any]) -> None:
    result = validate_document(document)
    assert result.problems == []
    assert result.model is not None
    wire = result.model.to_wire()
    assert wire["spec"]["replicas"] == document["spec"]["replicas"]
    assert len(wire["spec"]["template"]["spec"]["engines"]) == len(
        document["spec"]["template"]["spec"]["engines"]
    )
