"""The gRPC server: the v1 and v1beta1 FunctionRunnerServices, mTLS or insecure.

A thin shell around ``dispatch.run_call``: decode, run, encode, log. Structured JSON logs go
to stderr; SIGTERM drains in-flight calls and returns 0.

Calls are answered one at a time per process: with one worker on the serving thread
itself, with several by forked worker processes the server hands each call to
(``workers``). docs/crossplane.md, "How calls are served", says why.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from concurrent import futures
from contextlib import suppress
from dataclasses import dataclass
from http.server import ThreadingHTTPServer
from pathlib import Path
from types import FrameType
from typing import Any

import crossplane.function.proto.v1.run_function_pb2 as fnv1
import crossplane.function.proto.v1beta1.run_function_pb2 as fnv1beta1
import grpc
from google.protobuf.message import DecodeError
from grpc_reflection.v1alpha import reflection  # type: ignore[import-untyped]

from modelplane.errors import ModelplaneError
from modelplane.memo import Memo
from modelplane.runtime.crossplane import dispatch
from modelplane.runtime.crossplane.messages import FunctionRequest, fatal
from modelplane.runtime.crossplane.metrics import (
    METRICS,
    MetricsError,
    Renders,
    start_metrics_server,
)
from modelplane.runtime.crossplane.proto import (
    Digests,
    request_from_proto,
    request_key,
    response_to_proto,
)
from modelplane.runtime.crossplane.workers import BytesCall, WorkerLost, WorkerPool

DEFAULT_ADDRESS = "0.0.0.0:9443"
CERTS_ENV = "TLS_SERVER_CERTS_DIR"
SHUTDOWN_GRACE_SECONDS = 5.0
# A fleet of a thousand clusters plus every replica of every namespace arrives in one
# request; gRPC's 4 MiB default would refuse it.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
# What Crossplane accepts back: it dials functions with grpc-go's default client receive
# size, 4 MiB (crossplane v2.3.4 internal/xfn/function_runner.go sets none; grpc-go
# dialoptions.go defaultClientMaxReceiveMessageSize). A larger answer would fail the call
# as a transport error with no word on the composite, so it is answered Fatal instead.
CROSSPLANE_RECEIVE_LIMIT = 4 * 1024 * 1024
# With worker processes the server's threads only relay bytes and wait; enough of them
# that calls waiting for one busy worker do not hold up calls for an idle one.
RELAY_THREADS_PER_WORKER = 16

LOG = logging.getLogger("modelplane.function")

Handler = Callable[[fnv1.RunFunctionRequest], fnv1.RunFunctionResponse]


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts, level, logger, msg, and the record's ``fields``."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": round(record.created, 3),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            entry.update(fields)
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def configure_logging(debug: bool = False) -> None:
    """Structured logs on stderr, ours and gRPC's alike; ``debug`` lowers ours to debug."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    logging.getLogger("modelplane").setLevel(logging.DEBUG if debug else logging.INFO)


def _describe(request: fnv1.RunFunctionRequest) -> dict[str, Any]:
    """What identifies a request in the logs: tag and composite, without reading it whole."""
    fields: dict[str, Any] = {"tag": request.meta.tag}
    composite = request.observed.composite.resource
    for key in ("apiVersion", "kind"):
        value = composite.fields.get(key)
        if value is not None and value.WhichOneof("kind") == "string_value":
            fields[key] = value.string_value
    metadata = composite.fields.get("metadata")
    if metadata is not None and metadata.WhichOneof("kind") == "struct_value":
        for key in ("namespace", "name"):
            value = metadata.struct_value.fields.get(key)
            if value is not None and value.WhichOneof("kind") == "string_value":
                fields[key] = value.string_value
    return fields


@dataclass(frozen=True, slots=True)
class Answer:
    """A response on the wire, with what its log line and metrics say about it."""

    wire: bytes
    fatal: str | None
    resources: int
    requirements: int
    timeless: bool = True  # False: it depends on the clock too, so it is never remembered


# Whole answers are remembered for the composites whose requests grow with the fleet
# (a deployment and a cache read every InferenceCluster): between changes Crossplane sends
# the same request once a poll interval, and the answer is the same bytes. Other kinds are
# small requests called once per object of the fleet (a ModelReplica per replica): they
# would only churn this memo. Bound: ANSWERS entries of at most ANSWER_BYTES each.
ANSWER_KINDS = frozenset({"ModelDeployment", "ModelCache"})
ANSWERS = 256
ANSWER_BYTES = 1024 * 1024
_ANSWERS: Memo[str, Answer] = Memo("runtime.answers", ANSWERS)


