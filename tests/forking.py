"""Helpers for tests that count the children a command forks (modelplane.forked)."""

from __future__ import annotations

import os
from typing import Any

import pytest

from modelplane import forked


def counted_forks(monkeypatch: Any) -> list[int]:
    """The pids of the children forked from now on, in order.

    Skips the test unless this process may fork: a thread another test left running (the
    runtime tests' session gRPC server) makes every command here run alone
    (``forked.may_fork``), and a count would then say nothing of the command."""
    if not forked.may_fork():
        pytest.skip("this process has threads another test started: it never forks")
    forks: list[int] = []
    real_fork = os.fork

    def counted() -> int:
        pid = real_fork()
        if pid:
            forks.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", counted)
    return forks
