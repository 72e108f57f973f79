"""Production: gunicorn (deploy/serve.sh) with WhiteNoise for static files, Postgres, Redis, SMTP.

Every value comes from the environment (README, "Production"); what production must not guess
(the secret key, the database) stops the import with the variable to set.
"""

from pathlib import Path

from leaderboard.settings.base import *  # noqa: F403
from leaderboard.settings.base import (
    DATABASE_URL,
    DATABASES,
    MIDDLEWARE,
    PRIVATE_STORAGE_ROOT,
    STATIC_ROOT,
    STORAGES,
    env,
    env_bool,
    env_int,
)

if env("SECRET_KEY", "") in {"", "dev-only-not-secret"}:
    raise RuntimeError("READERBOARD_SECRET_KEY must be set in production")
if not DATABASE_URL:
    # Not the SQLite file under VAR_DIR by default: workers on other hosts would each get one of their own.
    raise RuntimeError("READERBOARD_DATABASE_URL must be set in production: postgres://USER:PASSWORD@HOST:PORT/NAME")
DEBUG = False
# Each gunicorn thread keeps its connection this long between requests (0: a new one per request).
DATABASES = {"default": {**DATABASES["default"], "CONN_MAX_AGE": env_int("DATABASE_CONN_MAX_AGE", 60)}}

# Static files are served by the web processes themselves: WhiteNoise, right after SecurityMiddleware,
# answers /static/ from what collectstatic wrote to STATIC_ROOT (deploy/serve.sh runs it), with hashed
# names cached for a year and gzip versions; nothing under /static/ reaches a view.
_security = MIDDLEWARE.index("django.middleware.security.SecurityMiddleware")
MIDDLEWARE = [*MIDDLEWARE[: _security + 1], "whitenoise.middleware.WhiteNoiseMiddleware", *MIDDLEWARE[_security + 1 :]]
STORAGES = {**STORAGES, "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"}}
if Path(PRIVATE_STORAGE_ROOT).resolve().is_relative_to(Path(STATIC_ROOT).resolve()):
    raise RuntimeError("READERBOARD_PRIVATE_ROOT must not be inside READERBOARD_STATIC_ROOT: it would be served")

# E-mail goes out by SMTP: READERBOARD_EMAIL_HOST, _PORT, _HOST_USER, _HOST_PASSWORD, _USE_TLS (base.py).
EMAIL_BACKEND = env("EMAIL_BACKEND", "django.core.mail.backends.smtp.EmailBackend")

# Behind a proxy that terminates TLS and sets X-Forwarded-Proto (and strips it from clients' requests).
if env_bool("BEHIND_TLS_PROXY", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# Origins that may POST forms when they differ from the Host header (e.g. https://board.example.org).
CSRF_TRUSTED_ORIGINS = [origin for origin in env("CSRF_TRUSTED_ORIGINS", "").split(",") if origin]
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
