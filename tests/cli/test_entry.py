"""The command's entry: only the chosen verb is imported, the process ends
without the interpreter's teardown, and nothing a user sees changes.

The parser built for one verb must read and refuse exactly as the parser of every verb;
the process must still print all its output and exit with the same codes (docs/cli.md).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import weakref
from typing import Any

import pytest

from modelplane.cli import inputs
from modelplane.cli.main import VERBS, build_parser, chosen_verb, main
from tests.paths import CORPUS, EXAMPLES, REPO

# (argv, the verb argparse dispatches it to, "" for none)
CHOSEN = [
    ([], ""),
    (["schedule", "examples/"], "schedule"),
    (["render", "examples/", "-o", "json"], "render"),
    (["function", "serve", "--insecure"], "function"),
    (["-h"], ""),
    (["-h", "schedule"], "schedule"),
    (["--help"], ""),
    (["bogus", "schedule"], ""),
    (["-o", "json", "schedule"], ""),  # "json" is where argparse looks for the verb
    (["-x", "crds"], "crds"),
    (["--", "package"], "package"),
    (["-", "schedule"], ""),
    (["schedule", "validate"], "schedule"),
]


@pytest.mark.parametrize(("argv", "verb"), CHOSEN)
def test_the_chosen_verb_is_the_one_argparse_dispatches_to(argv: list[str], verb: str) -> None:
    assert chosen_verb(argv) == verb
    if verb:
        # The full parser agrees where it parses at all.
        try:
            args = build_parser().parse_args(argv)
        except SystemExit:
            return
        assert args.verb == verb


def test_the_command_help_is_the_same_whichever_verb_is_built() -> None:
    full = build_parser().format_help()
    for verb in ["", *VERBS]:
        assert build_parser(verb).format_help() == full


@pytest.mark.parametrize("verb", list(VERBS))
def test_a_verb_built_alone_has_the_help_of_the_full_parser(verb: str) -> None:
    full, alone = build_parser(), build_parser(verb)
    assert _sub_help(full, verb) == _sub_help(alone, verb)


def _sub_help(parser: argparse.ArgumentParser, verb: str) -> str:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return str(action.choices[verb].format_help())
    raise AssertionError("no verbs")


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    return subprocess.run(
        [sys.executable, "-m", "modelplane", *argv],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["schedule", str(EXAMPLES), "-o", "json", "--explain"],
        ["render", str(EXAMPLES), "-o", "yaml"],
        ["validate", str(CORPUS)],
        ["schedule", "/nonexistent-path"],
        ["schedule"],
        ["bogus"],
        [],
    ],
)
def test_the_process_says_and_exits_as_main_does(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Whole output and exit code of the process equal an in-process main's."""
    try:
        code = main(argv)
    except SystemExit as stop:
        code = int(stop.code or 0)
    captured = capsys.readouterr()
    process = _run(*argv)
    assert process.returncode == code
    assert process.stdout == captured.out
    assert process.stderr == captured.err


def test_the_output_of_a_quick_exit_is_all_written() -> None:
    """Output far larger than a pipe's buffer still arrives whole before the process ends."""
    process = _run("render", str(EXAMPLES), "-o", "json")
    assert process.returncode == 0
    assert len(process.stdout) > 65536
    json.loads(process.stdout)  # whole: a cut document would not parse


@pytest.mark.parametrize(
    "argv", [["render", str(EXAMPLES), "-o", "json"], ["validate", str(CORPUS)]]
)
def test_an_in_process_main_holds_no_fleet_once_it_returns(
    argv: list[str], monkeypatch: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """The process keeps its loaded fleet until it leaves (freeing it is 0.1 s of a large
    fleet's command); a caller of main, valid input or not, gets the memory back."""
    kept: list[weakref.ref[Any]] = []
    real = inputs.keep_until_exit

    def recorded(value: object) -> None:
        kept.append(weakref.ref(value))
        real(value)

    monkeypatch.setattr(inputs, "keep_until_exit", recorded)
    main(argv)
    capsys.readouterr()
    gc.collect()
    assert kept and all(ref() is None for ref in kept)


def test_the_cli_modules_import_only_what_the_verb_needs() -> None:
    """`schedule` never imports the other verbs' modules (nor the function server)."""
    code = (
        "import sys\n"
        "from modelplane.cli.main import main\n"
        f"main(['schedule', {str(EXAMPLES)!r}, '-o', 'json'])\n"
        "print(sorted(m for m in sys.modules if m.startswith('modelplane.')))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    ).stdout
    loaded = out.strip().splitlines()[-1]
    for other in ("validate", "render", "crds", "package", "function"):
        assert f"'modelplane.cli.{other}'" not in loaded
    assert "modelplane.runtime.crossplane" not in loaded
    assert "modelplane.runtime.local" not in loaded
