"""Tests of the replica composition (docs/composition.md, "Objects, in order"; docs/reconcile.md,
"ModelReplica conditions").
"""
