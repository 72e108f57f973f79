"""Production: gunicorn (deploy/serve.sh) with WhiteNoise for static files, Postgres, Redis, SMTP.

Every value comes from the environment (docs/operators/index.md); what production must not guess
(the secret key, the database, where mail goes) stops the process with the variable to set, on one
line (``choice.refuse``), before anything runs.
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
from leaderboard.settings.choice import refuse

if env("SECRET_KEY", "") in {"", "dev-only-not-secret"}:  # required in production
    refuse("READERBOARD_SECRET_KEY must be set in production: a long random string, e.g. "
           "python3 -c 'import secrets; print(secrets.token_urlsafe(50))'")
if not DATABASE_URL:
    # Not the SQLite file under VAR_DIR by default: workers on other hosts would each get one of their own.
    refuse("READERBOARD_DATABASE_URL must be set in production: postgres://USER:PASSWORD@HOST:PORT/NAME")
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
    refuse("READERBOARD_PRIVATE_ROOT must not be inside READERBOARD_STATIC_ROOT: it would be served")

# E-mail goes out by SMTP: READERBOARD_EMAIL_HOST, _PORT, _HOST_USER, _HOST_PASSWORD, _USE_TLS (base.py).
# Where it goes must be said: sign-up confirmation links, password resets and the organizers' alerts
# all travel by mail, and a new account cannot join a team until it opened its link, so a guessed
# server (localhost:25, where most hosts run none) would leave the site unusable for new teams with
# nothing but a log line to show.  An explicit READERBOARD_EMAIL_BACKEND (the console one, for a first
# trial) is a choice too.
if not (env("EMAIL_HOST", "") or env("EMAIL_BACKEND", "")):
    refuse("READERBOARD_EMAIL_HOST must be set in production (the SMTP server; with _PORT, _HOST_USER, "
           "_HOST_PASSWORD, _USE_TLS), or READERBOARD_EMAIL_BACKEND=django.core.mail.backends.console.EmailBackend "
           "to print mails in the log instead")
EMAIL_BACKEND = env("EMAIL_BACKEND", "django.core.mail.backends.smtp.EmailBackend")

# Behind a proxy that terminates TLS and sets X-Forwarded-Proto (and strips it from clients' requests).
if env_bool("BEHIND_TLS_PROXY", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# Origins that may POST forms when they differ from the Host header (e.g. https://board.example.org).
CSRF_TRUSTED_ORIGINS = [origin for origin in env("CSRF_TRUSTED_ORIGINS", "").split(",") if origin]
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
