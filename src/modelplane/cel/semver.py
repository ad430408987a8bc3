"""Semantic versions, parsed as blang/semver v4 ``Parse`` (the Kubernetes CEL semver library)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import total_ordering

from modelplane.errors import ModelplaneError

__all__ = ["Semver", "SemverError", "is_semver", "parse_semver"]

_UINT64_MAX = 2**64 - 1
_DIGITS = frozenset("0123456789")
_ALNUM = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-")


class SemverError(ModelplaneError, ValueError):
    """A string is not a semantic version."""


@total_ordering
@dataclass(frozen=True, slots=True, eq=False)
class Semver:
    """A parsed version. ``build`` is kept but ignored by order and equality."""

    major: int
    minor: int
    patch: int
    prerelease: tuple[int | str, ...] = ()
    build: tuple[str, ...] = ()

    def compare(self, other: Semver) -> int:
        """Semver precedence: -1, 0 or 1 (build metadata ignored)."""
        a = (self.major, self.minor, self.patch)
        b = (other.major, other.minor, other.patch)
        if a != b:
            return -1 if a < b else 1
        if not self.prerelease or not other.prerelease:
            # A release ranks above any of its prereleases.
            return (not self.prerelease) - (not other.prerelease)
        for x, y in zip(self.prerelease, other.prerelease, strict=False):
            c = _compare_identifier(x, y)
            if c:
                return c
        n, m = len(self.prerelease), len(other.prerelease)
        return (n > m) - (n < m)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Semver):
            return NotImplemented
        return self.compare(other) == 0

    def __hash__(self) -> int:
        return hash((self.major, self.minor, self.patch, self.prerelease))

    def __lt__(self, other: Semver) -> bool:
        return self.compare(other) < 0


def _compare_identifier(x: int | str, y: int | str) -> int:
    if isinstance(x, int) and isinstance(y, int):
        return (x > y) - (x < y)
    if isinstance(x, int):
        return -1  # numeric identifiers rank below alphanumeric ones
    if isinstance(y, int):
        return 1
    return (x > y) - (x < y)


def _number(part: str, what: str) -> int:
    if not part or not set(part) <= _DIGITS:
        raise SemverError(f"invalid character(s) in {what} number {part!r}")
    if len(part) > 1 and part[0] == "0":
        raise SemverError(f"{what} number must not contain leading zeroes {part!r}")
    value = int(part)
    if value > _UINT64_MAX:
        raise SemverError(f"{what} number out of range {part!r}")
    return value


def _prerelease_identifier(s: str) -> int | str:
    if not s:
        raise SemverError("prerelease is empty")
    if set(s) <= _DIGITS:
        return _number(s, "prerelease")
    if not set(s) <= _ALNUM:
        raise SemverError(f"invalid character(s) in prerelease {s!r}")
    return s


def _parse_strict(s: str) -> Semver:
    if not s:
        raise SemverError("version string empty")
    parts = s.split(".", 2)
    if len(parts) != 3:
        raise SemverError("no major, minor and patch version elements found")
    major = _number(parts[0], "major")
    minor = _number(parts[1], "minor")
    rest = parts[2]
    build: list[str] = []
    prerelease: list[str] = []
    if "+" in rest:
        rest, _, meta = rest.partition("+")
        build = meta.split(".")
    if "-" in rest:
        rest, _, pre = rest.partition("-")
        prerelease = pre.split(".")
    patch = _number(rest, "patch")
    pre_ids = tuple(_prerelease_identifier(p) for p in prerelease)
    for b in build:
        if not b or not set(b) <= _ALNUM:
            raise SemverError(f"invalid build metadata {b!r}")
    return Semver(major, minor, patch, pre_ids, tuple(build))


def _normalize(s: str) -> str:
    """The Kubernetes library's lenient normalisation, applied before strict parsing."""
    if s.startswith("v"):
        s = s[1:]
    parts = s.split(".", 2)
    for i, part in enumerate(parts):
        if len(part) > 1:
            trimmed = part.lstrip("0")
            if not trimmed or trimmed[0] not in _DIGITS:
                trimmed = "0" + trimmed
            parts[i] = trimmed
    if len(parts) < 3:
        if "+" in parts[-1] or "-" in parts[-1]:
            raise SemverError("prerelease or build metadata need major, minor and patch")
        parts += ["0"] * (3 - len(parts))
    return ".".join(parts)


def parse_semver(s: str, normalize: bool = False) -> Semver:
    """Parse ``s`` strictly, or after normalisation when ``normalize`` is true."""
    return _parse_strict(_normalize(s) if normalize else s)


def is_semver(s: str, normalize: bool = False) -> bool:
    """True iff :func:`parse_semver` would succeed."""
    try:
        parse_semver(s, normalize)
    except SemverError:
        return False
    return True
