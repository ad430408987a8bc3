"""The `modelplane` command (a shell: reads files, prints results)."""
