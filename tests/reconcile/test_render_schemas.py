"""Every object `render examples/` prints is valid against its schema."""

from __future__ import annotations

import pytest
import yaml

from modelplane.api.validation import validate_document
from modelplane.cli.main import main
from tests.composition.schemas import require_shared, validate_delivered, validate_manifest
from tests.paths import EXAMPLES


def test_every_rendered_object_is_valid(capsys: pytest.CaptureFixture[str]) -> None:
    require_shared()
    assert main(["render", str(EXAMPLES)]) == 0
    objects = list(yaml.safe_load_all(capsys.readouterr().out))
    assert objects
    remote = usages = 0
    for obj in objects:
        if obj["kind"] == "Object":
            validate_delivered(obj)
            remote += 1
        elif not obj["apiVersion"].startswith("modelplane.ai/"):
            # A replica's or cache's Usage, a cluster's provider configs, stack Releases and
            # Usages; the control plane's Services, Gateways and routes.
            validate_manifest(obj)  # the released CRD, its CEL rules included
            usages += obj["kind"] == "Usage"
        else:
            problems = validate_document(obj).problems
            assert problems == [], (obj["kind"], obj["metadata"]["name"], problems)
    assert remote > 0 and usages > 0


FRONT_DOOR = {
    "Backend",
    "AIServiceBackend",
    "BackendSecurityPolicy",
    "Gateway",
    "AIGatewayRoute",
    "BackendTrafficPolicy",
}


def test_the_demo_front_door_is_valid_against_the_released_crds(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """demo/: the hosted endpoint's Backend (TLS), AIServiceBackend and keyed
    BackendSecurityPolicy, the Gateway, the AIGatewayRoute and its BackendTrafficPolicy
    against Envoy Gateway v1.8.3, Envoy AI Gateway v1.1.0 and Gateway API v1.5.1."""
    require_shared()
    assert main(["render", str(EXAMPLES), str(EXAMPLES.parent / "demo")]) == 0
    objects = list(yaml.safe_load_all(capsys.readouterr().out))
    front = [o for o in objects if o["kind"] in FRONT_DOOR and o["apiVersion"] != "v1"]
    kinds = {o["kind"] for o in front}
    assert kinds == FRONT_DOOR
    for obj in front:
        validate_manifest(obj)
