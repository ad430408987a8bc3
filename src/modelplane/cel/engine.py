"""The only module that talks to cel-expr-python.

Two engine environments back every CEL environment of this package:

* a **check** environment, where ``Quantity`` and ``Semver`` are abstract
  (opaque) types and every library function is declared with its exact call
  style (member or global). The engine type-checks against it, so wrong styles,
  missing overloads and ``<`` on quantities are compile errors, as upstream.
* a **runtime** environment, where both types are carried as ``bytes``. The
  engine cannot return an opaque Python object from a function (it reports
  "Unimplemented type"), so a value crosses the boundary as a canonical byte
  string: ``Q<mantissa>e<exponent>`` or ``S<major>.<minor>.<patch>[-pre]``.
  Because the encoding is canonical (equal value, equal bytes; build metadata
  dropped), the engine's own ``==`` and ``!=`` on bytes compare quantities by
  value and versions by precedence.

A checked expression moves from one to the other through the engine's
serialized ``CheckedExpr``; runtime overloads are resolved by name, arity and
argument kind, so the check environment's types never reach the runtime.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from cel_expr_python import cel
from cel_expr_python.ext.ext_strings import ExtStrings
from google.protobuf import any_pb2

from modelplane.errors import ModelplaneError
from modelplane.memo import memoized

from . import _proto
from .cost import children
from .quantity import INT64_MIN, Quantity, is_quantity, parse_quantity
from .semver import Semver, is_semver, parse_semver

__all__ = [
    "CompileFailure",
    "Program",
    "Variables",
    "compile_expression",
    "decode",
    "encode",
    "new_activation",
    "parse_expression",
]

_Q = b"Q"
_S = b"S"
_T_Q = cel.Type.AbstractType("Quantity")
_T_S = cel.Type.AbstractType("Semver")
_B = cel.Type.BYTES
_STR = cel.Type.STRING
_INT = cel.Type.INT
_BOOL = cel.Type.BOOL
_DOUBLE = cel.Type.DOUBLE
_CHECKED_URL = "type.googleapis.com/cel.expr.CheckedExpr"

# ---------------------------------------------------------------- encoding


def encode(value: Quantity | Semver) -> bytes:
    """The canonical runtime representation of a Quantity or Semver."""
    if isinstance(value, Quantity):
        return _Q + f"{value.mantissa}e{value.exponent}".encode()
    text = f"{value.major}.{value.minor}.{value.patch}"
    if value.prerelease:
        text += "-" + ".".join(str(p) for p in value.prerelease)
    return _S + text.encode()


@memoized("cel.engine.decoded", 8192)
def _decode(raw: bytes) -> Quantity | Semver:
    body = raw[1:].decode()
    if raw[:1] == _Q:
        mantissa, _, exponent = body.partition("e")
        return Quantity(int(mantissa), int(exponent))
    if raw[:1] == _S:
        return parse_semver(body)
    raise TypeError("not a Quantity or Semver value")


def decode(raw: bytes | bytearray) -> Quantity | Semver:
    """Inverse of :func:`encode`; TypeError for plain CEL bytes."""
    return _decode(bytes(raw))


def _quantity(raw: bytes | bytearray) -> Quantity:
    value = decode(raw)
    if not isinstance(value, Quantity):
        raise TypeError("no such overload: expected Quantity")
    return value


def _semver(raw: bytes | bytearray) -> Semver:
    value = decode(raw)
    if not isinstance(value, Semver):
        raise TypeError("no such overload: expected Semver")
    return value


def _int64(n: int) -> int:
    # Upstream converts uint64 components with a plain Go conversion, which wraps.
    return ((n - INT64_MIN) % 2**64) + INT64_MIN


# ---------------------------------------------------------------- runtime impls


@memoized("cel.engine.quantities", 4096)
def _rt_quantity(s: str) -> bytes:
    return encode(parse_quantity(s))


@memoized("cel.engine.semvers", 4096)
def _rt_semver(s: str, normalize: bool = False) -> bytes:
    return encode(parse_semver(s, normalize))


def _compare(a: bytes | bytearray, b: bytes | bytearray) -> int:
    x, y = decode(a), decode(b)
    if isinstance(x, Quantity) and isinstance(y, Quantity):
        return x.compare(y)
    if isinstance(x, Semver) and isinstance(y, Semver):
        return x.compare(y)
    raise TypeError("no such overload: compareTo between different types")


def _add(a: bytes | bytearray, b: bytes | bytearray | int) -> bytes:
    other = b if isinstance(b, int) else _quantity(b)
    return encode(_quantity(a).add(other))


def _sub(a: bytes | bytearray, b: bytes | bytearray | int) -> bytes:
    other = b if isinstance(b, int) else _quantity(b)
    return encode(_quantity(a).sub(other))


def _major(a: bytes | bytearray) -> int:
    return _int64(_semver(a).major)


def _minor(a: bytes | bytearray) -> int:
    return _int64(_semver(a).minor)


def _patch(a: bytes | bytearray) -> int:
    return _int64(_semver(a).patch)


# ---------------------------------------------------------------- declarations


@dataclass(frozen=True, slots=True)
class _Fn:
    """One overload: the checked signature and the runtime implementation."""

    name: str
    ident: str
    result: Any
    params: tuple[Any, ...]
    member: bool
    impl: Callable[..., Any]


_FUNCTIONS: tuple[_Fn, ...] = (
    _Fn("quantity", "quantity_string", _T_Q, (_STR,), False, _rt_quantity),
    _Fn("isQuantity", "is_quantity_string", _BOOL, (_STR,), False, is_quantity),
    _Fn("sign", "quantity_sign", _INT, (_T_Q,), False, lambda a: _quantity(a).sign()),
    _Fn(
        "isInteger",
        "quantity_is_integer",
        _BOOL,
        (_T_Q,),
        True,
        lambda a: _quantity(a).is_integer(),
    ),
    _Fn(
        "asInteger", "quantity_as_integer", _INT, (_T_Q,), True, lambda a: _quantity(a).as_integer()
    ),
    _Fn(
        "asApproximateFloat",
        "quantity_as_float",
        _DOUBLE,
        (_T_Q,),
        True,
        lambda a: _quantity(a).as_approximate_float(),
    ),
    _Fn("add", "quantity_add", _T_Q, (_T_Q, _T_Q), True, _add),
    _Fn("add", "quantity_add_int", _T_Q, (_T_Q, _INT), True, _add),
    _Fn("sub", "quantity_sub", _T_Q, (_T_Q, _T_Q), True, _sub),
    _Fn("sub", "quantity_sub_int", _T_Q, (_T_Q, _INT), True, _sub),
    _Fn("compareTo", "quantity_compare_to", _INT, (_T_Q, _T_Q), True, _compare),
    _Fn("compareTo", "semver_compare_to", _INT, (_T_S, _T_S), True, _compare),
    _Fn(
        "isGreaterThan",
        "quantity_is_greater_than",
        _BOOL,
        (_T_Q, _T_Q),
        True,
        lambda a, b: _compare(a, b) == 1,
    ),
    _Fn(
        "isGreaterThan",
        "semver_is_greater_than",
        _BOOL,
        (_T_S, _T_S),
        True,
        lambda a, b: _compare(a, b) == 1,
    ),
    _Fn(
        "isLessThan",
        "quantity_is_less_than",
        _BOOL,
        (_T_Q, _T_Q),
        True,
        lambda a, b: _compare(a, b) == -1,
    ),
    _Fn(
        "isLessThan",
        "semver_is_less_than",
        _BOOL,
        (_T_S, _T_S),
        True,
        lambda a, b: _compare(a, b) == -1,
    ),
    _Fn("semver", "semver_string", _T_S, (_STR,), False, _rt_semver),
    _Fn("semver", "semver_string_bool", _T_S, (_STR, _BOOL), False, _rt_semver),
    _Fn("isSemver", "is_semver_string", _BOOL, (_STR,), False, is_semver),
    _Fn("isSemver", "is_semver_string_bool", _BOOL, (_STR, _BOOL), False, is_semver),
    _Fn("major", "semver_major", _INT, (_T_S,), True, _major),
    _Fn("minor", "semver_minor", _INT, (_T_S,), True, _minor),
    _Fn("patch", "semver_patch", _INT, (_T_S,), True, _patch),
)


def _runtime_type(t: Any) -> Any:
    return _B if t in (_T_Q, _T_S) else t


def _check_decls() -> list[Any]:
    by_name: dict[str, list[Any]] = {}
    for f in _FUNCTIONS:
        overload = cel.Overload(f.ident, f.result, list(f.params), is_member=f.member)
        by_name.setdefault(f.name, []).append(overload)
    return [cel.FunctionDecl(name, overloads) for name, overloads in by_name.items()]


def _runtime_decls() -> list[Any]:
    # Quantity and Semver share one runtime kind (bytes), so overloads that
    # differ only in those types collapse into one implementation that
    # dispatches on the value's tag.
    by_name: dict[str, list[Any]] = {}
    seen: set[tuple[str, tuple[str, ...], bool]] = set()
    for f in _FUNCTIONS:
        params = [_runtime_type(p) for p in f.params]
        key = (f.name, tuple(p.name() for p in params), f.member)
        if key in seen:
            continue
        seen.add(key)
        overload = cel.Overload(
            f"rt_{f.ident}", _runtime_type(f.result), params, is_member=f.member, impl=f.impl
        )
        by_name.setdefault(f.name, []).append(overload)
    return [cel.FunctionDecl(name, overloads) for name, overloads in by_name.items()]


# ---------------------------------------------------------------- environments

Variables = Mapping[str, Any]


def _map_of_maps(inner: Any) -> Any:
    return cel.Type.Map(_STR, cel.Type.Map(_STR, inner))


# The selector environment declares ``device`` as three qualified variables.
# The checker resolves ``device.driver`` as one identifier, so selecting any
# other field (``device.count``) is an undeclared reference at compile time.
DEVICE_DRIVER = "device.driver"
DEVICE_ATTRIBUTES = "device.attributes"
DEVICE_CAPACITY = "device.capacity"

_SELECTOR_VARS_CHECK = {
    DEVICE_DRIVER: _STR,
    DEVICE_ATTRIBUTES: _map_of_maps(cel.Type.DYN),
    DEVICE_CAPACITY: _map_of_maps(_T_Q),
}
_SELECTOR_VARS_RUNTIME = {
    DEVICE_DRIVER: _STR,
    DEVICE_ATTRIBUTES: _map_of_maps(cel.Type.DYN),
    DEVICE_CAPACITY: _map_of_maps(_B),
}
_RULE_VARS = {"self": cel.Type.DYN}
# provider-kubernetes binds the observed object as ``object`` (any type) in a bare
# standard-library environment: no extensions, no Kubernetes libraries.
_OBJECT_VARS = {"object": cel.Type.DYN}


@dataclass(frozen=True, slots=True)
class _EnvPair:
    check: Any
    runtime: Any
    rewrite_domains: bool


# Three kinds (selector, rule, readiness): the bound is the number of kinds.
@memoized("cel.engine.environments", 3)
def _env(kind: str) -> _EnvPair:
    if kind == "readiness":
        return _EnvPair(
            cel.NewEnv(variables=_OBJECT_VARS), cel.NewEnv(variables=_OBJECT_VARS), False
        )
    if kind == "selector":
        return _EnvPair(
            cel.NewEnv(variables=_SELECTOR_VARS_CHECK, functions=_check_decls()),
            cel.NewEnv(variables=_SELECTOR_VARS_RUNTIME, functions=_runtime_decls()),
            True,
        )
    # CRD rules run with the API server's strings library (`split`, `lowerAscii`, ...);
    # DRA selectors deliberately do not (docs/scheduling.md, "Device selectors").
    return _EnvPair(
        cel.NewEnv(variables=_RULE_VARS, functions=_check_decls(), extensions=[ExtStrings()]),
        cel.NewEnv(variables=_RULE_VARS, functions=_runtime_decls(), extensions=[ExtStrings()]),
        False,
    )


# ---------------------------------------------------------------- compilation


class CompileFailure(ModelplaneError):
    """A compile error; ``kind`` is syntax, check, result or cost."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail


