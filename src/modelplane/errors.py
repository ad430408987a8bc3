"""The one base of every error Modelplane defines.

A caller that embeds the package can catch ``ModelplaneError`` to tell Modelplane's own
failures from anything else. Errors that callers already catch by a builtin kind keep it
as a second base (``class QuantityError(ModelplaneError, ValueError)``), so nothing that
caught them before stops doing so.
"""


class ModelplaneError(Exception):
    """An error raised by Modelplane itself."""
