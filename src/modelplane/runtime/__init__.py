"""Runtimes that drive the pure reconcile functions: Crossplane in production (``crossplane``),
``modelplane render`` locally (``local``)."""
