"""``python -m llmcassette``: the same as the ``llmcassette`` command."""

import sys

from .cli import main

sys.exit(main())