def _compute(request: fnv1.RunFunctionRequest, view: FunctionRequest | str) -> Answer:
    """Run the function on ``view`` (a text: why the request could not be read), encoded."""
    response = fatal(view) if isinstance(view, str) else dispatch.run_call(view)
    try:
        wire = response_to_proto(request, response)
    except Exception as error:  # noqa: BLE001 - never answer with a half-built desired state
        LOG.exception("response could not be built", extra={"fields": _describe(request)})
        response = fatal(f"internal error: {type(error).__name__}: {error}")
        wire = response_to_proto(request, response)
    data = bytes(wire.SerializeToString())
    if len(data) > CROSSPLANE_RECEIVE_LIMIT:
        # Nothing is applied or deleted on a Fatal result: what runs stays as it is.
        LOG.error("answer over the receive limit", extra={"fields": _describe(request)})
        response = fatal(
            f"the answer is {len(data)} bytes, over the {CROSSPLANE_RECEIVE_LIMIT} bytes "
            "Crossplane receives from a function; nothing was changed "
            f"({len(response.resources)} composed resources)",
            response.requirements,
        )
        data = bytes(response_to_proto(request, response).SerializeToString())
    return Answer(
        data,
        next((r.message for r in response.results if r.severity == "Fatal"), None),
        len(response.resources),
        len(response.requirements),
        response.timeless,
    )


def answer(request: fnv1.RunFunctionRequest) -> Answer:
    """Answer one request on the wire; never raises.

    A deployment's or cache's answer is remembered by ``request_key`` (each object's
    content digest, the rest of the request by its deterministic encoding): a repeated
    request costs its decoding and its key, not a reconcile, nor the reading of its
    objects; a changed one reuses the objects' digests. An answer that depends on the clock
    (``FunctionResponse.timeless`` False) is never remembered.
    """
    started = time.perf_counter()
    fields = _describe(request)
    result: Answer | None = None
    key: str | None = None
    digests: Digests | None = None
    if fields.get("kind") in ANSWER_KINDS:
        try:
            key, digests = request_key(request)
        except Exception:  # noqa: BLE001 - an unkeyable request is answered, not remembered
            LOG.exception("request could not be keyed", extra={"fields": fields})
        if key is not None:
            found = _ANSWERS.lookup(key)
            if isinstance(found, Answer):
                result = found
    if result is None:
        view: FunctionRequest | str
        try:
            view = request_from_proto(request, digests)
        except Exception as error:  # noqa: BLE001 - converting the request itself failed
            LOG.exception("request could not be read", extra={"fields": fields})
            view = f"malformed request: {type(error).__name__}: {error}"
        result = _compute(request, view)
        if (
            key is not None
            and not isinstance(view, str)
            and result.timeless
            and len(result.wire) <= ANSWER_BYTES
        ):
            _ANSWERS.put(key, result)
    _log_answer(fields, result, time.perf_counter() - started)
    return result


def handle(request: fnv1.RunFunctionRequest) -> fnv1.RunFunctionResponse:
    """Answer one request over the wire types; never raises."""
    response = fnv1.RunFunctionResponse()
    response.ParseFromString(answer(request).wire)
    return response


def _log_answer(fields: dict[str, Any], result: Answer, seconds: float) -> None:
    METRICS.observe(fields.get("kind"), result.fatal is not None, seconds)
    fields = dict(
        fields,
        duration_ms=round(seconds * 1000, 2),
        resources=result.resources,
        requirements=result.requirements,
    )
    if result.fatal is not None:
        fields["fatal"] = result.fatal
        LOG.warning("function returned a fatal result", extra={"fields": fields})
    else:
        LOG.debug("function ran", extra={"fields": fields})


# Both services: Crossplane v2 calls v1; v1beta1 serves older callers. The v1beta1
# messages are a copy of v1 under another package name, field for field, so one handler
# working on the wire bytes serves both without converting anything.
SERVICES = tuple(
    module.DESCRIPTOR.services_by_name["FunctionRunnerService"].full_name
    for module in (fnv1, fnv1beta1)
)


def run_bytes(data: bytes, handler: Handler | None = None) -> bytes:
    """One RunFunction call on the wire bytes of a v1 or v1beta1 request.

    A request protobuf cannot decode (for example nested deeper than its limit) gets a
    Fatal result instead of a transport error, so the reason shows on the composite.
    """
    try:
        request = fnv1.RunFunctionRequest.FromString(data)
    except DecodeError as error:
        LOG.warning("request could not be decoded", extra={"fields": {"error": str(error)}})
        response = fnv1.RunFunctionResponse(
            results=[
                fnv1.Result(
                    severity=fnv1.SEVERITY_FATAL,
                    message=f"malformed request: cannot decode RunFunctionRequest: {error}",
                )
            ]
        )
        return bytes(response.SerializeToString())
    if handler is None:
        return answer(request).wire
    return bytes(handler(request).SerializeToString())


def _generic_handlers(call: BytesCall) -> list[grpc.GenericRpcHandler]:
    def run(data: bytes, context: grpc.ServicerContext) -> bytes:
        try:
            return call(data)
        except WorkerLost as error:
            LOG.error("call not answered", extra={"fields": {"error": str(error)}})
            context.abort(grpc.StatusCode.UNAVAILABLE, f"modelplane function: {error}")
            raise  # abort raises; this line is for the type checker

    method = grpc.unary_unary_rpc_method_handler(run)
    return [
        grpc.method_handlers_generic_handler(service, {"RunFunction": method})
        for service in SERVICES
    ]


