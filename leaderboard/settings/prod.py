from leaderboard.settings.base import *  # noqa: F403
from leaderboard.settings.base import env

if env("SECRET_KEY", "") in {"", "dev-only-not-secret"}:
    raise RuntimeError("READERBOARD_SECRET_KEY must be set in production")
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
