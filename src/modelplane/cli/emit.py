"""Indented JSON text, byte for byte ``json.dumps(value, indent=2, ensure_ascii=False)``, faster.

The standard library writes indented JSON in Python (its C encoder has no indentation),
about 0.85 s for the 28 MB that ``render -o json`` prints for a fleet of 1,000 clusters.
orjson writes the same layout in C (two spaces a level, ``", "`` never, ``": "`` between a
key and its value, ``{}`` and ``[]`` for empty containers) in about 0.04 s, but its tokens
are not always the standard library's: some small floats (``0.00001`` against
``1e-05``, ``2.5e-7`` against ``2.5e-07``), NaN and the infinities (``null`` against
``NaN``), and values it refuses (integers past 64 bits, keys that are not strings, lone
surrogates, nesting past 255 levels). So the indented text
is taken from orjson only when the two writers' compact texts of the same value are equal
byte for byte (the standard library's compact writer is C: about 0.19 s for the same
value): the same tokens in the same order, laid out the same way. Anything else is
written by the standard library, as before. ``tests/cli/test_emit.py`` compares the two
on hypothesis values and on the cases that differ.
"""

from __future__ import annotations

import json
from typing import Any

try:  # pragma: no cover - the import either works or it does not
    import orjson
except ImportError:  # pragma: no cover
    orjson = None  # type: ignore[assignment]


def _standard(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def indented_json(value: Any) -> str:
    """``json.dumps(value, indent=2, ensure_ascii=False)``, the same text."""
    fast = _fast(value)
    return _standard(value) if fast is None else fast


def _fast(value: Any) -> str | None:
    """orjson's indented text where its compact text is the standard library's, else None."""
    if orjson is None:
        return None
    try:
        compact = orjson.dumps(value)
        indented = orjson.dumps(value, option=orjson.OPT_INDENT_2)
    except (TypeError, orjson.JSONEncodeError):
        return None
    try:
        standard = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError):  # pragma: no cover - the indented writer raises the same
        return None
    # The standard text may hold a lone surrogate, which has no UTF-8 form: never equal then.
    if compact != standard.encode("utf-8", "surrogatepass"):
        return None
    return indented.decode("utf-8")
