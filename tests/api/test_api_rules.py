"""The rules: declared once, compiled by the CEL engine, identical to api.md."""

from __future__ import annotations

import re

import pytest
from api_helpers import shared_path

from modelplane.api import RULES
from modelplane.cel import compile_rule


def test_rule_count() -> None:
    # MD-01..42, MR-01..06, ICL-01..09, IC-01..11, MC-01
    assert len(RULES) == 42 + 6 + 9 + 11 + 1


@pytest.mark.parametrize("rule_id", sorted(RULES))
def test_rule_compiles(rule_id: str) -> None:
    rule = RULES[rule_id]
    if "oldSelf" in rule.rule:
        pytest.skip("transition rule: validate never evaluates it")
    compile_rule(rule.rule)


def _spec_rules() -> dict[str, tuple[str, str]]:
    text = shared_path("spec", "api.md").read_text(encoding="utf-8")
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


def test_rules_match_api_md_character_for_character() -> None:
    spec = _spec_rules()
    assert len(spec) >= 50
    for rule_id, (rule, message) in spec.items():
        assert RULES[rule_id].rule == rule, rule_id
        assert RULES[rule_id].message == message, rule_id


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
