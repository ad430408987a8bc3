"""Protobuf message classes for the CEL AST (the subset of cel.expr this package reads).

cel-expr-python exposes a compiled expression only as a serialized
``google.protobuf.Any`` wrapping ``cel.expr.ParsedExpr`` or ``cel.expr.CheckedExpr``.
The descriptors below are built at import time so that we can read and rewrite
that AST without depending on a generated ``cel.expr`` Python package. Fields
we do not declare (``type_map``, ``source_info``) survive a parse/serialize
round trip as unknown fields, which is all the rewrite needs.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_F = descriptor_pb2.FieldDescriptorProto
_PACKAGE = "cel.expr"


def _field(
    msg: Any,
    name: str,
    number: int,
    ftype: int,
    *,
    type_name: str = "",
    repeated: bool = False,
    oneof: int | None = None,
) -> None:
    f = msg.field.add()
    f.name = name
    f.number = number
    f.type = ftype
    f.label = _F.LABEL_REPEATED if repeated else _F.LABEL_OPTIONAL
    if type_name:
        f.type_name = f".{_PACKAGE}.{type_name}"
    if oneof is not None:
        f.oneof_index = oneof


def _map_entry(parent: Any, entry_name: str, value_type: str) -> None:
    entry = parent.nested_type.add()
    entry.name = entry_name
    entry.options.map_entry = True
    _field(entry, "key", 1, _F.TYPE_INT64)
    _field(entry, "value", 2, _F.TYPE_MESSAGE, type_name=value_type)


def _constant(fd: Any) -> None:
    c = fd.message_type.add()
    c.name = "Constant"
    c.oneof_decl.add().name = "constant_kind"
    _field(c, "null_value", 1, _F.TYPE_INT32, oneof=0)
    _field(c, "bool_value", 2, _F.TYPE_BOOL, oneof=0)
    _field(c, "int64_value", 3, _F.TYPE_INT64, oneof=0)
    _field(c, "uint64_value", 4, _F.TYPE_UINT64, oneof=0)
    _field(c, "double_value", 5, _F.TYPE_DOUBLE, oneof=0)
    _field(c, "string_value", 6, _F.TYPE_STRING, oneof=0)
    _field(c, "bytes_value", 7, _F.TYPE_BYTES, oneof=0)


def _expr(fd: Any) -> None:
    e = fd.message_type.add()
    e.name = "Expr"
    e.oneof_decl.add().name = "expr_kind"
    _field(e, "id", 2, _F.TYPE_INT64)
    _field(e, "const_expr", 3, _F.TYPE_MESSAGE, type_name="Constant", oneof=0)
    _field(e, "ident_expr", 4, _F.TYPE_MESSAGE, type_name="Expr.Ident", oneof=0)
    _field(e, "select_expr", 5, _F.TYPE_MESSAGE, type_name="Expr.Select", oneof=0)
    _field(e, "call_expr", 6, _F.TYPE_MESSAGE, type_name="Expr.Call", oneof=0)
    _field(e, "list_expr", 7, _F.TYPE_MESSAGE, type_name="Expr.CreateList", oneof=0)
    _field(e, "struct_expr", 8, _F.TYPE_MESSAGE, type_name="Expr.CreateStruct", oneof=0)
    _field(e, "comprehension_expr", 9, _F.TYPE_MESSAGE, type_name="Expr.Comprehension", oneof=0)

    ident = e.nested_type.add()
    ident.name = "Ident"
    _field(ident, "name", 1, _F.TYPE_STRING)

    sel = e.nested_type.add()
    sel.name = "Select"
    _field(sel, "operand", 1, _F.TYPE_MESSAGE, type_name="Expr")
    _field(sel, "field", 2, _F.TYPE_STRING)
    _field(sel, "test_only", 3, _F.TYPE_BOOL)

    call = e.nested_type.add()
    call.name = "Call"
    _field(call, "target", 1, _F.TYPE_MESSAGE, type_name="Expr")
    _field(call, "function", 2, _F.TYPE_STRING)
    _field(call, "args", 3, _F.TYPE_MESSAGE, type_name="Expr", repeated=True)

    lst = e.nested_type.add()
    lst.name = "CreateList"
    _field(lst, "elements", 1, _F.TYPE_MESSAGE, type_name="Expr", repeated=True)
    _field(lst, "optional_indices", 2, _F.TYPE_INT32, repeated=True)

    st = e.nested_type.add()
    st.name = "CreateStruct"
    _field(st, "message_name", 1, _F.TYPE_STRING)
    _field(st, "entries", 2, _F.TYPE_MESSAGE, type_name="Expr.CreateStruct.Entry", repeated=True)
    entry = st.nested_type.add()
    entry.name = "Entry"
    entry.oneof_decl.add().name = "key_kind"
    _field(entry, "id", 1, _F.TYPE_INT64)
    _field(entry, "field_key", 2, _F.TYPE_STRING, oneof=0)
    _field(entry, "map_key", 3, _F.TYPE_MESSAGE, type_name="Expr", oneof=0)
    _field(entry, "value", 4, _F.TYPE_MESSAGE, type_name="Expr")
    _field(entry, "optional_entry", 5, _F.TYPE_BOOL)

    comp = e.nested_type.add()
    comp.name = "Comprehension"
    _field(comp, "iter_var", 1, _F.TYPE_STRING)
    _field(comp, "iter_range", 2, _F.TYPE_MESSAGE, type_name="Expr")
    _field(comp, "accu_var", 3, _F.TYPE_STRING)
    _field(comp, "accu_init", 4, _F.TYPE_MESSAGE, type_name="Expr")
    _field(comp, "loop_condition", 5, _F.TYPE_MESSAGE, type_name="Expr")
    _field(comp, "loop_step", 6, _F.TYPE_MESSAGE, type_name="Expr")
    _field(comp, "result", 7, _F.TYPE_MESSAGE, type_name="Expr")
    _field(comp, "iter_var2", 8, _F.TYPE_STRING)


def _containers(fd: Any) -> None:
    ref = fd.message_type.add()
    ref.name = "Reference"
    _field(ref, "name", 1, _F.TYPE_STRING)
    _field(ref, "overload_id", 3, _F.TYPE_STRING, repeated=True)
    _field(ref, "value", 4, _F.TYPE_MESSAGE, type_name="Constant")

    parsed = fd.message_type.add()
    parsed.name = "ParsedExpr"
    _field(parsed, "expr", 2, _F.TYPE_MESSAGE, type_name="Expr")

    checked = fd.message_type.add()
    checked.name = "CheckedExpr"
    _map_entry(checked, "ReferenceMapEntry", "Reference")
    _field(
        checked,
        "reference_map",
        2,
        _F.TYPE_MESSAGE,
        type_name="CheckedExpr.ReferenceMapEntry",
        repeated=True,
    )
    _field(checked, "expr", 4, _F.TYPE_MESSAGE, type_name="Expr")


def _build() -> descriptor_pool.DescriptorPool:
    fd = descriptor_pb2.FileDescriptorProto()
    # A private file name keeps this pool from clashing with a real cel.expr package.
    fd.name = "modelplane/cel/_ast_subset.proto"
    fd.package = _PACKAGE
    fd.syntax = "proto3"
    _constant(fd)
    _expr(fd)
    _containers(fd)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    return pool


_POOL = _build()
Expr: Any = message_factory.GetMessageClass(_POOL.FindMessageTypeByName("cel.expr.Expr"))
ParsedExpr: Any = message_factory.GetMessageClass(
    _POOL.FindMessageTypeByName("cel.expr.ParsedExpr")
)
CheckedExpr: Any = message_factory.GetMessageClass(
    _POOL.FindMessageTypeByName("cel.expr.CheckedExpr")
)
