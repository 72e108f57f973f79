"""The trivial system, after sleeping READERBOARD_TEST_SLEEP_S (default 8) seconds.

Fault tests kill workers and brokers while it runs.
"""

import os
import time

time.sleep(float(os.environ.get("READERBOARD_TEST_SLEEP_S", "8")))
print("slept; answering now", flush=True)
import trivial  # noqa: E402,F401  (runs on import, as the trivial system's run.py does)
