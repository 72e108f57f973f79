"""Which settings a process runs with: the one rule every entry point follows (``manage.py``,
``leaderboard/wsgi.py``, ``workers/celery_app.py``).

``DJANGO_SETTINGS_MODULE``, when set, is the choice (deploy/serve.sh sets ``leaderboard.settings.prod``,
deploy/demo.sh ``leaderboard.settings.dev``).  Unset, a process gets the demo's settings only when
nothing of production is in its environment: an operator who exported the database URL or the secret
key and ran ``manage.py worker_token_create`` would otherwise write the token to the demo's SQLite file,
or sign with the demo's key, and be told nothing.  So that case is refused, with what to set.

No Django here: this runs before Django is set up.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import NoReturn

DEV = "leaderboard.settings.dev"
PROD = "leaderboard.settings.prod"

# Variables only a production deployment sets (leaderboard/settings/prod.py reads each of them).
PRODUCTION_VARIABLES = (
    "READERBOARD_SECRET_KEY",
    "READERBOARD_DATABASE_URL",
    "READERBOARD_BEHIND_TLS_PROXY",
    "READERBOARD_CSRF_TRUSTED_ORIGINS",
)


def refuse(message: str) -> NoReturn:
    """Stop the process with ``message`` on one line of stderr and exit status 1, no traceback: a
    settings mistake is the operator's to fix, and a traceback hides the line that says how."""
    raise SystemExit(f"readerboard: {message}")


def settings_module_choose(*, environ: Mapping[str, str]) -> str:
    """The settings module for a process with ``environ``; refuses production variables without a choice."""
    chosen = environ.get("DJANGO_SETTINGS_MODULE", "")
    if chosen:
        return chosen
    present = [name for name in PRODUCTION_VARIABLES if environ.get(name)]
    if present:
        refuse(f"{', '.join(present)} {'is' if len(present) == 1 else 'are'} set but DJANGO_SETTINGS_MODULE is "
               f"not: export DJANGO_SETTINGS_MODULE={PROD} (or {DEV} to try the demo's settings on purpose)")
    return DEV


def settings_module_set() -> None:
    """Choose this process's settings module (``settings_module_choose``) and put it in its environment."""
    os.environ["DJANGO_SETTINGS_MODULE"] = settings_module_choose(environ=os.environ)
