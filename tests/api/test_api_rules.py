"""The rules: declared once, compiled by the CEL engine, identical to api.md."""

from __future__ import annotations

import re
from typing import Any

import pytest
from api_helpers import REPO, shared_path
from hypothesis import given, settings
from hypothesis import strategies as st

from modelplane.api import RULES
from modelplane.cel import CompiledRule, compile_rule


def test_rule_count() -> None:
    # MD-01..42, MR-01..06, ICL-01..10, IC-01..16, MC-01
    assert len(RULES) == 42 + 6 + 10 + 16 + 1


@pytest.mark.parametrize("rule_id", sorted(RULES))
def test_rule_compiles(rule_id: str) -> None:
    rule = RULES[rule_id]
    if "oldSelf" in rule.rule:
        pytest.skip("transition rule: validate never evaluates it")
    compile_rule(rule.rule)


def _rule_blocks(text: str) -> dict[str, tuple[str, str]]:
    """``ID at: ... / rule: ... / message: ...`` entries of the fenced blocks of a markdown text."""
    found: dict[str, tuple[str, str]] = {}
    for block in re.findall(r"```\n(.*?)```", text, re.S):
        entries = re.split(r"^(?=[A-Z]+-\d)", block, flags=re.M)
        for entry in entries:
            match = re.match(
                r"([A-Z]+-\d+)\s+at:.*?\n\s+rule:\s+(.*?)\n\s+message: (.*?)\n", entry + "\n", re.S
            )
            if match and ".." not in entry.split()[0]:
                found[match.group(1)] = (match.group(2), match.group(3))
    return found


def _spec_rules() -> dict[str, tuple[str, str]]:
    return _rule_blocks(shared_path("spec", "api.md").read_text(encoding="utf-8"))


def _docs_section(heading: str) -> str:
    """The text of one ``###`` section of docs/api.md."""
    text = (REPO / "docs" / "api.md").read_text(encoding="utf-8")
    return text.split(f"### {heading}\n", 1)[1].split("\n#", 1)[0]


def _superseding_rules() -> dict[str, tuple[str, str]]:
    """The rule texts docs/api.md records as replacing the spec's."""
    return _rule_blocks(_docs_section("Rules that supersede the spec"))


def _added_rules() -> dict[str, tuple[str, str]]:
    """The rules docs/api.md records as this project's own, absent from the spec."""
    return _rule_blocks(_docs_section("Rules this project adds"))


def test_rules_match_api_md_character_for_character() -> None:
    spec = _spec_rules() | _superseding_rules() | _added_rules()
    assert len(spec) >= 50 and "IC-12" in spec
    for rule_id, (rule, message) in spec.items():
        assert RULES[rule_id].rule == rule, rule_id
        assert RULES[rule_id].message == message, rule_id


def test_superseding_rules_really_differ_from_the_spec() -> None:
    """docs/api.md lists a rule only where its text changed, never its message."""
    spec, docs = _spec_rules(), _superseding_rules()
    assert docs, "docs/api.md lists no superseding rule"
    for rule_id, (rule, message) in docs.items():
        assert rule_id in spec, rule_id
        assert spec[rule_id][0] != rule, f"{rule_id} is listed in docs/api.md unchanged"
        assert spec[rule_id][1] == message, rule_id


def test_added_rules_are_new() -> None:
    """docs/api.md lists as added only rules the spec does not have."""
    added = _added_rules()
    assert added
    assert set(added) & set(_spec_rules()) == set()


def test_ranged_rules_follow_their_pattern() -> None:
    for i, (value, block) in enumerate(
        [("GKE", "gke"), ("EKS", "eks"), ("AKS", "aks"), ("Nebius", "nebius"), ("Vultr", "vultr")]
    ):
        icl = RULES[f"ICL-0{i + 1}"]
        assert icl.rule == f"self.provider != '{value}' || has(self.{block})"
        assert (
            icl.message
            == f"spec.provisioning.{block} is required when spec.provisioning.provider is {value}."
        )
        ic = RULES[f"IC-0{i + 3}"]
        assert ic.rule == f"self.source != '{value}' || has(self.{block})"
        assert (
            ic.message == f"spec.cluster.{block} is required when spec.cluster.source is {value}."
        )
    for offset in range(4):
        top, member = RULES[f"MD-{2 + offset:02d}"], RULES[f"MD-{22 + offset:02d}"]
        assert member.rule == top.rule and member.message == "member " + top.message
    for offset in range(4):
        replica, deployment = RULES[f"MR-0{1 + offset}"], RULES[f"MD-0{6 + offset}"]
        assert (replica.rule, replica.message) == (deployment.rule, deployment.message)


