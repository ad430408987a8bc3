"""The static cost estimate of DRA selectors (docs/scheduling.md, "Device selectors"), computed on
the parsed CEL AST.

cel-expr-python has no cost estimator, but it serializes the parsed expression
(``cel.expr.ParsedExpr``), so the estimate walks the engine's own AST rather
than a second parser's. The parser has already expanded macros into
comprehensions; :func:`_macro_body` recovers the user-written body expressions
from the loop step so that a comprehension costs what the spec's macro row
says, not what the expansion's accumulator plumbing would add.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "COST_LIMIT",
    "DEFAULT_RANGE_SIZE",
    "ENGINE_MAX_ITERATIONS",
    "estimate_cost",
    "estimate_iterations",
]

COST_LIMIT = 1_000_000
# The most attributes or capacities a device may publish (docs/api.md, "InferenceCluster: what is
# read and derived").
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


# ---------------------------------------------------------------- iterations
#
# cel-expr-python evaluates with an iteration budget shared by every comprehension of one
# evaluation: measured on the installed 0.1.3, 9,999 loop steps in all evaluate and the
# 10,000th fails with "Iteration budget exceeded" (tests/cel/test_cel_iterations.py pins
# both). A selector that could pass that budget on some device is refused at compile time,
# so no selector that compiles ever fails at run time for it and reads as "no match".
ENGINE_MAX_ITERATIONS = 9_999


class _Shape:
    """An upper bound on a value's size (list elements or map entries) and on its elements'."""

    __slots__ = ("size", "element")

    def __init__(self, size: int, element: _Shape | None) -> None:
        self.size = size
        self.element = element  # what iterating (a list) or indexing yields; None: a scalar


def _join(a: _Shape | None, b: _Shape | None) -> _Shape | None:
    if a is None:
        return b
    if b is None:
        return a
    return _Shape(max(a.size, b.size), _join(a.element, b.element))


# Device data (the only variables): a map of at most 32 domains, each of at most 32 entries
# of scalar values; iterating a map yields its (string) keys.
_DEVICE = _Shape(DEFAULT_RANGE_SIZE, _Shape(DEFAULT_RANGE_SIZE, None))
_Scope = dict[str, _Shape | None]


def estimate_iterations(expr: Any) -> int:
    """Upper bound of the comprehension loop steps of one evaluation of a parsed expression."""
    return _iterations(expr, {})


def children(expr: Any) -> list[Any]:
    """The direct subexpressions of a parsed ``cel.expr.Expr``, in source order."""
    kind = expr.WhichOneof("expr_kind")
    if kind == "select_expr":
        return [expr.select_expr.operand]
    if kind == "call_expr":
        call = expr.call_expr
        return ([call.target] if call.HasField("target") else []) + list(call.args)
    if kind == "list_expr":
        return list(expr.list_expr.elements)
    if kind == "struct_expr":
        return [
            part
            for e in expr.struct_expr.entries
            for part in ((e.map_key, e.value) if e.HasField("map_key") else (e.value,))
        ]
    if kind == "comprehension_expr":
        c = expr.comprehension_expr
        return [c.iter_range, c.accu_init, c.loop_condition, c.loop_step, c.result]
    return []


def _iterations(expr: Any, scope: _Scope) -> int:
    if expr.WhichOneof("expr_kind") != "comprehension_expr":
        return sum(_iterations(child, scope) for child in children(expr))
    comp = expr.comprehension_expr
    shape = _shape(comp.iter_range, scope)
    inner = {**scope, comp.iter_var: shape.element if shape is not None else None}
    inner[comp.accu_var] = _shape(comp.accu_init, scope)
    size = shape.size if shape is not None else DEFAULT_RANGE_SIZE
    step = _iterations(comp.loop_condition, inner) + _iterations(comp.loop_step, inner)
    return (
        _iterations(comp.iter_range, scope)
        + _iterations(comp.accu_init, scope)
        + size * (1 + step)
        + _iterations(comp.result, inner)
    )


def _shape(expr: Any, scope: _Scope) -> _Shape | None:
    """An upper bound of the value's shape; None for a scalar."""
    kind = expr.WhichOneof("expr_kind")
    if kind == "list_expr":
        elements = expr.list_expr.elements
        element: _Shape | None = None
        for e in elements:
            element = _join(element, _shape(e, scope))
        return _Shape(len(elements), element)
    if kind == "struct_expr":
        value: _Shape | None = None
        for e in expr.struct_expr.entries:
            value = _join(value, _shape(e.value, scope))
        return _Shape(len(expr.struct_expr.entries), value)
    if kind == "ident_expr":
        name = expr.ident_expr.name
        return scope.get(name, _DEVICE)
    if kind == "select_expr":
        if expr.select_expr.test_only:
            return None
        operand = _shape(expr.select_expr.operand, scope)
        return operand.element if operand is not None else _DEVICE
    if kind == "comprehension_expr":
        # map() and filter() append at most one element per step (``accu + [t]``), so the
        # result is at most the range's size and its elements are what the step appends;
        # all/exists/exists_one give scalars, which this bound covers too.
        comp = expr.comprehension_expr
        source = _shape(comp.iter_range, scope)
        inner = {**scope, comp.iter_var: source.element if source is not None else None}
        inner[comp.accu_var] = _shape(comp.accu_init, scope)
        step = _shape(comp.loop_step, inner)
        size = source.size if source is not None else DEFAULT_RANGE_SIZE
        return _Shape(size, step.element if step is not None else None)
    if kind == "call_expr":
        return _call_shape(expr.call_expr, scope)
    return None


def _call_shape(call: Any, scope: _Scope) -> _Shape | None:
    args = [_shape(a, scope) for a in call.args]
    if call.function == "_+_" and len(args) == 2 and args[0] is not None and args[1] is not None:
        return _Shape(args[0].size + args[1].size, _join(args[0].element, args[1].element))
    if call.function == "_?_:_" and len(args) == 3:
        return _join(args[1], args[2])
    if call.function == "_[_]" and len(args) == 2:
        return args[0].element if args[0] is not None else _DEVICE
    if call.function == "dyn" and len(args) == 1:
        return args[0]
    return None
