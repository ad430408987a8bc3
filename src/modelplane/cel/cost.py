"""The static cost estimate of scheduling.md §5.1, computed on the parsed CEL AST.

cel-expr-python has no cost estimator, but it serializes the parsed expression
(``cel.expr.ParsedExpr``), so the estimate walks the engine's own AST rather
than a second parser's. The parser has already expanded macros into
comprehensions; :func:`_macro_body` recovers the user-written body expressions
from the loop step so that a comprehension costs what the spec's macro row
says, not what the expansion's accumulator plumbing would add.
"""

from __future__ import annotations

from typing import Any

__all__ = ["COST_LIMIT", "DEFAULT_RANGE_SIZE", "estimate_cost"]

COST_LIMIT = 1_000_000
# The most attributes or capacities a device may publish (api.md §3.1).
DEFAULT_RANGE_SIZE = 32


def estimate_cost(expr: Any) -> int:
    """Static upper bound of the cost of a parsed ``cel.expr.Expr``."""
    kind = expr.WhichOneof("expr_kind")
    if kind == "const_expr" or kind is None:
        return 1
    if kind == "ident_expr":
        return 1
    if kind == "select_expr":
        return 1 + estimate_cost(expr.select_expr.operand)
    if kind == "call_expr":
        return _call_cost(expr.call_expr)
    if kind == "list_expr":
        return 1 + sum(estimate_cost(e) for e in expr.list_expr.elements)
    if kind == "struct_expr":
        return 1 + sum(_entry_cost(e) for e in expr.struct_expr.entries)
    if kind == "comprehension_expr":
        return _comprehension_cost(expr.comprehension_expr)
    return 1


def _call_cost(call: Any) -> int:
    cost = 1 + sum(estimate_cost(a) for a in call.args)
    if call.HasField("target"):
        cost += estimate_cost(call.target)
    return cost


def _entry_cost(entry: Any) -> int:
    key = estimate_cost(entry.map_key) if entry.HasField("map_key") else 0
    return key + estimate_cost(entry.value)


def _range_size(expr: Any) -> int:
    kind = expr.WhichOneof("expr_kind")
    if kind == "list_expr":
        return len(expr.list_expr.elements)
    if kind == "struct_expr":
        return len(expr.struct_expr.entries)
    return DEFAULT_RANGE_SIZE


def _comprehension_cost(comp: Any) -> int:
    body = sum(estimate_cost(e) for e in _macro_body(comp))
    return 1 + estimate_cost(comp.iter_range) + _range_size(comp.iter_range) * (1 + body)


def _is_accu(expr: Any, accu: str) -> bool:
    return bool(expr.WhichOneof("expr_kind") == "ident_expr" and expr.ident_expr.name == accu)


def _appended(expr: Any, accu: str) -> list[Any] | None:
    """For ``accu + [e]`` return ``[e]``'s elements; else None."""
    if expr.WhichOneof("expr_kind") != "call_expr":
        return None
    call = expr.call_expr
    if call.function != "_+_" or len(call.args) != 2 or not _is_accu(call.args[0], accu):
        return None
    second = call.args[1]
    if second.WhichOneof("expr_kind") == "list_expr":
        return list(second.list_expr.elements)
    return []  # exists_one: accu + 1


def _macro_body(comp: Any) -> list[Any]:
    """The user-written body expressions of a macro expansion.

    all/exists: ``accu && p`` / ``accu || p``; exists_one: ``p ? accu + 1 : accu``;
    map: ``accu + [t]``; map with filter: ``f ? accu + [t] : accu``;
    filter: ``p ? accu + [x] : accu`` (the appended iteration variable is the
    expansion's, not the user's, so it is not counted).
    """
    step, accu = comp.loop_step, comp.accu_var
    if step.WhichOneof("expr_kind") != "call_expr":
        return [step]
    call = step.call_expr
    if call.function in ("_&&_", "_||_") and len(call.args) == 2 and _is_accu(call.args[0], accu):
        return [call.args[1]]
    appended = _appended(step, accu)
    if appended is not None:
        return appended
    if call.function == "_?_:_" and len(call.args) == 3 and _is_accu(call.args[2], accu):
        inner = _appended(call.args[1], accu)
        if inner is not None:
            kept = [e for e in inner if not _is_iter_var(e, comp.iter_var)]
            return [call.args[0], *kept]
    return [step]


def _is_iter_var(expr: Any, name: str) -> bool:
    return bool(expr.WhichOneof("expr_kind") == "ident_expr" and expr.ident_expr.name == name)
