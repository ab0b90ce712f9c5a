"""``python -m llmcassette``: the same as the ``llmcassette`` command."""

import sys

from llmcassette.cli.main import main

sys.exit(main())
