"""The test database as a READERBOARD_DATABASE_URL, for the processes a test starts (workers, gunicorn).

Read once pytest-django has switched the connection to the test database (inside a test), so the
process works on the same rows as the test: the SQLite file or the run's Postgres test database.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlencode


def database_url(entry: dict[str, Any]) -> str:
    """A ``DATABASES`` entry as the URL ``leaderboard.settings.base.database_from_url`` reads back."""
    if entry["ENGINE"] == "django.db.backends.sqlite3":
        return f"sqlite:///{quote(str(entry['NAME']))}"
    user = quote(entry.get("USER") or "", safe="")
    password = quote(entry.get("PASSWORD") or "", safe="")
    credentials = f"{user}:{password}@" if password else (f"{user}@" if user else "")
    port = f":{entry['PORT']}" if entry.get("PORT") else ""
    options = {k: v for k, v in (entry.get("OPTIONS") or {}).items() if isinstance(v, str | int)}
    query = f"?{urlencode(options)}" if options else ""
    return f"postgres://{credentials}{quote(entry.get('HOST') or '', safe='')}{port}/{quote(entry['NAME'], safe='')}{query}"
