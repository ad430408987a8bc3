"""The repository's build tools: run from a checkout (``python -m tools.<name>``), never
installed. The wheel and the function image hold ``src/modelplane`` alone."""
