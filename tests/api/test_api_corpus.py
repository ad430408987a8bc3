"""The bad-input corpus: every document in tests/corpus/ fails with exactly its stated lines.

Each case file starts with comment lines: a description, optionally `# rule: <ID>`
(the rule the case exercises) and one `# expect: <line>` per line `validate`
must print, `{file}` standing for the path given on the command line. A JSON
file (which cannot hold comments) has its header in `<name>.expect` beside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from api_helpers import CORPUS

from modelplane.api import RULES
from modelplane.cli.main import main


@dataclass(frozen=True)
class Case:
    path: Path
    rule: str | None
    expect: tuple[str, ...]


def _header(path: Path) -> list[str]:
    source = path.with_name(path.name + ".expect") if path.suffix == ".json" else path
    lines = []
    for line in source.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        lines.append(line[1:].strip())
    return lines


def load_case(path: Path) -> Case:
    header = _header(path)
    rule = next((h.split(":", 1)[1].strip() for h in header if h.startswith("rule:")), None)
    expect = tuple(h.split(":", 1)[1].strip() for h in header if h.startswith("expect:"))
    return Case(path, rule, expect)


CASES = sorted(
    (load_case(p) for p in CORPUS.iterdir() if p.suffix in (".yaml", ".yml", ".json")),
    key=lambda c: c.path.name,
)


def test_corpus_is_large_enough() -> None:
    assert len(CASES) >= 80


@pytest.mark.parametrize("case", CASES, ids=[c.path.name for c in CASES])
def test_case_fails_with_its_lines(case: Case, capsys: pytest.CaptureFixture[str]) -> None:
    assert case.expect, f"{case.path.name} states no expected line"
    code = main(["validate", str(case.path)])
    out, err = capsys.readouterr()
    expected = [line.replace("{file}", str(case.path)) for line in case.expect]
    assert err.splitlines() == expected
    assert out == ""
    assert code == 1


def test_every_rule_has_a_failing_case() -> None:
    covered = {c.rule for c in CASES}
    transition = {rule_id for rule_id, r in RULES.items() if "oldSelf" in r.rule}
    missing = sorted(set(RULES) - covered - transition)
    assert not missing, f"rules without a corpus case: {missing}"
    assert "DRA" in covered  # selector compilation (docs/api.md, "The steps (`validate_document`)")


@pytest.mark.parametrize("case", [c for c in CASES if c.rule in RULES], ids=lambda c: c.path.name)
def test_rule_case_prints_the_rules_message(case: Case) -> None:
    message = RULES[case.rule].message if case.rule else ""
    assert any(line.endswith(": " + message) for line in case.expect)
