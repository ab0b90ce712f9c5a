"""llmcassette's start-up hook for ``llmcassette run``: on PYTHONPATH, Python imports it at
start-up and it activates the cassette that LLMCASSETTE_CASSETTE names. A project's own
sitecustomize, which this one shadows, is imported after it."""

import importlib
import os
import sys

try:
    from llmcassette.cli import run_hook
except ImportError as error:
    # A Python without llmcassette (`-- python app.py` with another python first on PATH):
    # going on would run the program without its cassette, a --replay run on the network.
    # A process the program starts itself finds the variable gone (run_hook.activate).
    if os.environ.get("LLMCASSETTE_CASSETTE"):
        sys.stderr.write(
            f"llmcassette run: {sys.executable} cannot import llmcassette ({error}); the "
            "program was stopped before its first line, so nothing was sent. Run it with a "
            "Python where llmcassette is installed: activate its virtual environment, or "
            "give that Python's path after --\n"
        )
        sys.stderr.flush()
        os._exit(2)
else:
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
