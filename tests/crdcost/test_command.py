"""``python -m tools.crdcost``, the check ``make package`` runs on the generated XRDs.

It passes on the package and fails, naming the CRD, the field path and the estimated cost
against the target, on a CRD the API server would refuse or that leaves less than half of
its limits free (docs/crd-cost.md).
"""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelplane.api.crds import render_xrds, xrds
from tests.paths import REPO
from tools.crdcost.budget import CRD_TARGET, RULE_TARGET, problems
from tools.crdcost.check import main
from tools.crdcost.estimate import MAX_COST, RuleCost, VersionCost

DEFINITIONS = sorted(
    str(p) for p in (REPO / "package/configuration/apis").glob("*/definition.yaml")
)


def crd(spec: dict[str, Any], name: str = "widgets.example.org") -> dict[str, Any]:
    """A one-version CRD whose ``spec`` has the given schema."""
    plural = name.partition(".")[0]
    schema = {"type": "object", "properties": {"spec": spec}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": name},
        "spec": {
            "group": name.partition(".")[2],
            "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": plural, "singular": plural},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                }
            ],
        },
    }


def _bounded(length: int) -> dict[str, Any]:
    return {"type": "string", "maxLength": length}


# `contains` costs a tenth of target x argument: 4,000,004 on two 5,000-character strings,
# within the per-rule target; thirteen of them add up to more than the per-CRD target.
_CONTAINS = {"rule": "self.a.contains(self.b)"}
OVER_BUDGET = {
    "a rule over the per-rule target": (
        {
            "type": "object",
            "properties": {"names": {"type": "array", "items": {"type": "string"}}},
            "x-kubernetes-validations": [{"rule": "self.names.all(n, n.matches('^[a-z]+$'))"}],
        },
        [
            "widgets.example.org v1 .spec x-kubernetes-validations[0]: estimated cost ",
            "> target 5,000,000",
        ],
    ),
    "a rule the server does not compile": (
        {
            "type": "object",
            "properties": {"names": {"type": "array", "maxItems": 4, "items": _bounded(8)}},
            "x-kubernetes-validations": [{"rule": "self.names.reverse() == self.names"}],
        },
        [".spec x-kubernetes-validations[0]: the API server would refuse the rule", "'reverse'"],
    ),
    "rules adding up to more than the per-CRD target": (
        {
            "type": "object",
            "properties": {"a": _bounded(5000), "b": _bounded(5000)},
            "x-kubernetes-validations": [_CONTAINS] * 13,
        },
        ["widgets.example.org v1: estimated cost of all rules 52,000,052 > target 50,000,000"],
    ),
}


def _write(tmp_path: Path, *docs: dict[str, Any]) -> str:
    path = tmp_path / "crds.yaml"
    path.write_text(yaml.safe_dump_all(docs), encoding="utf-8")
    return str(path)


def test_the_package_is_within_budget(capsys: pytest.CaptureFixture[str]) -> None:
    assert len(DEFINITIONS) == len(xrds())
    assert main(DEFINITIONS) == 0
    out, err = capsys.readouterr()
    assert err == ""
    # One line per CRD version, naming the CRD and its total against the target.
    assert len(out.splitlines()) == len(DEFINITIONS)
    assert "modeldeployments.modelplane.ai v1alpha1: " in out and "(target 50,000,000)" in out


