"""Which fields of ``self`` a CRD rule reads, from its parsed AST (pure).

A rule's verdict on an object depends only on what the rule can read of it. When every
use of ``self`` is a field selection (``self.a``, ``has(self.a)``, ``self.a.b``), the rule
reads those fields and nothing else, so two objects equal on them get one verdict. Any
other use of ``self`` (``size(self)``, ``self['a']``, ``self.?a``, ``self.all(k, ...)``,
``cel.bind(s, self, ...)``) may read the whole value.

The answer comes from the AST the engine parses, so string literals, comments, spacing
and macro variables are seen for what they are. A comprehension variable named ``self``
hides the rule's ``self`` only where the CEL checker scopes it (the loop condition and
step for the iteration variable; those and the result for the accumulator); anywhere
else a ``self`` counts as the rule's, which can only make the answer larger.
"""

from __future__ import annotations

from typing import Any

from modelplane.errors import ModelplaneError
from modelplane.memo import memoized

from .engine import CompileFailure, parse_expression

__all__ = ["self_fields"]

_SELF = "self"


class _Whole(ModelplaneError):
    """The rule may read ``self`` as a whole."""


# Rule texts come from our own schemas: a few hundred.
@memoized("cel.reads.self_fields", 1024)
def self_fields(text: str) -> tuple[str, ...] | None:
    """The fields of ``self`` the rule reads, sorted; None when it may read all of ``self``.

    None too for a rule that does not parse (it fails whatever it is given) and for a
    field spelt with Kubernetes' CEL escapes (``a__dash__b`` reads ``a-b``).
    """
    try:
        expr = parse_expression(text, "rule")
    except CompileFailure:
        return None
    fields: set[str] = set()
    try:
        _collect(expr, fields)
    except _Whole:
        return None
    return tuple(sorted(fields))


def _collect(expr: Any, fields: set[str]) -> None:
    """Add what ``expr`` reads of ``self`` to ``fields``; raise _Whole for a use of all of it."""
    kind = expr.WhichOneof("expr_kind")
    if kind == "ident_expr":
        if expr.ident_expr.name == _SELF:
            raise _Whole
    elif kind == "select_expr":
        select = expr.select_expr
        operand = select.operand
        if operand.WhichOneof("expr_kind") == "ident_expr" and operand.ident_expr.name == _SELF:
            if "__" in select.field:
                raise _Whole
            fields.add(select.field)
        else:
            _collect(operand, fields)
    elif kind == "call_expr":
        call = expr.call_expr
        if call.HasField("target"):
            _collect(call.target, fields)
        for arg in call.args:
            _collect(arg, fields)
    elif kind == "list_expr":
        for element in expr.list_expr.elements:
            _collect(element, fields)
    elif kind == "struct_expr":
        for entry in expr.struct_expr.entries:
            if entry.HasField("map_key"):
                _collect(entry.map_key, fields)
            _collect(entry.value, fields)
    elif kind == "comprehension_expr":
        _collect_comprehension(expr.comprehension_expr, fields)


def _collect_comprehension(comp: Any, fields: set[str]) -> None:
    _collect(comp.iter_range, fields)
    _collect(comp.accu_init, fields)
    loop_vars = {comp.iter_var, comp.iter_var2, comp.accu_var}
    if _SELF not in loop_vars:
        _collect(comp.loop_condition, fields)
        _collect(comp.loop_step, fields)
    if comp.accu_var != _SELF:
        _collect(comp.result, fields)
