"""`python -m modelplane` runs the command."""

from modelplane.cli.main import entry

entry()
