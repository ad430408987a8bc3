"""Prometheus metrics of the function process, served over HTTP at ``/metrics``.

Crossplane's package runtime gives every Function's pod a container port ``metrics``
(8080) and, unless they are set already, the annotations ``prometheus.io/scrape: "true"``,
``prometheus.io/port`` and ``prometheus.io/path: /metrics`` (crossplane
``internal/controller/pkg/runtime/runtime.go`` and ``runtime_override_options.go``,
v2.0 to v2.3). So the image serves that port: a scraper finds what the pod declares.

The counters are kept in-process, written in the Prometheus text exposition format
(version 0.0.4) with the standard library only. Beside the calls, every memo of the
process (``modelplane.memo``) reports its hits, misses, entries and bound, labelled by
the memo's name: whether the caches are warm, and whether one is full and churning, is
read off the same scrape.

A server of several worker processes serves one endpoint for the pod: each worker hands
its counters (a :class:`Snapshot`) back with every answer, and :class:`PodMetrics` sums
the latest of each, so a scrape reads the pod's totals whichever process answered.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

from modelplane import memo
from modelplane.api.kinds import KINDS
from modelplane.errors import ModelplaneError

# Crossplane's MetricsPortNumber (internal/controller/pkg/runtime/runtime.go).
DEFAULT_METRICS_ADDRESS = "0.0.0.0:8080"
METRICS_PATH = "/metrics"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# The kinds a composite can be; anything else is counted as "other", so a caller cannot
# grow the label set without bound.
KNOWN_KINDS = frozenset(info.kind for info in KINDS)

REQUESTS = "modelplane_function_requests_total"
DURATION = "modelplane_function_request_duration_seconds"
MEMO_HITS = "modelplane_memo_hits_total"
MEMO_MISSES = "modelplane_memo_misses_total"
MEMO_ENTRIES = "modelplane_memo_entries"
MEMO_BOUND = "modelplane_memo_bound_entries"


def _escape(value: str) -> str:
    """A label value as the exposition format writes it."""
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _kind_label(kind: Any) -> str:
    return kind if isinstance(kind, str) and kind in KNOWN_KINDS else "other"


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Every counter of one process (or the sum of several) at one moment; picklable."""

    requests: tuple[tuple[tuple[str, str], int], ...] = ()
    """((kind, result), calls), sorted."""
    durations: tuple[tuple[str, float, int], ...] = ()
    """(kind, seconds, calls), sorted."""
    memos: tuple[memo.MemoStats, ...] = ()
    """Every memo's counters, sorted by name."""


@dataclass
class Metrics:
    """RunFunction calls by composite kind: how many, how many Fatal, and their duration."""

    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _requests: dict[tuple[str, str], int] = field(default_factory=dict)
    _seconds: dict[str, float] = field(default_factory=dict)
    _count: dict[str, int] = field(default_factory=dict)
    memo_stats: Callable[[], Sequence[memo.MemoStats]] = field(default=memo.stats, repr=False)

    def observe(self, kind: Any, fatal: bool, seconds: float) -> None:
        """Count one answered call of a composite of ``kind``."""
        label = _kind_label(kind)
        result = "fatal" if fatal else "ok"
        with self._lock:
            self._requests[(label, result)] = self._requests.get((label, result), 0) + 1
            self._seconds[label] = self._seconds.get(label, 0.0) + seconds
            self._count[label] = self._count.get(label, 0) + 1

    def snapshot(self) -> Snapshot:
        """The calls counted so far and the memos' counters now."""
        with self._lock:
            requests = tuple(sorted(self._requests.items()))
            durations = tuple(sorted((k, self._seconds[k], self._count[k]) for k in self._count))
        return Snapshot(requests, durations, tuple(self.memo_stats()))

    def render(self) -> str:
        """Every metric in the text exposition format."""
        return render(self.snapshot())


def merge(snapshots: Iterable[Snapshot]) -> Snapshot:
    """The sum of several processes' counters: calls, durations and memos added up by label.

    A memo's entries and bound add up too: the pod holds that many entries at most.
    """
    requests: dict[tuple[str, str], int] = {}
    seconds: dict[str, float] = {}
    count: dict[str, int] = {}
    memos: dict[str, memo.MemoStats] = {}
    for snap in snapshots:
        for key, calls in snap.requests:
            requests[key] = requests.get(key, 0) + calls
        for kind, spent, calls in snap.durations:
            seconds[kind] = seconds.get(kind, 0.0) + spent
            count[kind] = count.get(kind, 0) + calls
        for stats in snap.memos:
            known = memos.get(stats.name)
            memos[stats.name] = stats if known is None else _add(known, stats)
    return Snapshot(
        tuple(sorted(requests.items())),
        tuple(sorted((k, seconds[k], count[k]) for k in count)),
        tuple(memos[name] for name in sorted(memos)),
    )


