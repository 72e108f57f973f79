"""The trivial system, after sleeping READERBOARD_TEST_SLEEP_S (default 8) seconds.

Fault tests kill workers and brokers while it runs.
"""

import os
import time

time.sleep(float(os.environ.get("READERBOARD_TEST_SLEEP_S", "8")))
print("slept; answering now", flush=True)
# trivial.py is the trivial system's run.py, next to this one in the bundle only (so not found by mypy).
import trivial  # type: ignore[import-not-found]  # noqa: E402,F401  (runs on import, as its run.py does)
