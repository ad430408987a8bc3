"""Readiness queries of provider-kubernetes Objects, evaluated as the provider would
(docs/composition.md, "Ready means rolled out"). The tests' evaluator: the product only
writes the queries, the provider runs them in the cluster.

provider-kubernetes v1.2.1 (``checkDeriveFromCelQuery``) compiles ``spec.readiness.celQuery``
in a standard-library environment with the observed object bound as ``object``; the query
must type-check as ``bool``, and the Object is Ready only when it yields ``true`` (an
evaluation error, such as reading an absent field, reads not Ready). The object arrives
after a JSON round trip, so every number is a double.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from modelplane.cel.engine import CompileFailure, Program, compile_expression
from modelplane.cel.errors import CelError


class ReadinessQuery:
    """A compiled readiness query; evaluate it against one observed object."""

    __slots__ = ("query", "_program")

    def __init__(self, query: str, program: Program) -> None:
        self.query = query
        self._program = program

    def ready(self, obj: Mapping[str, Any]) -> bool:
        """Whether the provider would read ``obj`` Ready: the query yields boolean true."""
        try:
            activation = self._program.env.Activation(data={"object": dict(obj)})
        except Exception:  # a value the engine cannot represent is an evaluation error
            return False
        return self._program.run(activation)


def compile_readiness(query: str) -> ReadinessQuery:
    """Compile a readiness query; raises CelError on failure."""
    try:
        return ReadinessQuery(query, compile_expression(query, "readiness"))
    except CompileFailure as failure:
        raise CelError(failure.detail, failure.kind) from None
