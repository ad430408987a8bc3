"""Worker processes for `modelplane function serve`: one call at a time each, fed by the server.

The function's work is CPU-bound Python, so threads of one process take turns on the
interpreter lock and buy no throughput; processes do. Crossplane opens one HTTP/2
connection per Function pod and sends every call over it (gRPC round robin over the
pod addresses of a headless Service), so processes sharing a port (``SO_REUSEPORT``)
would see one of them take every call. Instead the serving process keeps the one gRPC
server and hands each call's bytes to a worker over a pipe; the workers are forked
before any gRPC object exists (gRPC's C core does not survive a fork once started) and
never touch gRPC themselves.

A call goes to the worker chosen by its composite (kind, namespace, name): Crossplane
sends the same composite's requests again and again, and its remembered answer
(``runtime.answers``) lives in that worker. The choice never changes an answer: every
worker computes the same bytes for the same request, only a warm memo saves time.
"""

from __future__ import annotations

import logging
import math
import mmap
import multiprocessing
import os
import signal
import struct
import threading
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path

import crossplane.function.proto.v1.run_function_pb2 as fnv1

from modelplane.errors import ModelplaneError
from modelplane.runtime.crossplane.metrics import METRICS, PodMetrics, Snapshot

LOG = logging.getLogger("modelplane.function")

CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")
# Each worker keeps its own memos (validated documents, answers: hundreds of MiB at fleet
# scale), so a pod without a CPU limit on a large node does not start one per core.
MAX_DEFAULT_WORKERS = 4
JOIN_SECONDS = 5.0
# A call's bytes and its answer go through a memory region each worker shares with the
# serving process (mapped before the fork), and only their length through the pipe: a
# fleet's request is megabytes, which a socket pair carries in slices of its buffer
# (about 200 KiB), a process switch each, copied into a growing buffer on the other side.
# As large as the server accepts a request (server.MAX_MESSAGE_BYTES): only the pages a
# call touches are ever resident. Anything larger still goes through the pipe.
REGION_BYTES = 64 * 1024 * 1024
_IN_REGION = struct.Struct("<Q")  # a request in the region: its length

BytesCall = Callable[[bytes], bytes]


def cgroup_cpus(cpu_max: Path = CGROUP_CPU_MAX) -> float | None:
    """The CPUs a cgroup v2 ``cpu.max`` quota allows (``"150000 100000"``: 1.5); None: no limit."""
    try:
        quota, _, period = cpu_max.read_text(encoding="ascii").strip().partition(" ")
        if quota == "max":
            return None
        return int(quota) / int(period or "100000")
    except (OSError, ValueError, ZeroDivisionError):
        return None


def usable_cpus(cpu_max: Path = CGROUP_CPU_MAX) -> int:
    """The CPUs this process may run on: its affinity, within the cgroup's quota (at least 1).

    A fractional quota is rounded down: a worker past the quota is throttled for the rest
    of every period, which stalls whichever call it is answering.
    """
    cpus = len(os.sched_getaffinity(0))
    quota = cgroup_cpus(cpu_max)
    if quota is not None:
        cpus = min(cpus, math.floor(quota))
    return max(1, cpus)


def default_workers(cpu_max: Path = CGROUP_CPU_MAX) -> int:
    """The worker count when none is given: the usable CPUs, at most ``MAX_DEFAULT_WORKERS``."""
    return min(usable_cpus(cpu_max), MAX_DEFAULT_WORKERS)


# ---------------------------------------------------------------- routing


