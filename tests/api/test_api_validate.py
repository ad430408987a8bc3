"""`modelplane validate` and the loader: examples, the seed, defaults, order, input forms."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from api_helpers import EXAMPLES, shared_path

from modelplane.api import (
    KINDS,
    InferenceClass,
    InferenceCluster,
    ModelCache,
    ModelDeployment,
)
from modelplane.api.validation import validate_document
from modelplane.cli.main import main
from modelplane.manifests import load


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def seed_manifest() -> dict[str, Any]:
    """The example manifest of the seed reference page."""
    text = shared_path("seed", "modeldeployment-reference.txt").read_text(encoding="utf-8")
    lines = text.splitlines()
    start = lines.index("apiVersion: modelplane.ai/v1alpha1")
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("#"))
    document = yaml.safe_load("\n".join(lines[start:end]))
    assert isinstance(document, dict)
    return document


def md(**spec: Any) -> dict[str, Any]:
    """A small valid ModelDeployment, with spec fields replaced."""
    document: dict[str, Any] = {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelDeployment",
        "metadata": {"name": "m"},
        "spec": {
            "replicas": 1,
            "template": {
                "spec": {
                    "engines": [
                        {
                            "name": "e",
                            "members": [
                                {
                                    "nodeSelector": {
                                        "devices": [{"name": "gpu", "selectors": [{"cel": "true"}]}]
                                    },
                                    "template": {
                                        "spec": {"containers": [{"name": "engine", "image": "i"}]}
                                    },
                                }
                            ],
                        }
                    ]
                }
            },
        },
    }
    document["spec"].update(spec)
    return document


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return str(path)


# --- examples and the seed


def test_examples_validate(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["validate", str(EXAMPLES)], capsys)
    assert (code, err) == (0, "")
    assert out.startswith("ok: ") and out.endswith(" objects\n")


def test_examples_cover_the_issue() -> None:
    loaded = load([str(EXAMPLES)])
    assert loaded.ok, loaded.problems
    assert len(loaded.of_kind(InferenceClass)) >= 2
    clusters = loaded.of_kind(InferenceCluster)
    assert len(clusters) == 3
    assert {c.spec.stack for c in clusters} == {"Standard", "Dynamo"}
    assert any(c.spec.taints for c in clusters)
    assert len({(c.metadata.labels or {}).get("region") for c in clusters}) == 3
    assert any(
        d.claim == "Synthetic" for c in loaded.of_kind(InferenceClass) for d in c.spec.devices
    )
    deployments = {d.metadata.name: d for d in loaded.of_kind(ModelDeployment)}
    assert seed_manifest() == yaml.safe_load(
        (EXAMPLES / "deployments" / "qwen3-8b.yaml").read_text(encoding="utf-8")
    )
    roles = {
        m.role
        for d in deployments.values()
        for e in d.spec.template.spec.engines
        for m in e.members
    }
    assert {"Leader", "Worker"} <= roles
    multi = [d for d in deployments.values() if d.spec.template.spec.model_cache_ref is not None]
    caches = {c.metadata.name for c in loaded.of_kind(ModelCache)}
    assert multi and all(d.spec.template.spec.model_cache_ref.name in caches for d in multi)  # type: ignore[union-attr]
    pd = [d for d in deployments.values() if d.spec.template.spec.serving is not None]
    assert any(
        s.mode == "PrefillDecode" and s.router == "EndpointPicker" and s.endpoint_picker is not None
        for s in (d.spec.template.spec.serving for d in pd)
        if s is not None
    )


def test_seed_example_validates() -> None:
    result = validate_document(seed_manifest())
    assert result.problems == []
    assert isinstance(result.model, ModelDeployment)
    assert result.model.spec.template.spec.engines[0].copies == 1


# --- defaults (docs/api.md, "The steps (`validate_document`)")


def test_defaults_are_applied_inside_present_objects() -> None:
    result = validate_document(md())
    assert result.ok, result.problems
    spec = result.defaulted["spec"]["template"]["spec"]
    engine = spec["engines"][0]
    assert engine["copies"] == 1
    assert engine["members"][0]["role"] == "Standalone"
    assert engine["members"][0]["nodeSelector"]["devices"][0]["count"] == 1
    assert "serving" not in spec  # absent objects get no defaults
    assert "worker" not in engine["members"][0]  # no schema default
    assert result.defaulted["metadata"]["namespace"] == "default"


def test_empty_serving_becomes_unified() -> None:
    result = validate_document(
        md(template={"spec": {**md()["spec"]["template"]["spec"], "serving": {}}})
    )
    assert result.ok, result.problems
    assert result.defaulted["spec"]["template"]["spec"]["serving"] == {"mode": "Unified"}


def test_null_fields_are_pruned_before_defaulting() -> None:
    document = md()
    document["spec"]["template"]["spec"]["serving"] = None
    document["spec"]["template"]["spec"]["engines"][0]["copies"] = None
    result = validate_document(document)
    assert result.ok, result.problems
    assert result.defaulted["spec"]["template"]["spec"]["engines"][0]["copies"] == 1
    assert "serving" not in result.defaulted["spec"]["template"]["spec"]


def test_toleration_operator_default_applies_before_rules() -> None:
    document = md()
    document["spec"]["template"]["spec"]["tolerations"] = [{"key": "gpu", "value": "a"}]
    result = validate_document(document)
    assert result.ok, result.problems
    assert result.defaulted["spec"]["template"]["spec"]["tolerations"][0]["operator"] == "Equal"


def test_cluster_scoped_namespace_is_ignored() -> None:
    document = {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "InferenceCluster",
        "metadata": {"name": "c", "namespace": "Not_A_Label"},
        "spec": {"cluster": {"source": "Existing", "existing": {"secretRef": {"name": "k"}}}},
    }
    result = validate_document(document)
    assert result.ok, result.problems
    assert "namespace" not in result.defaulted["metadata"]
    assert result.object_ref() == "InferenceCluster c"
    cluster = result.defaulted["spec"]["cluster"]
    assert cluster["existing"]["secretRef"]["key"] == "kubeconfig"
    assert result.defaulted["spec"]["stack"] == "Standard"


def test_transition_rules_are_not_evaluated() -> None:
    document = {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "InferenceCluster",
        "metadata": {"name": "c"},
        "spec": {
            "cluster": {"source": "Existing", "existing": {"secretRef": {"name": "k"}}},
            "stack": "Dynamo",
        },
    }
    assert validate_document(document).ok


def test_replica_templates_may_carry_modelplane_env() -> None:
    document = {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelReplica",
        "metadata": {"name": "r", "namespace": "ml-team"},
        "spec": {
            "clusterName": "c",
            "engines": [
                {
                    "name": "e",
                    "members": [
                        {
                            "nodePoolName": "p",
                            "deviceRequests": [
                                {"name": "gpu", "deviceClassName": "gpu.nvidia.com"}
                            ],
                            "template": {
                                "spec": {
                                    "containers": [
                                        {
                                            "name": "engine",
                                            "image": "i",
                                            "env": [
                                                {
                                                    "name": "MODELPLANE_SERVED_MODEL_NAME",
                                                    "value": "m",
                                                }
                                            ],
                                        }
                                    ]
                                }
                            },
                        }
                    ],
                }
            ],
        },
    }
    assert validate_document(document).ok


def test_free_form_fields_keep_unknown_content() -> None:
    document = md(crossplane={"compositionRef": {"name": "x"}, "anything": [1, None]})
    document["status"] = {"replicas": {"ready": 1}, "somethingElse": {"a": None}}
    result = validate_document(document)
    assert result.ok, result.problems
    assert result.defaulted["spec"]["crossplane"]["anything"] == [1, None]


def test_timestamps_stay_strings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = (EXAMPLES / "fleet" / "inferenceclusters.yaml").read_text(encoding="utf-8")
    path = write(tmp_path, "c.yaml", text.replace('"2025-01-15T09:00:00Z"', "2025-01-15T09:00:00Z"))
    assert run(["validate", path], capsys)[:2] == (0, "ok: 3 objects\n")


# --- order and shape of problems


def test_problems_come_depth_first_in_field_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = md(replicas=101)
    document["extra"] = 1
    document["metadata"]["labels"] = {"b": "ok", "a key": "x"}
    engine = document["spec"]["template"]["spec"]["engines"][0]
    engine["copies"] = 0
    engine["zzz"] = True
    engine["members"][0]["template"]["spec"]["containers"][0]["name"] = "Engine"
    path = write(tmp_path, "d.yaml", yaml.safe_dump(document, sort_keys=True))
    code, out, err = run(["validate", path], capsys)
    prefix = f"{path}:1: ModelDeployment default/m: "
    e0 = "spec.template.spec.engines[0]"
    assert err.splitlines() == [
        prefix + 'metadata.labels[a key]: Invalid value: "a key": must be a valid label key',
        prefix + "spec.replicas: Invalid value: 101: must be less than or equal to 100",
        prefix + f"{e0}.copies: Invalid value: 0: must be greater than or equal to 1",
        prefix + f'{e0}.members[0].template.spec.containers[0].name: Invalid value: "Engine": '
        "must match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'",
        prefix + f"{e0}.zzz: unknown field",
        prefix + "extra: unknown field",
    ]
    assert (code, out) == (1, "")


def test_rules_run_only_without_structural_errors() -> None:
    document = md(replicas=-1)
    document["spec"]["template"]["spec"]["engines"][0]["name"] = "E"  # MD-18 would fail
    assert [p.path for p in validate_document(document).problems] == ["spec.replicas"]


def test_selector_problems_merge_with_rules_in_document_order() -> None:
    document = md()
    member = document["spec"]["template"]["spec"]["engines"][0]["members"][0]
    member["nodeSelector"]["devices"][0]["selectors"][0]["cel"] = "device.driver"
    member["template"]["spec"]["containers"][0]["readinessProbe"] = {"tcpSocket": {"port": 1}}
    problems = validate_document(document).problems
    assert [p.path for p in problems] == [
        "spec.template.spec.engines[0].members[0].nodeSelector.devices[0].selectors[0].cel",
        "spec.template.spec.engines[0].members[0].template.spec.containers[0]",
    ]
    assert problems[0].message.startswith("Invalid nodeSelector CEL expression: ")


def test_unknown_kind_has_no_namespace_part(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "k.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n")
    code, _, err = run(["validate", path], capsys)
    assert code == 1
    assert err.splitlines() == [
        f'{path}:1: ConfigMap cm: apiVersion: Unsupported value: "v1": supported values: "modelplane.ai/v1alpha1"',
        f'{path}:1: ConfigMap cm: kind: Unsupported value: "ConfigMap": supported values: '
        + ", ".join(f'"{k.kind}"' for k in KINDS),
    ]


# --- input forms (docs/api.md "The steps")


def test_multi_document_lines_and_empty_documents(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = yaml.safe_dump(md(), sort_keys=False)
    bad = yaml.safe_dump(md(replicas=-1), sort_keys=False).replace("name: m", "name: n")
    text = "# fleet\n---\n" + good + "---\n---\n" + bad
    path = write(tmp_path, "multi.yaml", text)
    code, _, err = run(["validate", path], capsys)
    line = 3 + good.count("\n") + 2
    assert code == 1
    assert err == (
        f"{path}:{line}: ModelDeployment default/n: spec.replicas: "
        "Invalid value: -1: must be greater than or equal to 0\n"
    )


def test_json_object_and_array(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one = write(tmp_path, "one.json", json.dumps(md()))
    other = {**md(replicas=-1), "metadata": {"name": "n"}}
    many = write(tmp_path, "many.json", "[\n" + json.dumps(other) + ",\n  42\n]\n")
    code, out, err = run(["validate", one, many], capsys)
    assert code == 1
    assert err.splitlines() == [
        f"{many}:2: ModelDeployment default/n: spec.replicas: Invalid value: -1: must be greater than or equal to 0",
        f"{many}:3: document is not an object",
    ]
    assert run(["validate", one], capsys)[:2] == (0, "ok: 1 objects\n")


def test_directories_are_read_in_byte_wise_order(tmp_path: Path) -> None:
    for name in ("b.yaml", "a/z.yml", "B.json", "a.yaml", "notes.txt"):
        write(tmp_path, name, "")
    loaded = load([str(tmp_path)])
    assert loaded.ok and loaded.objects == []
    from modelplane.manifests import expand

    assert [Path(p).relative_to(tmp_path).as_posix() for p in expand(str(tmp_path))] == [
        "B.json",
        "a.yaml",
        "a/z.yml",
        "b.yaml",
    ]


def test_invalid_yaml_stops_reading_that_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = yaml.safe_dump(md(), sort_keys=False)
    path = write(tmp_path, "x.yaml", good + "---\nkey: [unclosed\n---\n" + good)
    code, _, err = run(["validate", path], capsys)
    assert code == 1
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{path}:") and ": invalid YAML: " in lines[0]


def test_duplicates_across_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = write(tmp_path, "a.yaml", yaml.safe_dump(md()))
    second = write(
        tmp_path,
        "b.yaml",
        yaml.safe_dump({**md(), "metadata": {"name": "m", "namespace": "default"}}),
    )
    other_ns = write(
        tmp_path, "c.yaml", yaml.safe_dump({**md(), "metadata": {"name": "m", "namespace": "x"}})
    )
    code, _, err = run(["validate", first, second, other_ns], capsys)
    assert code == 1
    assert err == f'{second}:1: ModelDeployment default/m: metadata.name: Duplicate value: "m"\n'


def test_missing_path_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["validate", str(tmp_path / "nope")], capsys)
    assert code == 2 and out == ""
    assert "no such file or directory" in err and "Traceback" not in err


def test_help_has_an_example(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["validate", "--help"])
    assert exit_info.value.code == 0
    assert "modelplane validate examples/" in capsys.readouterr().out


def test_loaded_objects_carry_source_and_defaults() -> None:
    loaded = load([str(EXAMPLES / "deployments" / "qwen3-8b.yaml")])
    (obj,) = loaded.objects
    assert (obj.kind, obj.namespace, obj.name, obj.line) == (
        "ModelDeployment",
        "ml-team",
        "qwen3-8b",
        1,
    )
    assert obj.file.endswith("qwen3-8b.yaml")
    assert obj.raw["spec"]["template"]["spec"]["engines"][0]["copies"] == 1
    assert loaded.of_kind(ModelDeployment) == [obj.model]


def test_a_self_referencing_alias_is_a_document_level_problem(tmp_path: Path) -> None:
    path = tmp_path / "alias.yaml"
    path.write_text("a: &a [*a]\n")
    assert load([str(path)]).problems == [f"{path}:1: document nests deeper than 100 levels"]
