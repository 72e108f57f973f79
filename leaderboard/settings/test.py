import os
import tempfile
from pathlib import Path

from leaderboard.settings.base import *  # noqa: F403
from leaderboard.settings.base import DATABASES

_TMP = Path(tempfile.mkdtemp(prefix="readerboard-test-"))
PRIVATE_STORAGE_ROOT = _TMP / "private"
# The demo's and production's WhiteNoise read this folder: one of the run's own, so that a fresh clone
# (no collectstatic yet) has one and no test reads another run's.
STATIC_ROOT = _TMP / "static"
STATIC_ROOT.mkdir()
STORAGES = {
    "default": {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {"location": str(PRIVATE_STORAGE_ROOT), "base_url": None},
    },
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # A file database (not :memory:) so that threads and live servers share it for real.
    DATABASES["default"]["NAME"] = str(_TMP / "db.sqlite3")
    DATABASES["default"]["TEST"] = {"NAME": str(_TMP / "test-db.sqlite3")}
else:
    # READERBOARD_DATABASE_URL (deploy/test.sh's second run): a test database per run, so runs side by
    # side never drop each other's (deploy/postgres.sh drops those whose run was killed).
    DATABASES["default"]["TEST"] = {"NAME": f"test_{DATABASES['default']['NAME']}_{os.getpid()}"}
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
CELERY_TASK_ALWAYS_EAGER = True
# Test runs share the engine with each other (and with the demo): run images of their own.
RUN_IMAGE_REPOSITORY = f"readerboard-run-test{os.getpid()}"
DEBUG = False
