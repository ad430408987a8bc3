"""Every row of the selector expression table, through the engine and through the celpy oracle."""

from __future__ import annotations

import pytest
from cel_oracle import oracle_matches
from cel_table import ALL_ROWS, Row

from modelplane.cel import check_selector, clear_caches, selector_matches
from modelplane.cel.engine import CompileFailure, compile_expression


@pytest.fixture(autouse=True)
def _fresh_caches() -> None:
    clear_caches()


@pytest.mark.parametrize("row", ALL_ROWS, ids=[r.id for r in ALL_ROWS])
def test_engine(row: Row) -> None:
    if isinstance(row.expected, str):
        kind = row.expected.removeprefix("compile:")
        with pytest.raises(CompileFailure) as err:
            compile_expression(row.expr, "selector")
        assert err.value.kind == kind
        assert check_selector(row.expr) == err.value.detail
        assert selector_matches(row.expr, row.device) is False
    else:
        assert check_selector(row.expr) is None
        assert selector_matches(row.expr, row.device) is row.expected
        # Memoised: asking again gives the same answer.
        assert selector_matches(row.expr, row.device) is row.expected


ORACLE_ROWS = [
    pytest.param(r, id=r.id, marks=pytest.mark.skip(reason=r.engine_only))
    if r.engine_only
    else pytest.param(r, id=r.id)
    for r in ALL_ROWS
]


@pytest.mark.parametrize("row", ORACLE_ROWS)
def test_oracle(row: Row) -> None:
    assert oracle_matches(row.expr, row.device) is row.expected
