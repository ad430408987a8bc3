# The two commands of the README's quick start are `make demo` and `make test`.
# Each creates .venv and installs the project when it is missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench package schemas stack-doc clean

$(STAMP): pyproject.toml
	@echo "installing modelplane and its tools into $(VENV) (first run only)" >&2
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install --quiet --upgrade pip >&2
	@$(BIN)/python -m pip install --quiet -e '.[dev]' >&2
	@$(BIN)/python -m compileall -q src >/dev/null
	@touch $(STAMP)

demo: $(STAMP)
	@$(BIN)/modelplane render examples/ demo/

test: $(STAMP) lint
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check src tools tests benchmarks
	$(BIN)/ruff format --check src tools tests benchmarks
	$(BIN)/mypy

# An editable install compiles nothing, and PYTHONDONTWRITEBYTECODE may be set: compile the
# sources first, so the whole-command figures are an installed package's.
bench: $(STAMP)
	@$(BIN)/python -m compileall -q src >/dev/null
	@for f in benchmarks/bench_*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

# The generated files: package/configuration/apis/<plural>/definition.yaml holds the
# XRDs (what `modelplane crds` prints), beside the Compositions and package metadata;
# and the validator's schemas (below). Then the CRD cost check: it fails when a rule or a
# CRD, as Crossplane converts the XRD, is over the targets of docs/crd-cost.md.
package: $(STAMP) schemas
	$(BIN)/modelplane package --out package
	$(BIN)/python -m tools.crdcost package/configuration/apis/*/definition.yaml

# The validator's schema of every kind as pydantic generates it, kept so no command asks
# pydantic again; tests/api/test_validator_schemas.py compares it.
SCHEMAS := src/modelplane/api/validator_schemas.py
schemas: $(STAMP)
	$(BIN)/python -c 'import sys; from modelplane.api.kinds import KINDS; from modelplane.api.openapi import schemas_module; sys.stdout.write(schemas_module([k.model for k in KINDS]))' > $(SCHEMAS).new
	mv $(SCHEMAS).new $(SCHEMAS)

# docs/stack.md's and docs/telemetry.md's tables, generated from the stack and vocabulary
# tables (tests/stack/test_stack_doc.py compares).
stack-doc: $(STAMP)
	$(BIN)/python -c 'import pathlib; from modelplane.stack.table_doc import replace_generated as r; p = pathlib.Path("docs/stack.md"); p.write_text(r(p.read_text()))'
	$(BIN)/python -c 'import pathlib; from modelplane.stack.table_doc import replace_telemetry as t; p = pathlib.Path("docs/telemetry.md"); p.write_text(t(p.read_text()))'

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
