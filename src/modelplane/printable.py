"""Text that cannot forge terminal output: control characters escaped (docs/api.md "The steps").

A name, a file name or a message may hold a newline (one problem would print as two
lines), a carriage return or an escape sequence (which would rewrite what the terminal
shows). Every line the CLI prints about its input goes through ``printable``.
"""

from __future__ import annotations

import re

# C0 and C1 controls, DEL, the Unicode line and paragraph separators, the bidirectional
# overrides and isolates (they reorder what is shown), and lone surrogates (a file name
# that is not UTF-8, which the terminal's encoder would refuse).
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with every control character escaped, so it prints as exactly one line."""
    return _UNSAFE.sub(_escape, text)
