"""ResourceClaimTemplates: one per member with device requests (docs/composition.md, "Objects, in
order").
"""

from __future__ import annotations

from modelplane.api import ReplicaEngine, ReplicaMember, ResolvedDeviceRequest
from modelplane.composition.names import ReplicaNames
from modelplane.composition.types import Json


def device_request(request: ResolvedDeviceRequest) -> Json:
    """One DRA DeviceRequest; selectors keep the user's text byte for byte."""
    exactly: Json = {"deviceClassName": request.device_class_name, "count": request.count}
    selectors = [
        {"cel": {"expression": s.cel}} for s in request.selectors or [] if s.cel is not None
    ]
    if selectors:
        exactly["selectors"] = selectors
    return {"name": request.name, "exactly": exactly}


def claim_template(
    names: ReplicaNames, engine: ReplicaEngine, member: ReplicaMember
) -> Json | None:
    """The member's ResourceClaimTemplate, or None for a member that claims nothing."""
    if not member.device_requests:
        return None
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {
            "name": names.claim_template(engine.name, member.role),
            "namespace": names.remote,
        },
        "spec": {
            "spec": {"devices": {"requests": [device_request(r) for r in member.device_requests]}}
        },
    }
