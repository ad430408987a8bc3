"""`python -m modelplane` runs the command."""

import sys

from modelplane.cli.main import main

sys.exit(main())
