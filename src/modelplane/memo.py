"""The one owner of every memo in the process: bounded, thread-safe, counted, cleared together.

Every cache of Modelplane (compiled CEL programs, device values, selector results, pool
shapes, matching plans, validated wire documents, encoded Structs) is registered in
:data:`REGISTRY` under a dotted name, and one policy holds for all of them:

* **bounded**: at most ``bound`` entries; the least recently used is dropped first;
* **thread-safe**: the function server answers one call at a time per process, but its
  metrics endpoint reads the counters from another thread and library callers may use
  threads, so every lookup and insertion is atomic;
* **counted**: hits and misses only grow (they are Prometheus counters); the size is the
  number of entries now;
* **cleared together**: :func:`clear_all` empties every registered memo.

Two shapes share that policy. :class:`Memo` is a key -> value map behind one lock, for
callers whose key is not simply the arguments (a document's digest, a JSON text).
:func:`memoized` decorates a pure function of hashable positional arguments; it is the
standard library's LRU (``functools.lru_cache``: bounded, C-implemented, its bookkeeping
atomic under the interpreter lock, counting hits, misses and size), because it wraps the
innermost CEL and scheduling functions, where a Python-level lock per call measured
several times slower (about 0.5 us against 0.1 us a hit; ``benchmarks/bench_cel.py``'s
warm fleet filter went from 22 ms to 55 ms with it).

A memo never changes a result: it holds values of pure functions of their keys, so a
cold, warm or cleared memo gives the same answers. A value is computed outside any lock
(a slow CEL compile does not hold up other threads); two threads missing the same key at
once may both compute it, and an equal value is kept.

Pure: no I/O and no clocks, so the functional core may use it.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, ParamSpec, Protocol, TypeVar, cast

__all__ = [
    "REGISTRY",
    "Memo",
    "MemoRegistry",
    "MemoStats",
    "clear_all",
    "memoized",
    "same",
    "stats",
]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
P = ParamSpec("P")
R = TypeVar("R")


class _Missing:
    """The marker of "not remembered" (a memo may hold None or False as a real value)."""


_MISSING = _Missing()


@dataclass(frozen=True, slots=True)
class MemoStats:
    """One memo's counters at one moment."""

    name: str
    bound: int
    size: int
    hits: int
    misses: int


def same(remembered: object, given: object) -> bool:
    """Equal content, tested by identity first (the validity test of ``Memo.lookup_valid``).

    The runtime hands one model for the same bytes, and an unchanged cluster's view the
    very objects it was read from: identity spares the walk of an equality test then.
    """
    return remembered is given or remembered == given


class Memo(Generic[K, V]):
    """At most ``bound`` entries of ``key -> value``; the least recently used is dropped first."""

    __slots__ = ("name", "bound", "_items", "_lock", "_hits", "_misses")

    def __init__(self, name: str, bound: int, registry: MemoRegistry | None = None) -> None:
        if bound < 1:
            raise ValueError(f"memo {name}: bound must be at least 1, got {bound}")
        self.name = name
        self.bound = bound
        self._items: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()
        self._hits = 0
        self._misses = 0
        (REGISTRY if registry is None else registry).register(self)

    def lookup(self, key: K) -> V | _Missing:
        """The remembered value (counted as a hit, made most recent), or ``_MISSING`` (a miss)."""
        with self._lock:
            value = self._items.get(key, _MISSING)
            if value is _MISSING:
                self._misses += 1
            else:
                self._hits += 1
                self._items.move_to_end(key)
            return value

    def lookup_valid(self, key: K, valid: Callable[[V], bool]) -> V | _Missing:
        """Like ``lookup``, but an entry ``valid`` refuses is a miss (and stays until replaced).

        For a key that names its input without fixing its content (a name and a version):
        the entry holds what it was computed from, and ``valid`` compares that with the
        input. It runs under the lock, so it must be quick: an identity test first, a
        walk only for an equal input decoded anew (``same``).
        """
        with self._lock:
            value = self._items.get(key, _MISSING)
            if isinstance(value, _Missing) or not valid(value):
                self._misses += 1
                return _MISSING
            self._hits += 1
            self._items.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> V:
        """Remember ``value`` under ``key``, dropping the least recently used past the bound."""
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.bound:
                self._items.popitem(last=False)
        return value

    def get(self, key: K, compute: Callable[[], V]) -> V:
        """The value for ``key``: remembered, or ``compute()`` (outside the lock) remembered."""
        value = self.lookup(key)
        if isinstance(value, _Missing):
            return self.put(key, compute())
        return value

    def clear(self) -> None:
        """Forget every entry; the counters keep counting."""
        with self._lock:
            self._items.clear()

    def stats(self) -> MemoStats:
        """The counters and the current size, read together."""
        with self._lock:
            return MemoStats(self.name, self.bound, len(self._items), self._hits, self._misses)

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)


