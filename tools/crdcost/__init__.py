"""Will the Kubernetes API server accept the package's CRDs? A build tool, not product.

The API server refuses a CRD whose ``x-kubernetes-validations`` rules cost more than its
static estimate allows. This package computes that estimate offline (:mod:`.estimate`,
on the size and type model ``_model``, the cost walk ``_walk`` and the call costs
``_calls``), on the XRDs as Crossplane turns them into CRDs (:mod:`.xcrd`), and
``make package`` runs its command (:mod:`.check`, ``python -m tools.crdcost``) over every
generated XRD, failing on a rule or CRD over the targets of :mod:`.budget`. How, and from
which upstream sources: docs/crd-cost.md.
"""
