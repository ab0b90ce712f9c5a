"""llmcassette's start-up hook for ``llmcassette run``: on PYTHONPATH, Python imports it at
start-up and it activates the cassette that LLMCASSETTE_CASSETTE names. A project's own
sitecustomize, which this one shadows, is imported after it."""

import importlib
import sys

from llmcassette.cli import run_hook

run_hook.activate()
_here = [entry for entry in sys.path if entry.rstrip("/\\").endswith("_startup")]
for entry in _here:
    sys.path.remove(entry)
_this = sys.modules.pop(__name__)
try:  # the sitecustomize this one shadows, if there is one
    importlib.import_module("sitecustomize")
except ImportError:
    pass
finally:  # the import that ran this file returns sys.modules[__name__]: this one again
    sys.path[0:0] = _here
    sys.modules[__name__] = _this
