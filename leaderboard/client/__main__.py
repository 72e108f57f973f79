"""``python -m leaderboard.client`` (or ``python -m readerboard_client`` once installed)."""

from .cli import main

raise SystemExit(main())
