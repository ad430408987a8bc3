"""The generated validator schemas are what pydantic generates now.

`modelplane/api/validator_schemas.py` keeps each kind's structural schema as JSON text so
no command asks pydantic for it again; were a model changed without `make package`, the
validator would check documents against a stale schema, so these tests fail first.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from modelplane import memo
from modelplane.api import validator_schemas
from modelplane.api.kinds import KINDS, KindInfo
from modelplane.api.modeldeployment import ModelDeploymentSpec
from modelplane.api.openapi import model_key, schemas_module, structural_schema, validator_schema

REGENERATE = "the generated validator schemas are stale: run `make package`"


def test_the_generated_module_is_what_the_generator_writes_now() -> None:
    text = Path(validator_schemas.__file__).read_text(encoding="utf-8")
    assert text == schemas_module([info.model for info in KINDS]), REGENERATE


@pytest.mark.parametrize("info", KINDS, ids=lambda info: info.kind)
def test_each_kind_reads_pydantics_schema_key_for_key_in_order(info: KindInfo) -> None:
    memo.clear_all()
    generated = validator_schema(info.model)
    fresh = structural_schema(info.model)
    assert generated == fresh, REGENERATE
    # Key order decides the order of properties walked, and so of the problems reported.
    assert json.dumps(generated) == json.dumps(fresh), REGENERATE


def test_every_kind_has_its_generated_schema() -> None:
    assert sorted(validator_schemas.SCHEMAS) == sorted(model_key(i.model) for i in KINDS)


def test_a_model_without_a_generated_schema_is_asked_of_pydantic() -> None:
    assert model_key(ModelDeploymentSpec) not in validator_schemas.SCHEMAS
    assert validator_schema(ModelDeploymentSpec) == structural_schema(ModelDeploymentSpec)
