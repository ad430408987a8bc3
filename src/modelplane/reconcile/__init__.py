"""Pure reconcile steps shared by the local commands and the Crossplane functions."""