def _varint(data: memoryview, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def _messages(data: memoryview) -> Iterator[tuple[int, memoryview]]:
    """(field number, bytes) of every length-delimited field of one encoded message."""
    pos, end = 0, len(data)
    while pos < end:
        key, pos = _varint(data, pos)
        wire = key & 7
        if wire == 0:
            _, pos = _varint(data, pos)
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        elif wire == 2:
            length, pos = _varint(data, pos)
            if pos + length > end:
                raise ValueError("truncated field")
            yield key >> 3, data[pos : pos + length]
            pos += length
        else:
            raise ValueError(f"unsupported wire type {wire}")


def _field(data: memoryview, number: int) -> memoryview:
    found = memoryview(b"")
    for n, value in _messages(data):
        if n == number:
            found = value  # the last occurrence, as protobuf merges a repeated message
    return found


_OBSERVED = fnv1.RunFunctionRequest.DESCRIPTOR.fields_by_name["observed"].number
_COMPOSITE = fnv1.State.DESCRIPTOR.fields_by_name["composite"].number


def composite_identity(data: bytes) -> str:
    """``kind/namespace/name`` of a request's observed composite, read without decoding the rest.

    A request carries the fleet (megabytes); the serving process only routes it, so it
    reads the one small message it needs. Bytes it cannot read give ``""``: the worker
    then reports what is wrong with them.
    """
    try:
        composite = _field(_field(memoryview(data), _OBSERVED), _COMPOSITE)
        resource = fnv1.Resource.FromString(bytes(composite)).resource
    except Exception:  # noqa: BLE001 - routing is a hint; the worker judges the request
        return ""
    fields = resource.fields
    metadata = fields["metadata"].struct_value.fields if "metadata" in fields else {}
    parts = [fields["kind"].string_value if "kind" in fields else ""]
    parts += [metadata[k].string_value if k in metadata else "" for k in ("namespace", "name")]
    return "/".join(parts) if any(parts) else ""


def route(data: bytes, workers: int) -> int:
    """The worker that answers ``data``: the same one for every call of one composite."""
    return zlib.crc32(composite_identity(data).encode()) % workers


# ---------------------------------------------------------------- the workers


class WorkerLost(ModelplaneError):
    """A worker process exited while it had a call, or before it got one."""


@dataclass
class _Worker:
    index: int
    process: BaseProcess
    conn: Connection
    lock: threading.Lock
    region: mmap.mmap


def _work(
    conn: Connection, inherited: list[Connection], call: BytesCall, region: mmap.mmap
) -> None:
    """A worker's life: answer each call's bytes in turn until the server closes the pipe."""
    for other in inherited:
        other.close()  # else a worker's pipe stays open after the server is gone
    # The serving process decides when to stop (SIGTERM drains calls in flight; a
    # terminal's Ctrl-C reaches the whole process group): workers stop when it closes
    # their pipe.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        try:
            message = conn.recv_bytes()
        except (EOFError, OSError):
            return
        if len(message) == _IN_REGION.size:
            data = region[: _IN_REGION.unpack(message)[0]]
        else:
            data = message[_IN_REGION.size + 1 :]  # b"\0" * 9 + the bytes: too large
        wire = call(data)
        if len(wire) <= len(region):
            region[: len(wire)] = wire
            conn.send((len(wire), METRICS.snapshot()))
        else:
            conn.send((wire, METRICS.snapshot()))


class WorkerPool:
    """``count`` forked worker processes answering call bytes, and the pod's metrics."""

    def __init__(self, count: int, call: BytesCall, region_bytes: int = REGION_BYTES) -> None:
        """Fork the workers; call before creating any gRPC server or channel."""
        context = multiprocessing.get_context("fork")
        self._workers: list[_Worker] = []
        self.metrics = PodMetrics(count, METRICS.snapshot())
        for index in range(count):
            ours, theirs = context.Pipe()
            region = mmap.mmap(-1, region_bytes)  # anonymous and shared: seen by the child
            inherited = [w.conn for w in self._workers] + [ours]
            process = context.Process(
                target=_work,
                args=(theirs, inherited, call, region),
                name=f"modelplane-worker-{index}",
                daemon=True,
            )
            process.start()
            theirs.close()
            self._workers.append(_Worker(index, process, ours, threading.Lock(), region))

    @property
    def pids(self) -> list[int | None]:
        """The workers' process ids, in order."""
        return [w.process.pid for w in self._workers]

    def call(self, data: bytes) -> bytes:
        """The answer to one call's bytes, from the worker of its composite."""
        worker = self._workers[route(data, len(self._workers))]
        with worker.lock:
            try:
                if len(data) <= len(worker.region):
                    worker.region[: len(data)] = data
                    worker.conn.send_bytes(_IN_REGION.pack(len(data)))
                else:
                    worker.conn.send_bytes(bytes(_IN_REGION.size + 1) + data)
                wire, snapshot = worker.conn.recv()
                if isinstance(wire, int) and 0 <= wire <= len(worker.region):
                    wire = worker.region[:wire]
            except (EOFError, OSError) as error:
                raise WorkerLost(f"worker {worker.index} exited") from error
            # Under the lock: a worker's snapshots arrive in order, so counters never fall.
            self.metrics.update(worker.index, snapshot)
        if not isinstance(wire, bytes) or not isinstance(snapshot, Snapshot):
            raise WorkerLost(f"worker {worker.index} answered something else")
        return wire

    def lost(self) -> list[tuple[int, int | None]]:
        """(index, exit code) of every worker that exited."""
        return [(w.index, w.process.exitcode) for w in self._workers if not w.process.is_alive()]

    def close(self) -> None:
        """Stop the workers: idle ones see their pipe close; one still busy is killed."""
        for worker in self._workers:
            if worker.lock.acquire(timeout=0.1):
                worker.conn.close()
                worker.lock.release()
            else:
                worker.process.kill()
        for worker in self._workers:
            worker.process.join(JOIN_SECONDS)
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join()
        # The regions are unmapped with the pool: a call still racing this close fails on
        # its closed pipe (WorkerLost), never on a closed region.
