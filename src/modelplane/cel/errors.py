"""The exception type of the public API."""

from __future__ import annotations

from modelplane.errors import ModelplaneError

__all__ = ["CelError"]


class CelError(ModelplaneError):
    """A CEL expression failed to compile; ``str(err)`` is the detail text.

    ``kind`` says which step refused it: ``syntax``, ``check`` (undeclared
    names, no matching overload), ``result`` (not bool or dyn) or ``cost``.
    """

    def __init__(self, detail: str, kind: str = "check") -> None:
        super().__init__(detail)
        self.detail = detail
        self.kind = kind