class _Registered(Protocol):
    """What the registry needs of a memo, whatever its key and value types."""

    @property
    def name(self) -> str: ...

    def clear(self) -> None: ...

    def stats(self) -> MemoStats: ...


class MemoRegistry:
    """Every memo of the process by name: one place to clear them and to read their counters."""

    def __init__(self) -> None:
        self._memos: dict[str, _Registered] = {}
        self._lock = threading.Lock()

    def register(self, memo: _Registered) -> None:
        """Add ``memo``; a second memo under a taken name is a programming error."""
        with self._lock:
            if memo.name in self._memos:
                raise ValueError(f"a memo named {memo.name!r} is registered already")
            self._memos[memo.name] = memo

    def names(self) -> tuple[str, ...]:
        """The registered names, sorted."""
        with self._lock:
            return tuple(sorted(self._memos))

    def clear_all(self) -> None:
        """Empty every registered memo."""
        with self._lock:
            memos = list(self._memos.values())
        for memo in memos:
            memo.clear()

    def stats(self) -> tuple[MemoStats, ...]:
        """Every memo's counters, sorted by name."""
        with self._lock:
            memos = sorted(self._memos.items())
        return tuple(memo.stats() for _, memo in memos)


REGISTRY = MemoRegistry()
"""The process's memos; every module-level memo registers here when its module is imported."""


def clear_all() -> None:
    """Empty every memo of the process (for cold measurements and tests)."""
    REGISTRY.clear_all()


def stats() -> tuple[MemoStats, ...]:
    """Every memo's counters, sorted by name."""
    return REGISTRY.stats()


class _FunctionMemo:
    """The registry's view of one :func:`memoized` function's LRU."""

    __slots__ = ("name", "bound", "_cached", "_lock", "_before")

    def __init__(self, name: str, bound: int, cached: functools._lru_cache_wrapper[object]) -> None:
        self.name = name
        self.bound = bound
        self._cached = cached
        self._lock = threading.Lock()  # between clear() and stats(); calls never take it
        self._before = (0, 0)  # hits and misses counted before the last clear

    def clear(self) -> None:
        """Forget every entry; the counters keep counting."""
        # cache_clear() zeroes the LRU's own counters, so they are carried over here. A call
        # landing between the two lines is not counted: clearing is for tests and benchmarks.
        with self._lock:
            info = self._cached.cache_info()
            self._cached.cache_clear()
            self._before = (self._before[0] + info.hits, self._before[1] + info.misses)

    def stats(self) -> MemoStats:
        """The counters and the current size."""
        with self._lock:
            info = self._cached.cache_info()
            hits, misses = self._before
        return MemoStats(
            self.name, self.bound, info.currsize, hits + info.hits, misses + info.misses
        )


def memoized(
    name: str, bound: int, registry: MemoRegistry | None = None
) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Memoise a pure function of hashable positional arguments, registered as ``name``.

    Calls with equal arguments share one entry; ``f(1)``, ``f(1, False)`` and
    ``f(1, flag=False)`` are three, so callers pass arguments one way.
    """
    if bound < 1:
        raise ValueError(f"memo {name}: bound must be at least 1, got {bound}")

    def decorate(fn: Callable[P, R]) -> Callable[P, R]:
        cached = functools.lru_cache(maxsize=bound)(fn)
        view = _FunctionMemo(name, bound, cast("functools._lru_cache_wrapper[object]", cached))
        (REGISTRY if registry is None else registry).register(view)
        return cast("Callable[P, R]", cached)

    return decorate
