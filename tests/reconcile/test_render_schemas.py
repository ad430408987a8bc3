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
