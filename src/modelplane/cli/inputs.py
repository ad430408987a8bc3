"""Reading a verb's PATHs: the valid objects, or the exit of docs/cli.md (1 invalid, 2 usage)."""

from __future__ import annotations

import argparse
import gc
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime

from modelplane.api import (
    InferenceClass,
    InferenceCluster,
    ModelCache,
    ModelDeployment,
    ModelEndpoint,
    ModelReplica,
)
from modelplane.cli.main import Exit, keep_until_exit
from modelplane.manifests import Loaded, PathError, load
from modelplane.reconcile.deployment import Fleet


def load_valid(verb: str, paths: Sequence[str]) -> Loaded:
    """Every document of ``paths``; on a problem, the validate lines and Exit(1).

    A PATH that names nothing is a usage error: Exit(2).
    """
    try:
        with collector_off(freeze=True):
            loaded = load(paths)
    except PathError as err:
        print(f"modelplane {verb}: error: {err}", file=sys.stderr)
        raise Exit(2) from err
    keep_until_exit(loaded)
    if loaded.problems:
        for line in loaded.problems:
            print(line, file=sys.stderr)
        raise Exit(1)
    return loaded


@contextmanager
def collector_off(*, freeze: bool = False) -> Iterator[None]:
    """No garbage collection inside the block (docs/performance.md, "The collector"); an
    in-process caller gets the collector back as it was.

    Loading a fleet allocates millions of containers and a reconcile hundreds of thousands
    more that live until they are printed, none of them in a cycle (JSON values hold none),
    yet each allocation burst starts a collection that walks all of them again: about a sixth
    of the whole `schedule` at 10,000 replicas while loading, about 0.3 s of `render` at
    1,000 clusters after it. ``freeze``: what the block allocated lives as long as the
    command, so it is frozen out of the collections later phases start (loading does this).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if freeze:
            gc.freeze()
        if enabled:
            gc.enable()


def fleet_of(loaded: Loaded) -> Fleet:
    """The typed objects a local reconcile reads."""
    return Fleet(
        deployments=loaded.of_kind(ModelDeployment),
        clusters=loaded.of_kind(InferenceCluster),
        classes=loaded.of_kind(InferenceClass),
        caches=loaded.of_kind(ModelCache),
        replicas=loaded.of_kind(ModelReplica),
        endpoints=loaded.of_kind(ModelEndpoint),
    )


def add_now(parser: argparse.ArgumentParser) -> None:
    """``--now TIME``: the clock a local run is told; without it there is none."""
    parser.add_argument(
        "--now",
        metavar="TIME",
        type=_instant,
        default=None,
        help="the time this reconcile runs at (RFC 3339, e.g. 2026-01-15T09:00:00Z): stamps "
        "replicas waiting for Ready and judges the rollout deadline; without it nothing is "
        "stamped and no rollout is ever stuck, so the output depends on the input alone",
    )


def _instant(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"not an RFC 3339 time: {text!r}") from err
    if value.tzinfo is None:
        raise argparse.ArgumentTypeError(f"a time needs its offset (Z or +hh:mm): {text!r}")
    return value.astimezone(UTC)


def at(fleet: Fleet, now: datetime | None) -> Fleet:
    """The fleet told the clock ``now``."""
    return replace(fleet, now=now)
