"""The SQLite file holds password hashes and API tokens: readable by the platform's user only."""

from __future__ import annotations

import contextlib
import os
from typing import Any

from django.db.backends.base.base import BaseDatabaseWrapper

# SQLite creates its -wal and -shm files with the database file's own mode; these are
# restricted too in case they were created before the database file was.
_SQLITE_COMPANIONS = ("", "-wal", "-shm", "-journal")


def database_file_restrict(sender: Any, connection: BaseDatabaseWrapper, **kwargs: Any) -> None:
    """``connection_created`` receiver: chmod 0600 the SQLite database and its companions.

    SQLite creates the file with the process's umask (0644 usually) at the first connection,
    so it is narrowed here, on every new connection (a chmod is cheap), which also tightens a
    database created before this was in place.
    """
    if connection.vendor != "sqlite":
        return
    name = str(connection.settings_dict.get("NAME") or "")
    if not name or name == ":memory:" or name.startswith("file:"):
        return
    for suffix in _SQLITE_COMPANIONS:
        # A companion may not exist, or be another user's file (then theirs to set).
        with contextlib.suppress(FileNotFoundError, PermissionError):
            os.chmod(name + suffix, 0o600)
