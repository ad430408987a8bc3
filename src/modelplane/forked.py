"""Work handed to a forked child while this process goes on (two cores, one file).

A fleet file is read by parsing its parts at once and checking the whole text while it
is decoded (and `render` composes most clusters in a child); the child's part comes back
as marshal frames. Small frames go through a pipe; a large one (a part's JSON text,
megabytes) is written to a memory file shared before the fork and only its place goes
through the pipe, so the child never waits for this process to read, and this process
unmarshals it where it lies.

Forking is only done where it is safe: on Linux (macOS forbids a fork once system
frameworks may be loaded), in a process with no other Python thread (a thread holding a
lock would stop the child; the function server never reads YAML files). The child runs
nothing of this process's but its work, writes to no stream, and leaves with
``os._exit`` whatever happens. Callers treat a child that cannot start, fails, is killed
or answers wrongly as no child at all and do the work themselves, so no answer depends
on it.
"""

from __future__ import annotations

import contextlib
import marshal
import mmap
import os
import signal
import struct
import sys
import threading
from collections.abc import Callable
from typing import Any, NoReturn

from modelplane.errors import ModelplaneError

_HEADER = struct.Struct("<BQQ")  # in the pipe (0) or the memory file (1), offset, length
_IN_PIPE, _IN_FILE = 0, 1
_LARGE = 1 << 18
"""A frame this large goes through the memory file (a pipe holds 64 KiB)."""

Send = Callable[[Any], None]
"""The child's way to answer: one marshal-able value a call, received in order."""


class ChildFailed(ModelplaneError):
    """The child did not answer as it should: do its work here."""


def may_fork() -> bool:
    """Whether a child may be forked from this process now."""
    return (
        sys.platform.startswith("linux")
        and hasattr(os, "memfd_create")
        and threading.active_count() == 1
    )


class Child:
    """A forked child doing ``work(send)``; :meth:`receive` takes its answers in order."""

    def __init__(self, pid: int, pipe: int, memory: int) -> None:
        self._pid = pid
        self._pipe = open(pipe, "rb")  # noqa: SIM115 - closed by close()
        self._memory = memory
        self._done = False

    @classmethod
    def start(cls, work: Callable[[Send], None]) -> Child | None:
        """The child doing ``work``, or None where it cannot be started."""
        if not may_fork():
            return None
        try:
            memory = os.memfd_create("modelplane-child", os.MFD_CLOEXEC)
        except OSError:
            return None
        try:
            read_end, write_end = os.pipe()
        except OSError:
            os.close(memory)
            return None
        try:
            pid = os.fork()
        except OSError:
            for fd in (memory, read_end, write_end):
                os.close(fd)
            return None
        if pid == 0:
            _child(work, read_end, write_end, memory)
        os.close(write_end)
        return cls(pid, read_end, memory)

    def receive(self) -> Any:
        """The child's next answer; ChildFailed when it has none or it is malformed."""
        header = self._pipe.read(_HEADER.size)
        if len(header) != _HEADER.size:
            raise ChildFailed("the child stopped answering")
        where, offset, length = _HEADER.unpack(header)
        if where == _IN_FILE:
            return _loaded_at(self._memory, offset, length)
        if where != _IN_PIPE:
            raise ChildFailed("the child's answer came in a frame of no known kind")
        payload = self._pipe.read(length)
        if len(payload) != length:
            raise ChildFailed("the child's answer was cut short")
        return _loaded(payload)

    def close(self) -> None:
        """Stop the child if it still runs, and reap it."""
        if self._done:
            return
        self._done = True
        self._pipe.close()
        with contextlib.suppress(ProcessLookupError):
            os.kill(self._pid, signal.SIGKILL)  # a child that answered all is gone already
        with contextlib.suppress(ChildProcessError):  # reaped already (SIGCHLD ignored)
            os.waitpid(self._pid, 0)
        os.close(self._memory)

    def __enter__(self) -> Child:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def _loaded(payload: bytes | memoryview) -> Any:
    """A frame's value; ChildFailed where it does not read back."""
    try:
        return marshal.loads(payload)
    except (EOFError, ValueError, TypeError) as err:
        raise ChildFailed("the child's answer did not read back") from err


def _loaded_at(fd: int, offset: int, length: int) -> Any:
    """The value of a frame in the memory file, read where it lies: a part's JSON text is
    tens of megabytes, and copying it out first costs a copy and its page faults."""
    if length <= 0 or offset + length > os.fstat(fd).st_size:
        raise ChildFailed("the child's answer was cut short")
    with (
        mmap.mmap(fd, offset + length, prot=mmap.PROT_READ) as mapped,
        memoryview(mapped) as view,
        view[offset : offset + length] as frame,
    ):
        return _loaded(frame)  # each view released before the map closes, raise or not


def _child(work: Callable[[Send], None], read_end: int, write_end: int, memory: int) -> NoReturn:
    """The child's whole life: do the work, answer, leave, whatever happens."""
    code = 1
    try:
        # Output this process had not flushed yet is its own: the child's streams go nowhere.
        sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - the child exits
        os.close(read_end)
        with open(write_end, "wb") as pipe:
            written = 0

            def send(value: Any) -> None:
                nonlocal written
                payload = marshal.dumps(value)
                if len(payload) < _LARGE:
                    pipe.write(_HEADER.pack(_IN_PIPE, 0, len(payload)) + payload)
                else:
                    _write_at(memory, payload, written)
                    pipe.write(_HEADER.pack(_IN_FILE, written, len(payload)))
                    written += len(payload)
                pipe.flush()

            work(send)
        code = 0
    finally:
        os._exit(code)


def _write_at(fd: int, payload: bytes, offset: int) -> None:
    view = memoryview(payload)
    while view:
        count = os.pwrite(fd, view, offset)
        view = view[count:]
        offset += count