_TYPE_NAMES = {
    "NULL": "null_type",
    "DURATION": "google.protobuf.Duration",
    "TIMESTAMP": "google.protobuf.Timestamp",
}


def _type_name(t: Any) -> str:
    name: str = t.name()
    if name in _TYPE_NAMES:
        return _TYPE_NAMES[name]
    if name in ("Quantity", "Semver"):
        return name
    return name.split("<", 1)[0].lower()


def _first_line(err: Exception) -> str:
    line = str(err).splitlines()[0] if str(err) else type(err).__name__
    # absl status codes prefix the engine's message; the detail is the rest.
    for prefix in ("INVALID_ARGUMENT: ", "UNKNOWN: ", "INTERNAL: "):
        line = line.removeprefix(prefix)
    return line.removesuffix(" [INVALID_ARGUMENT]").strip()


def _unpack(serialized: bytes, message: Any) -> Any:
    wrapper = any_pb2.Any()
    wrapper.ParseFromString(serialized)
    result = message()
    result.ParseFromString(wrapper.value)
    return result


@dataclass(frozen=True, slots=True)
class Program:
    """A compiled expression bound to the runtime environment."""

    expression: Any
    env: Any

    def run(self, activation: Any) -> bool:
        """Evaluate; True only when the result is the boolean true."""
        try:
            value = self.expression.eval(activation)
            result = value.value()
        except Exception:  # the engine reports runtime errors as exceptions or values
            return False
        return result is True


