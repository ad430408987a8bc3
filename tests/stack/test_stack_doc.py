"""docs/stack.md carries the stack table as the code composes it."""

from __future__ import annotations

from modelplane.stack.table_doc import BEGIN, END, generated
from tests.paths import REPO


def test_docs_stack_md_is_generated_from_the_table() -> None:
    text = (REPO / "docs" / "stack.md").read_text(encoding="utf-8")
    start, end = text.index(BEGIN), text.index(END) + len(END)
    assert text[start:end] == generated(), (
        "docs/stack.md drifted from stack/components.py: run `make stack-doc`"
    )
