"""The serving stack of a workload cluster: what it must run for the objects we compose.

``components`` is the one table of every component (chart, version, values, what it
serves); ``selection`` picks the components one cluster needs. The InferenceCluster
reconcile installs them (Managed) or verifies them (Provided): ``reconcile/stack.py``.
"""