def parse_expression(text: str, kind: str) -> Any:
    """The parsed ``cel.expr.Expr`` of ``text``, macros expanded (not type-checked).

    ``kind`` is ``"selector"`` or ``"rule"``. Raises CompileFailure (syntax).
    """
    try:
        parsed = _env(kind).check.compile(text, disable_check=True)
    except Exception as err:
        raise CompileFailure("syntax", _first_line(err)) from None
    return _unpack(parsed.serialize(), _proto.ParsedExpr).expr


def compile_expression(text: str, kind: str) -> Program:
    """Parse, type-check, result-check and (selectors only) cost-check ``text``.

    ``kind`` is ``"selector"``, ``"rule"`` or ``"readiness"``. Raises CompileFailure.
    """
    from .cost import COST_LIMIT, ENGINE_MAX_ITERATIONS, estimate_cost, estimate_iterations

    env = _env(kind)
    ast = parse_expression(text, kind)
    try:
        checked = env.check.compile(text)
    except Exception as err:
        raise CompileFailure("check", _first_line(err)) from None
    result_type = checked.return_type()
    # provider-kubernetes refuses a readiness query whose type is not exactly bool.
    allowed = (_BOOL,) if kind == "readiness" else (_BOOL, cel.Type.DYN)
    if result_type not in allowed:
        raise CompileFailure(
            "result", f"expression must evaluate to bool, got {_type_name(result_type)}"
        )
    # The selector cost estimate (every range 32 long) gates user-written selectors.
    # CRD rules are ours and are gated where the cluster gates them: by the API server's
    # estimate over the schema's real bounds, which the package's cost test runs.
    cost = estimate_cost(ast)
    if kind == "selector" and cost > COST_LIMIT:
        raise CompileFailure(
            "cost", f"expression cost estimate {cost} exceeds the limit of {COST_LIMIT}"
        )
    # The engine stops an evaluation past its iteration budget with an error, which a
    # selector would read as "no match": refuse what could reach it.
    iterations = estimate_iterations(ast)
    if kind == "selector" and iterations > ENGINE_MAX_ITERATIONS:
        raise CompileFailure(
            "cost",
            f"expression may take {iterations} comprehension steps, more than the "
            f"engine's limit of {ENGINE_MAX_ITERATIONS}",
        )
    serialized = checked.serialize()
    if env.rewrite_domains:
        serialized = _rewrite_domains(serialized)
    return Program(env.runtime.deserialize(serialized), env.runtime)


