"""The fleet as a whole: what runs where, what is free, and what a change would do.

Pure, like the scheduler it reads: typed objects in, immutable values out. Every number
comes from the scheduler's own code (the reconcile, ``scheduling.occupancy`` and the
ledger's charges); the shells (``cli/fleet``, ``cli/plan``) print and draw them
(docs/fleet.md).
"""