# --- MD-42: the superseding text decides as the spec's text did (docs/api.md)

_PORT_NUMBERS = (8000, 8080, 9000)
_PORT_LISTS = st.one_of(
    st.none(),
    st.just([]),
    st.sampled_from(_PORT_NUMBERS).map(lambda n: [{"name": "http", "containerPort": n}]),
    st.just([{"name": "metrics", "containerPort": 9400}]),
    st.sampled_from(_PORT_NUMBERS).map(lambda n: [{"containerPort": n}]),
    st.sampled_from(_PORT_NUMBERS).map(
        lambda n: [{"name": "metrics", "containerPort": 9400}, {"name": "http", "containerPort": n}]
    ),
)


def _container(name: str, ports: list[dict[str, Any]] | None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": name, "image": "vllm/vllm-openai:v0.23.0"}
    if ports is not None:
        container["ports"] = ports
    return container


@st.composite
def _member(draw: st.DrawFn, role: str) -> dict[str, Any]:
    containers = [_container("engine", draw(_PORT_LISTS))]
    if draw(st.booleans()):  # a sidecar's http port is not the engine's
        containers.insert(draw(st.integers(0, 1)), _container("sidecar", draw(_PORT_LISTS)))
    return {"role": role, "template": {"spec": {"containers": containers}}}


@st.composite
def _engine(draw: st.DrawFn, index: int) -> dict[str, Any]:
    shape = draw(st.sampled_from([["Standalone"], ["Leader", "Worker"], ["Worker", "Leader"]]))
    return {"name": f"e{index}", "members": [draw(_member(role)) for role in shape]}


@st.composite
def _template_spec(draw: st.DrawFn) -> dict[str, Any]:
    """A spec.template.spec every other rule accepts (MD-16, MD-28, MD-31 hold)."""
    count = draw(st.integers(1, 4))
    spec: dict[str, Any] = {"engines": [draw(_engine(i)) for i in range(count)]}
    serving = draw(st.sampled_from([None, "Unified", "PrefillDecode"]))
    if serving is not None:
        spec["serving"] = {"mode": serving}
    return spec


def _spec_md42() -> CompiledRule:
    return compile_rule(_spec_rules()["MD-42"][0])


@settings(max_examples=300, deadline=None)
@given(_template_spec())
def test_md42_agrees_with_the_spec_text(spec: dict[str, Any]) -> None:
    assert RULES["MD-42"].rule != _spec_rules()["MD-42"][0]
    assert compile_rule(RULES["MD-42"].rule).evaluate(spec) == _spec_md42().evaluate(spec)


def _one_engine(name: str, ports: list[dict[str, Any]] | None, worker_port: int = 0) -> Any:
    members = [
        {
            "role": "Leader" if worker_port else "Standalone",
            "template": {"spec": {"containers": [_container("engine", ports)]}},
        }
    ]
    if worker_port:
        http = [{"name": "http", "containerPort": worker_port}]
        members.insert(
            0,
            {"role": "Worker", "template": {"spec": {"containers": [_container("engine", http)]}}},
        )
    return {"name": name, "members": members}


@pytest.mark.parametrize(
    ("engines", "holds"),
    [
        (
            [_one_engine("a", None), _one_engine("b", [{"name": "http", "containerPort": 8000}])],
            True,
        ),
        (
            [_one_engine("a", None), _one_engine("b", [{"name": "http", "containerPort": 8200}])],
            False,
        ),
        ([_one_engine("a", [{"containerPort": 8200}]), _one_engine("b", None)], True),
        ([_one_engine("a", None), _one_engine("b", None, worker_port=9000)], True),
        (
            [
                _one_engine("a", [{"name": "http", "containerPort": 8080}]),
                _one_engine("b", [{"name": "http", "containerPort": 8080}], worker_port=9000),
                _one_engine("c", [{"name": "http", "containerPort": 8000}]),
            ],
            False,
        ),
    ],
    ids=[
        "default-equals-8000",
        "8000-vs-8200",
        "unnamed-port-is-not-http",
        "worker-ignored",
        "third-engine-differs",
    ],
)
def test_md42_table(engines: list[Any], holds: bool) -> None:
    spec = {"engines": engines}
    assert compile_rule(RULES["MD-42"].rule).evaluate(spec) is holds
    assert compile_rule(RULES["MD-42"].rule).evaluate(
        {**spec, "serving": {"mode": "PrefillDecode"}}
    )
