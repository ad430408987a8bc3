"""The Crossplane runtime: composition functions served over gRPC (docs/crossplane.md, "How the
function behaves").

This package is a thin shell. Everything that decides something (dispatch, requirement
keys, readiness, the InferenceCluster status) is a pure function over plain dicts and
dataclasses in the modules here, so it is unit-tested without protobuf or gRPC;
``proto`` converts to and from the wire and ``server`` serves it.
"""