class ServeError(ModelplaneError):
    """The server could not start (bad certificates, address in use)."""


@dataclass(frozen=True)
class ServeConfig:
    """How to serve: where, and with which credentials (None with ``insecure``)."""

    address: str = DEFAULT_ADDRESS
    insecure: bool = False
    tls_certs_dir: Path | None = None
    metrics_address: str | None = None
    """Where ``/metrics`` is served (plain HTTP); None serves no metrics."""
    workers: int = 1
    """Processes answering calls: 1 answers on the serving thread, more are forked."""
    threads: int = 1
    """Threads answering calls in a one-worker server. Only the benchmark sets more, to
    measure the thread pool this server used to have against the processes."""


def server_credentials(certs_dir: Path) -> grpc.ServerCredentials:
    """mTLS credentials from ``tls.crt``, ``tls.key`` and ``ca.crt``, as Crossplane mounts them.

    Clients must present a certificate signed by ``ca.crt``: only Crossplane may call.
    """
    try:
        cert = (certs_dir / "tls.crt").read_bytes()
        key = (certs_dir / "tls.key").read_bytes()
        ca = (certs_dir / "ca.crt").read_bytes()
    except OSError as error:
        raise ServeError(f"cannot read TLS certificates: {error}") from error
    return grpc.ssl_server_credentials(
        [(key, cert)], root_certificates=ca, require_client_auth=True
    )


def build_server(
    config: ServeConfig, handler: Handler | None = None, *, pool: WorkerPool | None = None
) -> tuple[grpc.Server, int]:
    """A server with both services bound to ``config.address`` (not started) and its port.

    Calls are answered by ``pool``'s workers if given, else on ``config.threads`` threads
    of this process (by ``handler``, default the functions).
    """
    options = [
        ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
        ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
        ("grpc.so_reuseport", 0),
    ]
    call: BytesCall
    if pool is None:
        threads = config.threads

        def call(data: bytes) -> bytes:
            return run_bytes(data, handler)
    else:
        threads = RELAY_THREADS_PER_WORKER * config.workers
        call = pool.call
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=threads), options=options)
    server.add_generic_rpc_handlers(_generic_handlers(call))
    reflection.enable_server_reflection((*SERVICES, reflection.SERVICE_NAME), server)
    try:
        if config.insecure:
            port = server.add_insecure_port(config.address)
        else:
            if config.tls_certs_dir is None:
                raise ServeError("no TLS certificates directory and not --insecure")
            port = server.add_secure_port(config.address, server_credentials(config.tls_certs_dir))
    except RuntimeError as error:
        raise ServeError(f"cannot listen on {config.address}: {error}") from error
    if port == 0:
        raise ServeError(f"cannot listen on {config.address}")
    return server, port


# A reconcile allocates many short-lived objects while the memo of validated inputs
# holds many long-lived ones; with the default thresholds the full collections that
# scan the memo land inside calls and make the latency tail several times the median.
GC_THRESHOLDS = (20_000, 50, 100)


def tune_gc() -> None:
    """Collect less often, and keep what exists at startup out of every collection."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def serve(config: ServeConfig) -> int:
    """Serve until SIGTERM or SIGINT, then drain in-flight calls and return 0.

    Returns 1 if a worker process exits meanwhile (the pod restarts it whole).
    """
    tune_gc()  # before forking: what is frozen now stays shared with the workers
    pool = WorkerPool(config.workers, run_bytes) if config.workers > 1 else None
    metrics = None
    try:
        server, port = build_server(config, pool=pool)
        source: Renders = METRICS if pool is None else pool.metrics
        if config.metrics_address:
            metrics = start_metrics_server(config.metrics_address, source)
    except MetricsError as error:
        _close(pool, None)
        raise ServeError(str(error)) from error
    except BaseException:
        _close(pool, None)
        raise
    stop = threading.Event()

    def request_stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    code = 0
    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        server.start()
        LOG.info(
            "serving composition functions",
            extra={
                "fields": {
                    "address": config.address,
                    "port": port,
                    "tls": not config.insecure,
                    "metrics": config.metrics_address or "",
                    "pid": os.getpid(),
                    "workers": config.workers,
                    "worker_pids": pool.pids if pool is not None else [],
                }
            },
        )
        while not stop.wait(timeout=1.0):
            if pool is not None and (lost := pool.lost()):
                LOG.error("a worker process exited", extra={"fields": {"workers": lost}})
                code = 1
                break
        LOG.info("stopping", extra={"fields": {"grace_seconds": SHUTDOWN_GRACE_SECONDS}})
        server.stop(SHUTDOWN_GRACE_SECONDS).wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        _close(pool, metrics)
    LOG.info("stopped")
    return code


def _close(pool: WorkerPool | None, metrics: ThreadingHTTPServer | None) -> None:
    """Stop the workers (after the calls drained) and the metrics endpoint."""
    if pool is not None:
        pool.close()
    if metrics is not None:
        with suppress(OSError):
            metrics.shutdown()
            metrics.server_close()
