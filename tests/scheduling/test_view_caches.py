"""The remembered cluster views and published occupancies answer for the content given.

Both are kept between calls so an unchanged cluster is read once. They are keyed by
name and version and checked against the content they were read from: an equal cluster
decoded again reuses the work, and an edited one, even under an unchanged version,
is read again, exactly as a cold process would read it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from modelplane.api import InferenceCluster
from modelplane.memo import clear_all
from modelplane.scheduling.fleet import ClusterView, cluster_view
from modelplane.scheduling.occupancy import published
from tests.builders import (
    cluster_status,
    gpu_device,
    gpu_pool,
    inference_cluster,
    stack_component,
    stack_status,
)

Doc = dict[str, Any]


def _document() -> Doc:
    doc = inference_cluster(
        "c1",
        labels={"zone": "a"},
        status=cluster_status(
            pools=[gpu_pool("h100", 3, gpu_device(8))],
            stack=stack_status("Ready", stack_component("lws", "v0.10.0", "Ready")),
        ),
    )
    doc["metadata"]["uid"] = "0b7c"
    doc["metadata"]["resourceVersion"] = "41"
    doc["status"]["occupancy"] = {
        "replicas": ["ml/r1"],
        "pools": [{"name": "h100", "nodes": [{"count": 1, "free": {"gpu": 4}}, _free(2, 8)]}],
    }
    return doc


def _free(count: int, gpus: int) -> Doc:
    return {"count": count, "free": {"gpu": gpus}}


def _relabel(doc: Doc) -> None:
    doc["metadata"]["labels"] = {"zone": "b"}


def _unready(doc: Doc) -> None:
    doc["status"]["conditions"][0]["status"] = "False"


def _move_gateway(doc: Doc) -> None:
    doc["status"]["gateway"]["address"] = "203.0.113.99"


def _shrink_pool(doc: Doc) -> None:
    doc["status"]["gpuPools"][0]["nodes"] = 2
    doc["status"]["occupancy"]["pools"][0]["nodes"][1] = _free(1, 8)


def _fill_a_node(doc: Doc) -> None:
    doc["status"]["occupancy"]["pools"][0]["nodes"] = [_free(2, 4), _free(1, 8)]


def _misfit_occupancy(doc: Doc) -> None:
    doc["status"]["occupancy"]["pools"][0]["nodes"] = [_free(1, 4)]


def _drop_occupancy(doc: Doc) -> None:
    del doc["status"]["occupancy"]


def _stack_installing(doc: Doc) -> None:
    doc["status"]["stack"]["phase"] = "Installing"
    doc["status"]["stack"]["items"][0]["phase"] = "Installing"


def _drop_stack(doc: Doc) -> None:
    del doc["status"]["stack"]


def _bump_version(doc: Doc) -> None:
    doc["metadata"]["resourceVersion"] = "42"
    _relabel(doc)


EDITS: list[Callable[[Doc], None]] = [
    _relabel,
    _unready,
    _move_gateway,
    _shrink_pool,
    _fill_a_node,
    _misfit_occupancy,
    _drop_occupancy,
    _stack_installing,
    _drop_stack,
    _bump_version,
]


def _cluster(edit: Callable[[Doc], None] | None = None) -> InferenceCluster:
    doc = _document()
    if edit is not None:
        edit(doc)
    return InferenceCluster.model_validate(doc)


def _read(cluster: InferenceCluster) -> tuple[ClusterView, object, object]:
    view = cluster_view(cluster, {})
    return view, view.occupancy, published(view)


def _cold(cluster: InferenceCluster) -> tuple[ClusterView, object, object]:
    clear_all()
    return _read(cluster)


def test_an_equal_cluster_decoded_again_reuses_the_view() -> None:
    clear_all()
    first = cluster_view(_cluster(), {})
    again = cluster_view(_cluster(), {})
    assert again is first
    assert published(again) is published(first)


@pytest.mark.parametrize("edit", EDITS, ids=lambda e: e.__name__.strip("_"))
def test_an_edited_cluster_is_read_again(edit: Callable[[Doc], None]) -> None:
    clear_all()
    warm = _read(_cluster())
    edited = _read(_cluster(edit))
    assert edited == _cold(_cluster(edit))
    assert edited != warm


@pytest.mark.parametrize("edit", EDITS, ids=lambda e: e.__name__.strip("_"))
def test_the_original_is_answered_right_after_an_edit(edit: Callable[[Doc], None]) -> None:
    clear_all()
    original = _cluster()
    _read(original)
    _read(_cluster(edit))
    assert _read(original) == _cold(original)


def test_an_edit_through_model_copy_is_read_again() -> None:
    clear_all()
    cluster = _cluster()
    before = cluster_view(cluster, {})
    meta = cluster.metadata.model_copy(update={"labels": {"zone": "c"}})
    after = cluster_view(cluster.model_copy(update={"metadata": meta}), {})
    assert before.labels == {"zone": "a"}
    assert after.labels == {"zone": "c"}


def test_a_stack_that_stops_being_ready_is_read_under_the_same_version() -> None:
    # The stack status is part of the cluster's content: a warm view never answers for it.
    clear_all()
    assert cluster_view(_cluster(), {}).unready_stack is None
    unready = cluster_view(_cluster(_stack_installing), {}).unready_stack
    assert unready is not None and unready.phase == "Installing"
    assert cluster_view(_cluster(_drop_stack), {}).unready_stack is None