def new_activation(kind: str, data: Mapping[str, Any]) -> Any:
    """A prebuilt activation for the runtime environment of ``kind``.

    Use it only on the thread that built it: elsewhere every call into our functions
    fails (the engine keeps arenas in a thread-local map), so selectors read false.
    """
    return _env(kind).runtime.Activation(data=dict(data))


# ---------------------------------------------------------------- domain rewrite


class _Rewriter:
    """Makes an unknown attribute or capacity domain read as an empty map.

    Upstream wraps both maps in a mapper whose lookup returns ``{}`` for an
    unknown key while membership still sees only real keys. The engine's maps
    cannot do that, so every lookup ``M[k]`` or ``M.k`` on those two maps is
    rewritten to ``k in M ? M[k] : {}``, which behaves the same and keeps the
    plain map (for ``in``, ``size``, comprehensions) untouched.
    """

    def __init__(self, checked: Any) -> None:
        self.checked = checked
        self.refs = checked.reference_map
        self.next_id = self._max_id(checked.expr) + 1

    def _max_id(self, expr: Any) -> int:
        best = int(expr.id)
        for child in children(expr):
            best = max(best, self._max_id(child))
        return best

    def _new_id(self) -> int:
        self.next_id += 1
        return self.next_id

    def _ref(self, node_id: int, name: str, overload: str | None = None) -> None:
        ref = self.refs[node_id]
        ref.name = name
        del ref.overload_id[:]
        if overload:
            ref.overload_id.append(overload)

    def _copy(self, expr: Any) -> Any:
        """A deep copy with fresh ids, carrying reference entries along."""
        clone = _proto.Expr()
        clone.CopyFrom(expr)
        self._renumber(clone)
        return clone

    def _renumber(self, expr: Any) -> None:
        old = int(expr.id)
        expr.id = self._new_id()
        if old in self.refs:
            self.refs[expr.id].CopyFrom(self.refs[old])
        for child in children(expr):
            self._renumber(child)

    def _ident(self, name: str) -> Any:
        node = _proto.Expr(id=self._new_id())
        node.ident_expr.name = name
        self._ref(node.id, name)
        return node

    def _lookup(self, domains: str, key: Any, index_id: int) -> Any:
        cond = _proto.Expr(id=self._new_id())
        cond.call_expr.function = "_?_:_"
        self._ref(cond.id, "_?_:_", "conditional")
        test = cond.call_expr.args.add(id=self._new_id())
        test.call_expr.function = "@in"
        self._ref(test.id, "@in", "in_map")
        test.call_expr.args.append(self._copy(key))
        test.call_expr.args.append(self._ident(domains))
        index = cond.call_expr.args.add(id=index_id)
        index.call_expr.function = "_[_]"
        self._ref(index_id, "_[_]", "index_map")
        index.call_expr.args.append(self._ident(domains))
        index.call_expr.args.append(key)
        empty = cond.call_expr.args.add(id=self._new_id())
        empty.struct_expr.SetInParent()
        return cond

    def _domain_lookup(self, expr: Any) -> Any | None:
        kind = expr.WhichOneof("expr_kind")
        if kind == "call_expr":
            call = expr.call_expr
            if call.function == "_[_]" and not call.HasField("target") and len(call.args) == 2:
                name = _ident_name(call.args[0])
                if name in (DEVICE_ATTRIBUTES, DEVICE_CAPACITY):
                    # Rewrite the key first: it may itself read a domain map.
                    self.rewrite(call.args[1])
                    key = _proto.Expr()
                    key.CopyFrom(call.args[1])
                    return self._lookup(name, key, int(expr.id))
        if kind == "select_expr" and not expr.select_expr.test_only:
            name = _ident_name(expr.select_expr.operand)
            if name in (DEVICE_ATTRIBUTES, DEVICE_CAPACITY):
                key = _proto.Expr(id=self._new_id())
                key.const_expr.string_value = expr.select_expr.field
                return self._lookup(name, key, self._new_id())
        return None

    def rewrite(self, expr: Any) -> None:
        """Rewrite ``expr`` and its descendants in place."""
        replacement = self._domain_lookup(expr)
        if replacement is not None:
            expr.CopyFrom(replacement)
            return
        for child in children(expr):
            self.rewrite(child)


def _ident_name(expr: Any) -> str | None:
    if expr.WhichOneof("expr_kind") == "ident_expr":
        return str(expr.ident_expr.name)
    return None


def _rewrite_domains(serialized: bytes) -> bytes:
    checked = _unpack(serialized, _proto.CheckedExpr)
    _Rewriter(checked).rewrite(checked.expr)
    wrapper = any_pb2.Any(type_url=_CHECKED_URL, value=checked.SerializeToString())
    return bytes(wrapper.SerializeToString())
