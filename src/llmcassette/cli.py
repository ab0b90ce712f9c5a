"""The ``llmcassette`` command."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ._version import __version__


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``llmcassette`` command line; returns the exit code."""
    parser = argparse.ArgumentParser(prog="llmcassette", description=__doc__)
    parser.add_argument("--version", action="version", version=f"llmcassette {__version__}")
    parser.parse_args(argv)
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
