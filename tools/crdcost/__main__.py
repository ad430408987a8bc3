"""``python -m tools.crdcost``: see :mod:`tools.crdcost.check`."""

from __future__ import annotations

import sys

from .check import main

sys.exit(main())
