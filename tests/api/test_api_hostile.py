"""Hostile input: reading is bounded, only JSON values pass, output cannot be forged.

Static cases live in tests/corpus (checked through `validate` by test_api_corpus.py and
through `schedule` and `render` here); cases whose files would be large or special
(FIFOs, sockets, device symlinks, a file past the size limit, 5,000-file directories,
unreadable directories) are made in tmp_path. Every case must end with its exit code
and its located lines, and without a traceback: `main` returning is that proof.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
from pathlib import Path

import pytest
import yaml
from api_helpers import CORPUS, EXAMPLES
from hypothesis import given
from hypothesis import strategies as st

from modelplane import manifests
from modelplane.cli.main import main
from modelplane.jsonvalues import ALIAS_SLACK, MAX_DEPTH
from modelplane.manifests import MAX_FILE_BYTES, MAX_TOTAL_BYTES, load
from modelplane.printable import printable

VERBS = ("validate", "schedule", "render")
ALIASES = f"document aliases expand past the limit (one value per input byte plus {ALIAS_SLACK:,})"

# The static hostile cases of tests/corpus, run through every verb.
HOSTILE = sorted(
    p.name
    for p in CORPUS.iterdir()
    if p.suffix in (".yaml", ".json")
    and re.match(
        r"(yaml-billion|md-args-(billion|tag|local|too)|md-replicas-(nan|inf|int-over|float-over)"
        r"|md-duplicate-key|md-non-string|md-name-(newline|escape|bidi)|json-(duplicate|nan|too))",
        p.name,
    )
)


def expected_lines(path: Path) -> list[str]:
    header = path.with_name(path.name + ".expect") if path.suffix == ".json" else path
    return [
        line.split(":", 1)[1].strip().replace("{file}", str(path))
        for line in header.read_text(encoding="utf-8").splitlines()
        if line.startswith("# expect:")
    ]


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    code = main(argv)
    out, err = capsys.readouterr()
    if code != 0:
        assert out == ""
    return code, err.splitlines()


def test_the_hostile_corpus_is_all_there() -> None:
    assert len(HOSTILE) == 20


@pytest.mark.parametrize("verb", ["schedule", "render"])
@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_corpus_case_through_every_verb(
    name: str, verb: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = CORPUS / name
    assert run([verb, str(path)], capsys) == (1, expected_lines(path))


def laughs(indent: str) -> str:
    """Nine alias levels: 9**9 strings once expanded, a few hundred bytes as written."""
    lines = [f"{indent}- &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"{indent}- &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, 9)]
    return "\n".join(lines) + "\n"


# --- special files


def fleet_dir(tmp_path: Path) -> Path:
    """A copy of examples/ (a valid fleet) to add hostile files to."""
    root = tmp_path / "fleet"
    shutil.copytree(EXAMPLES, root)
    return root


@pytest.mark.parametrize("verb", VERBS)
def test_a_fifo_inside_a_directory_is_refused_without_opening_it(
    tmp_path: Path, verb: str, capsys: pytest.CaptureFixture[str]
) -> None:
    root = fleet_dir(tmp_path)
    fifo = root / "deployments" / "pipe.yaml"
    os.mkfifo(fifo)  # opening it for reading would block until a writer came
    assert run([verb, str(root)], capsys) == (
        1,
        [f"{fifo}:1: cannot read file: a FIFO, not a regular file"],
    )


@pytest.mark.parametrize("verb", VERBS)
def test_a_fifo_given_as_a_path_is_a_fifo_not_a_missing_file(
    tmp_path: Path, verb: str, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    assert run([verb, str(fifo)], capsys) == (
        1,
        [f"{fifo}:1: cannot read file: a FIFO, not a regular file"],
    )


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom", "/dev/null"])
@pytest.mark.parametrize("verb", VERBS)
def test_a_symlink_to_a_device_is_refused(
    tmp_path: Path, verb: str, device: str, capsys: pytest.CaptureFixture[str]
) -> None:
    if not os.path.exists(device):
        pytest.skip(f"{device} is absent here")
    root = fleet_dir(tmp_path)
    link = root / "fleet" / "endless.yaml"
    link.symlink_to(device)  # /dev/zero would read until MemoryError
    assert run([verb, str(root)], capsys) == (
        1,
        [f"{link}:1: cannot read file: a device, not a regular file"],
    )


def test_a_socket_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.yaml"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(path))
    except OSError as err:  # the path is too long for AF_UNIX here
        pytest.skip(f"cannot bind a unix socket at {path}: {err}")
    try:
        assert run(["validate", str(tmp_path)], capsys) == (
            1,
            [f"{path}:1: cannot read file: a socket, not a regular file"],
        )
    finally:
        server.close()


@pytest.mark.parametrize("verb", VERBS)
def test_symlink_loops_are_located_errors(
    tmp_path: Path, verb: str, capsys: pytest.CaptureFixture[str]
) -> None:
    root = fleet_dir(tmp_path)
    (root / "self.yaml").symlink_to("self.yaml")
    (root / "fleet" / "up").symlink_to("..")  # a directory loop
    (root / "gone.yaml").symlink_to("nowhere.yaml")
    assert run([verb, str(root)], capsys) == (
        1,
        [
            f"{root}/fleet/up: cannot read directory: symlink loop",
            f"{root}/gone.yaml:1: cannot read file: No such file or directory",
            f"{root}/self.yaml:1: cannot read file: symlink loop",
        ],
    )


def test_a_symlinked_directory_is_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "examples").symlink_to(EXAMPLES)  # not a loop: read, not skipped silently
    code, lines = run(["validate", str(root)], capsys)
    assert code == 0
    assert len(load([str(root)]).objects) == len(load([str(EXAMPLES)]).objects) > 0


@pytest.mark.parametrize("verb", VERBS)
def test_a_file_past_the_size_limit_is_refused_unread(
    tmp_path: Path, verb: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert MAX_FILE_BYTES >= 64 * 1024 * 1024  # whole-fleet snapshots (14 MB) fit many times
    big = tmp_path / "huge.yaml"
    with open(big, "wb") as handle:
        handle.truncate(MAX_FILE_BYTES + 1024 * 1024)  # sparse: 65 MiB that cost no disk
    assert run([verb, str(big)], capsys) == (
        1,
        [
            f"{big}:1: cannot read file: larger than the limit of 64 MiB per file "
            "(split it into several files)"
        ],
    )


@pytest.mark.parametrize("verb", VERBS)
def test_input_past_the_total_limit_is_refused_where_it_passes(
    tmp_path: Path, verb: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The real limit is four files at the per-file limit; made 1 MiB here so the case
    # costs 1.6 MB of disk. Files of 400 KiB each: the third passes the limit.
    assert MAX_TOTAL_BYTES == 4 * MAX_FILE_BYTES == 256 * 1024 * 1024
    monkeypatch.setattr(manifests, "MAX_TOTAL_BYTES", 1024 * 1024)
    classes = (EXAMPLES / "fleet" / "inferenceclasses.yaml").read_bytes()
    root = tmp_path / "fleet"
    root.mkdir()
    for name in ("a", "b", "c", "d"):
        content = classes if name == "a" else b""  # one set of classes: no duplicates
        padding = b"# padding\n" * ((400 * 1024 - len(content)) // 10)
        (root / f"{name}.yaml").write_bytes(content + padding)
    code, lines = run([verb, str(root)], capsys)
    assert (code, lines) == (
        1,
        [
            f"{root / 'c.yaml'}:1: cannot read file: the input passes the limit of 1 MiB across "
            "all PATHs; this file and 1 later file not read (validate fewer PATHs at once)"
        ],
    )
    # Under the limit (two files of the same directory as two PATHs) everything is read.
    assert run([verb, str(root / "a.yaml"), str(root / "b.yaml")], capsys)[0] == 0


def test_the_total_limit_names_the_last_file_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(manifests, "MAX_TOTAL_BYTES", 1024 * 1024)
    big = tmp_path / "big.yaml"
    big.write_bytes(b"# padding\n" * (110 * 1024))  # 1.1 MiB of comments: past it alone
    assert load([str(big)]).problems == [
        f"{big}:1: cannot read file: the input passes the limit of 1 MiB across all PATHs; "
        "this file not read (validate fewer PATHs at once)"
    ]


def test_a_five_thousand_file_directory_is_read_in_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "many"
    for i in range(5000):
        sub = root / f"d{i % 50:02d}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"f{i:04d}.yaml").write_text("# nothing here\n")
    shutil.copy(EXAMPLES / "fleet" / "inferenceclasses.yaml", root / "d49" / "zz.yaml")
    code, lines = run(["validate", str(root)], capsys)
    assert code == 0 and lines == []
    os.mkfifo(root / "d07" / "f9999.yaml")
    os.mkfifo(root / "d03" / "f9999.yaml")
    assert run(["validate", str(root)], capsys) == (
        1,
        [
            f"{root}/d03/f9999.yaml:1: cannot read file: a FIFO, not a regular file",
            f"{root}/d07/f9999.yaml:1: cannot read file: a FIFO, not a regular file",
        ],
    )


def test_unreadable_files_and_directories_are_located_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if os.geteuid() == 0:
        pytest.skip("running as root: chmod does not stop root from reading")
    root = fleet_dir(tmp_path)
    secret = root / "secret"
    secret.mkdir()
    (secret / "x.yaml").write_text("kind: X\n")
    locked = root / "locked.yaml"
    locked.write_text("kind: X\n")
    secret.chmod(0)
    locked.chmod(0)
    try:
        assert run(["validate", str(root)], capsys) == (
            1,
            [
                f"{locked}:1: cannot read file: Permission denied",
                f"{secret}: cannot read directory: Permission denied",
            ],
        )
    finally:
        secret.chmod(0o755)
        locked.chmod(0o644)


# --- values inside free-form config and args, through every verb

PD = EXAMPLES / "deployments" / "qwen3-32b-pd.yaml"
PICKER_PATH = "spec.template.spec.serving.endpointPicker.config"
PD_REF = "ModelDeployment ml-team/qwen3-32b-pd"


def hostile_pd(tmp_path: Path, old: str, new: str) -> tuple[Path, Path]:
    root = fleet_dir(tmp_path)
    path = root / "deployments" / "qwen3-32b-pd.yaml"
    text = PD.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return root, path


def doc_line(path: Path) -> int:
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if line.startswith("apiVersion:"))


@pytest.mark.parametrize("verb", VERBS)
def test_a_billion_laughs_in_the_picker_config(
    tmp_path: Path, verb: str, capsys: pytest.CaptureFixture[str]
) -> None:
    old = "          config:\n"
    root, path = hostile_pd(tmp_path, old, old + "            laughs:\n" + laughs(" " * 12))
    code, lines = run([verb, str(root)], capsys)
    assert code == 1
    assert len(lines) == 1 and re.fullmatch(
        rf"{re.escape(str(path))}:\d+: {re.escape(ALIASES)}", lines[0]
    )


PICKER_CASES = [
    (
        "maxPrefixTokensToMatch: 16384",
        "maxPrefixTokensToMatch: 18446744073709551616",
        ".plugins[0].parameters.maxPrefixTokensToMatch: Invalid value: 18446744073709551616: "
        "an integer must be within int64",
    ),
    (
        "maxPrefixTokensToMatch: 16384",
        "maxPrefixTokensToMatch: .nan",
        ".plugins[0].parameters.maxPrefixTokensToMatch: Invalid value: .nan: "
        "a number must be finite (no NaN or infinity)",
    ),
    (
        "lruCapacityPerServer: 31250",
        "lruCapacityPerServer: .inf",
        ".plugins[0].parameters.lruCapacityPerServer: Invalid value: .inf: "
        "a number must be finite (no NaN or infinity)",
    ),
    (
        "maxPrefixTokensToMatch: 16384",
        "maxPrefixTokensToMatch: !!set {a, b}",
        ".plugins[0].parameters.maxPrefixTokensToMatch: Invalid value: !!set: not a JSON value "
        "(null, boolean, number, string, array or object)",
    ),
    (
        "maxPrefixTokensToMatch: 16384",
        "maxPrefixTokensToMatch: !!binary aGVsbG8=",
        ".plugins[0].parameters.maxPrefixTokensToMatch: Invalid value: !!binary: not a JSON "
        "value (null, boolean, number, string, array or object)",
    ),
    (
        "maxPrefixTokensToMatch: 16384",
        "maxPrefixTokensToMatch: 16384\n                maxPrefixTokensToMatch: 1",
        ".plugins[0].parameters.maxPrefixTokensToMatch: Duplicate value: "
        '"maxPrefixTokensToMatch": the key is already set on line 38',
    ),
]


@pytest.mark.parametrize("verb", VERBS)
@pytest.mark.parametrize(("old", "new", "message"), PICKER_CASES, ids=lambda v: str(v)[:30])
def test_a_non_json_value_in_the_picker_config_is_one_line(
    tmp_path: Path,
    verb: str,
    old: str,
    new: str,
    message: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # One line naming the field; no follow-on rule failures (a 2**64 once gave ten).
    root, path = hostile_pd(tmp_path, old, new)
    assert run([verb, str(root)], capsys) == (
        1,
        [f"{path}:{doc_line(path)}: {PD_REF}: {PICKER_PATH}{message}"],
    )


# --- what still passes


def test_anchors_aliases_and_merge_keys_within_the_budget_still_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = PD.read_text(encoding="utf-8")
    text = text.replace(
        "  name: qwen3-32b-pd\n", "  name: qwen3-32b-pd\n  labels: &labels {team: ml}\n"
    )
    text = text.replace(
        "            - type: prefix-cache-scorer\n",
        "            - &scorer {type: prefix-cache-scorer}\n            - <<: *scorer\n"
        "              type: queue-scorer\n",
    )
    path = tmp_path / "pd.yaml"
    path.write_text(text, encoding="utf-8")
    [obj] = load([str(path)]).objects
    plugins = obj.raw["spec"]["template"]["spec"]["serving"]["endpointPicker"]["config"]["plugins"]
    assert plugins[1:3] == [{"type": "prefix-cache-scorer"}, {"type": "queue-scorer"}]
    assert obj.raw["metadata"]["labels"] == {"team": "ml"}


def test_an_untagged_date_stays_a_string(tmp_path: Path) -> None:
    path = tmp_path / "d.yaml"
    path.write_text(
        PD.read_text(encoding="utf-8").replace(
            "  name: qwen3-32b-pd\n", "  name: qwen3-32b-pd\n  annotations: {since: 2001-12-14}\n"
        )
    )
    [obj] = load([str(path)]).objects
    assert obj.raw["metadata"]["annotations"] == {"since": "2001-12-14"}


def test_nesting_at_the_limit_is_read(tmp_path: Path) -> None:
    # The document's object and MAX_DEPTH - 1 arrays in it are read; one more array is not.
    path = tmp_path / "deep.yaml"
    path.write_text("a: " + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1) + "\n")
    problems = load([str(path)]).problems
    assert problems and not any("nests deeper" in p for p in problems)
    path.write_text("a: " + "[" * MAX_DEPTH + "]" * MAX_DEPTH + "\n")
    assert load([str(path)]).problems == [f"{path}:1: document nests deeper than 100 levels"]


# --- output that cannot be forged

CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


@given(st.text())
def test_printable_text_is_one_line_without_controls(text: str) -> None:
    shown = printable(text)
    assert not CONTROL.search(shown)
    assert len(shown.splitlines()) <= 1


@given(st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E)))
def test_printable_ascii_is_unchanged(text: str) -> None:
    assert printable(text) == text


def test_a_file_name_with_controls_is_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "evil\n\x1b[2Jname.yaml"
    bad.write_text("just text\n")
    assert run(["validate", str(tmp_path)], capsys) == (
        1,
        [f"{tmp_path}/evil\\n\\x1b[2Jname.yaml:1: document is not an object"],
    )


SCALAR_CASES = [
    ("!!int abc", "Invalid value: abc: not a valid !!int"),
    ("!!bool maybe", "Invalid value: maybe: not a valid !!bool"),
    ("!!float x", "Invalid value: x: not a valid !!float"),
    ("9" * 5000, "Invalid value: " + "9" * 40 + "...: an integer must be within int64"),
    (
        "-9223372036854775809",
        "Invalid value: -9223372036854775809: an integer must be within int64",
    ),
    (
        "!!omap [a: 1]",
        "Invalid value: !!omap: not a JSON value (null, boolean, number, string, array or object)",
    ),
]


@pytest.mark.parametrize(("value", "message"), SCALAR_CASES, ids=lambda v: str(v)[:20])
def test_a_scalar_its_tag_cannot_construct_is_one_line(
    tmp_path: Path, value: str, message: str
) -> None:
    path = tmp_path / "x.yaml"
    path.write_text(f"kind: InferenceClass\nmetadata: {{name: c}}\nspec:\n  x: {value}\n")
    assert load([str(path)]).problems == [f"{path}:1: InferenceClass c: spec.x: {message}"]


def test_int64_bounds_themselves_pass_the_json_check(tmp_path: Path) -> None:
    path = tmp_path / "x.yaml"
    path.write_text(
        "kind: InferenceClass\nmetadata: {name: c}\nspec:\n"
        "  a: 9223372036854775807\n  b: -9223372036854775808\n"
    )
    assert not any("must be within int64" in p for p in load([str(path)]).problems)


# JSON may escape half of a UTF-16 pair alone; json.loads keeps it as a lone surrogate,
# which no UTF-8 output can carry (render's writer would fail on it): refused where it is,
# whether or not a rule reads the field. A whole pair is one character and passes.
SURROGATE_CASES = [
    (
        '"args": ["x\\ud800"]',
        'spec.args[0]: Invalid value: "x\\ud800": '
        "a lone UTF-16 surrogate escape is not a Unicode character",
    ),
    (
        '"args": ["\\uDFFF"]',
        'spec.args[0]: Invalid value: "\\udfff": '
        "a lone UTF-16 surrogate escape is not a Unicode character",
    ),
    (
        '"k\\ud800": 1',
        'spec.k\\ud800: Invalid value: "k\\ud800": '
        "a lone UTF-16 surrogate escape is not a Unicode character",
    ),
    ('"args": ["\\ud83d\\ude00"]', None),
]


@pytest.mark.parametrize(("member", "message"), SURROGATE_CASES, ids=lambda v: str(v)[:24])
def test_a_lone_surrogate_escape_in_json_is_refused_where_it_is(
    tmp_path: Path, member: str, message: str | None
) -> None:
    path = tmp_path / "x.json"
    path.write_text(
        '{"apiVersion": "modelplane.ai/v1alpha1", "kind": "InferenceClass", '
        '"metadata": {"name": "c"}, "spec": {' + member + "}}"
    )
    problems = load([str(path)]).problems
    surrogate = [p for p in problems if "lone UTF-16" in p]
    if message is None:
        assert not surrogate
        assert problems  # the class is invalid otherwise (no devices): the pair was read
    else:
        assert surrogate == [f"{path}:1: InferenceClass c: {message}"]


# A taint value is free text (Kubernetes bounds it; our schema does not read it), and a
# draining cluster's taint is quoted in the deployment's ReplicasReady message.
FORGED = "\x1b[31mred\x1b[0m\nforged"


def test_a_control_character_in_a_condition_message_is_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The real path: eu-west-1 held a replica of qwen3-8b, then got a NoExecute taint
    # whose value holds an escape sequence and a newline. The loss notice quotes the
    # taint into ReplicasReady, which `schedule` prints in its table and `render` in its
    # summary: escaped there, so the row stays one line and the terminal is not rewritten.
    for name in ("fleet/inferenceclasses.yaml", "deployments/qwen3-8b.yaml"):
        shutil.copy(EXAMPLES / name, tmp_path / Path(name).name)
    clusters = list(yaml.safe_load_all((EXAMPLES / "fleet" / "inferenceclusters.yaml").read_text()))
    (tmp_path / "clusters.yaml").write_text(yaml.safe_dump_all(clusters))
    assert main(["render", str(tmp_path)]) == 0
    replicas = [
        d for d in yaml.safe_load_all(capsys.readouterr().out) if d and d["kind"] == "ModelReplica"
    ]
    assert sorted(r["spec"]["clusterName"] for r in replicas) == ["eu-west-1", "us-east-1"]
    (tmp_path / "replicas.yaml").write_text(yaml.safe_dump_all(replicas))
    for cluster in clusters:
        if cluster["metadata"]["name"] == "eu-west-1":
            taint = {"key": "evil", "value": FORGED, "effect": "NoExecute"}
            cluster["spec"].setdefault("taints", []).append(taint)
    (tmp_path / "clusters.yaml").write_text(yaml.safe_dump_all(clusters))
    notice = (
        r"cluster eu-west-1 is draining (evil=\x1b[31mred\x1b[0m\nforged:NoExecute): "
        "replica "
    )

    assert main(["schedule", str(tmp_path)]) == 0
    table = capsys.readouterr().out
    assert main(["render", str(tmp_path)]) == 0
    summary = capsys.readouterr().err
    for output in (table, summary):
        assert "\x1b" not in output and "\nforged" not in output
        [ready] = [
            line for line in output.splitlines() if line.lstrip().startswith("ReplicasReady")
        ]
        assert ready.split()[1:3] == ["False", "ClusterDraining"]
        assert notice in ready and ready.endswith(", re-placed")
