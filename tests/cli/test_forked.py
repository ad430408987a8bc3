"""modelplane.forked (the reader's and `render`'s children): a child's answers come back whole,
and a malformed one is no answer.

A large answer (a part's JSON text) travels through the memory file shared before the fork
and is read where it lies; these pin that it reads back equal, and that a frame the file
does not hold whole, or that does not unmarshal, is ChildFailed (the caller then does the
work itself), never another error.
"""

from __future__ import annotations

import marshal
import os

import pytest

from modelplane import forked

pytestmark = pytest.mark.skipif(
    not hasattr(os, "memfd_create"), reason="the memory file needs memfd_create (Linux)"
)


def test_a_large_answer_comes_back_equal_through_the_memory_file() -> None:
    if not forked.may_fork():
        pytest.skip("this process has threads another test started: it never forks")
    large = ["x" * (forked._LARGE * 3), ("a", "b", "c"), 7]
    child = forked.Child.start(lambda send: (send(large), send("small")))
    assert child is not None
    with child:
        assert child.receive() == large
        assert child.receive() == "small"


def _memory(payload: bytes) -> int:
    fd = os.memfd_create("modelplane-test")
    os.pwrite(fd, payload, 0)
    return fd


@pytest.mark.parametrize(
    ("offset", "extra"),
    [(0, 1), (5, 0), (0, -(10**6))],
    ids=["longer than the file", "past its end", "of no length"],
)
def test_a_frame_the_memory_file_does_not_hold_whole_is_no_answer(offset: int, extra: int) -> None:
    payload = marshal.dumps(["text"] * 1000)
    fd = _memory(payload)
    try:
        with pytest.raises(forked.ChildFailed, match="cut short"):
            forked._loaded_at(fd, offset, max(0, len(payload) + extra))
    finally:
        os.close(fd)


@pytest.mark.parametrize("cut", [1, 100, 4000])
def test_a_frame_that_does_not_unmarshal_is_no_answer(cut: int) -> None:
    """A frame cut inside its value fails as ChildFailed, and the map it was read from is
    closed (no view of it left to keep it open)."""
    payload = marshal.dumps([f"text {i} " * 100 for i in range(100)])
    fd = _memory(payload)
    try:
        with pytest.raises(forked.ChildFailed, match="did not read back"):
            forked._loaded_at(fd, 0, len(payload) - cut)
        assert forked._loaded_at(fd, 0, len(payload)) == marshal.loads(payload)
    finally:
        os.close(fd)
