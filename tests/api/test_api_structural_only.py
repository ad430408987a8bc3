"""validate_document(rules=False): steps 1 to 3 only, as the Crossplane runtime checks."""

from __future__ import annotations

from modelplane.api import ModelDeployment
from modelplane.api.validation import validate_document


def deployment(replicas: object, cel: str) -> dict[str, object]:
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelDeployment",
        "metadata": {"name": "d", "namespace": "ns"},
        "spec": {
            "replicas": replicas,
            "template": {
                "spec": {
                    "engines": [
                        {
                            "name": "e",
                            "members": [
                                {
                                    "nodeSelector": {
                                        "devices": [{"name": "gpu", "selectors": [{"cel": cel}]}]
                                    },
                                    "template": {
                                        "spec": {"containers": [{"name": "sidecar", "image": "x"}]}
                                    },
                                }
                            ],
                        }
                    ]
                }
            },
        },
    }


def test_rules_and_selectors_are_skipped_but_structure_is_not() -> None:
    # No container named engine (MD-28) and a selector that does not compile.
    doc = deployment(1, "device.count > 1")
    full = validate_document(doc)
    assert [p.path.rsplit(".", 1)[-1] for p in full.problems] == ["cel", "containers"]
    assert full.problems[0].message.startswith("Invalid nodeSelector CEL expression: ")
    assert full.problems[1].message == "exactly one container must be named 'engine'"
    structural = validate_document(doc, rules=False)
    assert structural.problems == []
    assert isinstance(structural.model, ModelDeployment)
    assert structural.model.spec.template.spec.engines[0].copies == 1  # defaults applied

    broken = validate_document(deployment(101, "true"), rules=False)
    assert [(p.path, p.message) for p in broken.problems] == [
        ("spec.replicas", "Invalid value: 101: must be less than or equal to 100")
    ]
