"""CRD validation rules (``x-kubernetes-validations``): ``self`` is dyn, plus the
quantity and semver libraries."""

from __future__ import annotations

from modelplane.memo import memoized

from .engine import CompileFailure, Program, compile_expression
from .errors import CelError

__all__ = ["CompiledRule", "compile_rule"]


class CompiledRule:
    """A compiled rule; evaluate it against one node of a document."""

    __slots__ = ("expression", "_program")

    def __init__(self, expression: str, program: Program) -> None:
        self.expression = expression
        self._program = program

    def evaluate(self, self_value: object) -> bool:
        """True only if the rule yields boolean true; any error or non-bool is False."""
        try:
            activation = self._program.env.Activation(data={"self": self_value})
        except Exception:  # a value the engine cannot represent fails the rule
            return False
        return self._program.run(activation)


def compile_rule(expr: str) -> CompiledRule:
    """Compile a CRD rule (cached by text); raises CelError on failure."""
    cached = _compile(expr)
    if isinstance(cached, CelError):
        raise CelError(cached.detail, cached.kind)
    return cached


# Our CRDs carry a few hundred rules at most; a failure is remembered too.
@memoized("cel.rules", 4096)
def _compile(expr: str) -> CompiledRule | CelError:
    try:
        return CompiledRule(expr, compile_expression(expr, "rule"))
    except CompileFailure as failure:
        return CelError(failure.detail, failure.kind)