def test_modelplane_crds_output_is_read_from_stdin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(render_xrds(xrds())))
    assert main(["-"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == len(xrds())


@pytest.mark.parametrize(("spec", "expected"), OVER_BUDGET.values(), ids=list(OVER_BUDGET))
def test_an_over_budget_crd_fails_naming_where_and_how_much(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: dict[str, Any], expected: list[str]
) -> None:
    path = _write(tmp_path, crd(spec))
    assert main([path]) == 1
    _, err = capsys.readouterr()
    assert err.startswith(f"{path}: document 1: widgets.example.org v1")
    for text in expected:
        assert text in err
    assert err.splitlines()[-1].startswith("python -m tools.crdcost: ")


def test_the_within_budget_half_of_a_file_does_not_hide_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fine = crd({"type": "object", "properties": {"a": _bounded(10), "b": _bounded(10)}})
    fine["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["x-kubernetes-validations"] = [
        {"rule": "self.spec.a != ''"}
    ]
    over, _ = OVER_BUDGET["a rule over the per-rule target"]
    path = _write(tmp_path, fine, crd(over, "gadgets.example.org"))
    assert main([path]) == 1
    out, err = capsys.readouterr()
    assert "widgets.example.org v1: 1 rule, total " in out
    assert f"{path}: document 2: gadgets.example.org v1 .spec " in err


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("kind: ConfigMap\n", "document 1: kind 'ConfigMap' is neither"),
        ("a: [1\n", "line 2: not valid YAML: "),
        (
            "kind: CustomResourceDefinition\nspec: {}\n",
            "document 1: a CRD without a well-formed spec",
        ),
        (
            "kind: CompositeResourceDefinition\napiVersion: apiextensions.crossplane.io/v2\n",
            "document 1: a CompositeResourceDefinition without a well-formed spec",
        ),
    ],
)
def test_unreadable_input_is_a_located_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, expected: str
) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(text, encoding="utf-8")
    assert main([str(path)]) == 2
    _, err = capsys.readouterr()
    assert err.startswith(f"python -m tools.crdcost: error: {path}: ")
    assert expected in err and "Traceback" not in err


def test_a_missing_file_is_a_located_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([str(tmp_path / "absent.yaml")]) == 2
    assert "absent.yaml: cannot read: No such file or directory" in capsys.readouterr().err


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tools.crdcost", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_command_passes_on_the_package() -> None:
    """What ``make package`` runs, as a process: exit status 0 on the generated XRDs."""
    done = _run(*DEFINITIONS)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


def test_the_command_fails_on_an_over_budget_crd(tmp_path: Path) -> None:
    spec, expected = OVER_BUDGET["a rule over the per-rule target"]
    done = _run(_write(tmp_path, crd(spec)))
    assert done.returncode == 1
    assert all(text in done.stderr for text in expected), done.stderr


# ---------------------------------------------------------------- the budget itself


def _rule(total: int, *, error: str | None = None, message: int = 0) -> RuleCost:
    return RuleCost(".spec", 0, "true", total, 1, total, error, message, 1)


def _version(*rules: RuleCost, total: int | None = None) -> VersionCost:
    whole = sum(r.total + r.message_cost for r in rules) if total is None else total
    return VersionCost("widgets.example.org", "Widget", "v1", rules, whole)


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        (_version(_rule(RULE_TARGET)), []),
        (_version(_rule(RULE_TARGET + 1)), ["estimated cost 5,000,001 > target 5,000,000"]),
        # The estimator's sums saturate: a rule at 2^64-1 brings its version's total there.
        (
            _version(_rule(MAX_COST), total=MAX_COST),
            ["estimated cost 2^64-1 > target 5,000,000", "of all rules 2^64-1 > target"],
        ),
        (
            _version(_rule(MAX_COST, error="undeclared reference to 'f'"), total=MAX_COST),
            ["refuse the rule: undeclared reference to 'f'", "of all rules 2^64-1 > target"],
        ),
        (
            _version(_rule(1, message=RULE_TARGET + 1)),
            ["messageExpression estimated cost 5,000,001 > target 5,000,000"],
        ),
        (_version(_rule(1), total=CRD_TARGET), []),
        (
            _version(_rule(1), total=CRD_TARGET + 1),
            ["estimated cost of all rules 50,000,001 > target 50,000,000"],
        ),
    ],
)
def test_problems_are_everything_over_the_targets(
    version: VersionCost, expected: list[str]
) -> None:
    found = problems([version])
    assert len(found) == len(expected)
    for line, text in zip(found, expected, strict=True):
        assert line.startswith("widgets.example.org v1") and text in line
