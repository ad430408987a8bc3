"""The local runtime: ``modelplane render`` runs the reconciles over a file's fleet.

A shell like ``runtime/crossplane``: it drives the pure reconciles and turns their typed
results into the wire dicts ``render`` prints.
"""