def _add(a: memo.MemoStats, b: memo.MemoStats) -> memo.MemoStats:
    return memo.MemoStats(
        a.name, a.bound + b.bound, a.size + b.size, a.hits + b.hits, a.misses + b.misses
    )


class PodMetrics:
    """The pod's metrics when worker processes answer: the sum of each one's latest snapshot."""

    def __init__(self, workers: int, start: Snapshot) -> None:
        self._lock = threading.Lock()
        self._latest = [start] * workers

    def update(self, worker: int, snapshot: Snapshot) -> None:
        """Worker ``worker``'s counters as of its last answer (never older than the last)."""
        with self._lock:
            self._latest[worker] = snapshot

    def snapshot(self) -> Snapshot:
        """Every worker's counters, summed."""
        with self._lock:
            latest = list(self._latest)
        return merge(latest)

    def render(self) -> str:
        """Every metric of the pod in the text exposition format."""
        return render(self.snapshot())


def render(snapshot: Snapshot) -> str:
    """Every metric of ``snapshot`` in the text exposition format."""
    lines = [
        f"# HELP {REQUESTS} RunFunction calls answered, by composite kind and result.",
        f"# TYPE {REQUESTS} counter",
        *(f'{REQUESTS}{{kind="{_escape(k)}",result="{r}"}} {n}' for (k, r), n in snapshot.requests),
        f"# HELP {DURATION} Time spent answering RunFunction calls, by composite kind.",
        f"# TYPE {DURATION} summary",
        *_summary_lines(snapshot.durations),
        *_memo_lines(snapshot.memos),
    ]
    return "\n".join(lines) + "\n"


class Renders(Protocol):
    """What the endpoint serves: one process's :class:`Metrics` or the :class:`PodMetrics`."""

    def render(self) -> str: ...


def _memo_lines(stats: Sequence[memo.MemoStats]) -> list[str]:
    families = (
        (MEMO_HITS, "counter", "Lookups answered from a memo, by memo.", "hits"),
        (MEMO_MISSES, "counter", "Lookups a memo had to compute, by memo.", "misses"),
        (MEMO_ENTRIES, "gauge", "Entries a memo holds now, by memo.", "size"),
        (MEMO_BOUND, "gauge", "Entries a memo holds at most, by memo.", "bound"),
    )
    lines: list[str] = []
    for name, kind, text, attribute in families:
        lines += [f"# HELP {name} {text}", f"# TYPE {name} {kind}"]
        lines += [f'{name}{{memo="{_escape(s.name)}"}} {getattr(s, attribute)}' for s in stats]
    return lines


def _summary_lines(durations: Iterable[tuple[str, float, int]]) -> list[str]:
    lines: list[str] = []
    for kind, seconds, count in durations:
        label = f'{{kind="{_escape(kind)}"}}'
        lines += [f"{DURATION}_sum{label} {seconds!r}", f"{DURATION}_count{label} {count}"]
    return lines


METRICS = Metrics()
"""The process's metrics, fed by every RunFunction call."""


class MetricsError(ModelplaneError):
    """The metrics endpoint could not listen."""


def split_address(address: str) -> tuple[str, int]:
    """``HOST:PORT`` (an IPv4 address or a host name) as a host and a port; raises MetricsError."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise MetricsError(f"invalid metrics address {address!r}: want HOST:PORT")
    return host, int(port)


def metrics_server(address: str, metrics: Renders = METRICS) -> ThreadingHTTPServer:
    """An HTTP server answering ``GET /metrics`` on ``address`` (bound, not yet serving)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
            if self.path.split("?", 1)[0] != METRICS_PATH:
                self.send_error(404)
                return
            body = metrics.render().encode()
            self.send_response(200)
            self.send_header("Content-Type", CONTENT_TYPE)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            """Scrapes are not logged: the function's log stays one line per event."""

    host, port = split_address(address)
    try:
        server = ThreadingHTTPServer((host, port), Handler)
    except OSError as error:
        raise MetricsError(f"cannot listen on {address} for metrics: {error}") from error
    server.daemon_threads = True
    return server


def start_metrics_server(address: str, metrics: Renders = METRICS) -> ThreadingHTTPServer:
    """Bind and serve in a daemon thread; stop with ``shutdown()`` then ``server_close()``."""
    server = metrics_server(address, metrics)
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    return server
