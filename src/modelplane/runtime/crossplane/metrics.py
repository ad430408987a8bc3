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
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

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

    def render(self) -> str:
        """Every metric in the text exposition format."""
        with self._lock:
            requests = sorted(self._requests.items())
            durations = sorted((k, self._seconds[k], self._count[k]) for k in self._count)
        lines = [
            f"# HELP {REQUESTS} RunFunction calls answered, by composite kind and result.",
            f"# TYPE {REQUESTS} counter",
            *(f'{REQUESTS}{{kind="{_escape(k)}",result="{r}"}} {n}' for (k, r), n in requests),
            f"# HELP {DURATION} Time spent answering RunFunction calls, by composite kind.",
            f"# TYPE {DURATION} summary",
            *_summary_lines(durations),
            *_memo_lines(self.memo_stats()),
        ]
        return "\n".join(lines) + "\n"


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


def metrics_server(address: str, metrics: Metrics = METRICS) -> ThreadingHTTPServer:
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


def start_metrics_server(address: str, metrics: Metrics = METRICS) -> ThreadingHTTPServer:
    """Bind and serve in a daemon thread; stop with ``shutdown()`` then ``server_close()``."""
    server = metrics_server(address, metrics)
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    return server
