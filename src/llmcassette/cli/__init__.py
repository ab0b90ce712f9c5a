"""The ``llmcassette`` command: one module per subcommand, ``main`` parses and dispatches."""

from llmcassette.cli.main import main

__all__ = ["main"]
