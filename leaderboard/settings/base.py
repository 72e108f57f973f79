"""Settings shared by every environment; values come from the environment where they differ."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

from leaderboard.sandbox.contract import HiddenRuns

BASE_DIR = Path(__file__).resolve().parent.parent.parent


def env(name: str, default: str) -> str:
    return os.environ.get(f"READERBOARD_{name}", default)


def env_bool(name: str, default: bool) -> bool:
    return env(name, "1" if default else "0").lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    return int(env(name, str(default)))


def private_dir(path: Path) -> Path:
    """``path`` created (or tightened) for the platform's user alone: it holds password hashes,
    API tokens, hidden gold and teams' uploads.  Mode 0700 on the top folders guards what
    is below, whatever modes the files inside were created with."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        path.chmod(0o700)
    except PermissionError:  # a folder someone else owns (a mount point): theirs to set
        pass
    return path


# Runtime state (database, uploaded files, logs) lives outside the source tree's tracked files.
VAR_DIR = private_dir(Path(env("VAR_DIR", str(BASE_DIR / "var"))))

SECRET_KEY = env("SECRET_KEY", "dev-only-not-secret")  # signs sessions, tokens' links and sealed aliases: production refuses the default
DEBUG = env_bool("DEBUG", False)  # Django's debug pages; never in production
ALLOWED_HOSTS = env("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1],testserver").split(",")  # host names this site answers to, comma separated
# What this web process serves: "public" (the site and its API, no /internal/), "internal" (the compute
# workers' internal API alone) or "all" (both: the demo and development).  A deployment runs a public
# process on its public address and an internal one where only compute hosts reach (docs/operators/compute-hosts.md, "Compute
# workers on other hosts"), so that neither port offers the other's URLs.  Both answer /healthz.
SERVE_CHOICES = ("public", "internal", "all")
SERVE = env("SERVE", "all")  # public, internal or all: see the comment above SERVE_CHOICES
if SERVE not in SERVE_CHOICES:
    raise ImproperlyConfigured(f"READERBOARD_SERVE must be one of {', '.join(SERVE_CHOICES)}, not {SERVE!r}")

# A file the control worker and beat touch while their loops turn (workers/celery_app.py), for a
# liveness probe that costs a stat, not a broker round trip (deploy/k8s/workers.yaml).  Empty: none.
HEARTBEAT_FILE = env("HEARTBEAT_FILE", "")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "leaderboard.core",
    "leaderboard.accounts",
    "leaderboard.challenges",
    "leaderboard.submissions",
    "leaderboard.judging",
    "leaderboard.rankings",
    "leaderboard.console",
]

MIDDLEWARE = [
    # First of all: deadlines are judged by when an upload started, before its body is read.
    "leaderboard.core.middleware.RequestReceivedAtMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Before anything that reads the body (CSRF reads request.POST): oversized uploads get 413 unread.
    "leaderboard.core.middleware.UploadSizeLimitMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Answers to a caller with credentials, and API answers, are private to that caller.
    "leaderboard.core.middleware.CallerDependentMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "leaderboard.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "leaderboard.accounts.context_processors.account_notice",
            ],
        },
    },
]

WSGI_APPLICATION = "leaderboard.wsgi.application"


# How much of an SQLite database file is read through a memory map (past it, through the page cache).
SQLITE_MMAP_BYTES = 256 * 1024 * 1024


def sqlite_database(path: str) -> dict[str, Any]:
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": path,
        # IMMEDIATE transactions take SQLite's write lock at BEGIN, so quota checks
        # (count, then insert) are serialised between processes and threads.  (On Postgres the
        # team's row is locked with SELECT FOR UPDATE: submissions.intake.quota_enforce_locked.)
        # Reads through a memory map: a board snapshot's small columns sit after megabytes of renderings,
        # and through the default 2 MB page cache every read walked their overflow pages again
        # (0.6 ms a request; 0.03 ms mapped).  The map shares the OS's cache between connections.
        "OPTIONS": {"transaction_mode": "IMMEDIATE", "timeout": 30,
                    "init_command": f"PRAGMA journal_mode=WAL; PRAGMA mmap_size={SQLITE_MMAP_BYTES};"},
    }


def database_from_url(url: str) -> dict[str, Any]:
    """``postgres://USER:PASSWORD@HOST:PORT/NAME[?sslmode=require&...]`` (or ``sqlite:////abs/path``)
    as a ``DATABASES`` entry.

    Parts are percent-decoded (a password with ``@`` or ``/`` is written ``%40``, ``%2F``; a Unix
    socket folder as the host: ``%2Frun%2Fpostgresql``); query parameters become libpq options.
    """
    parts = urlsplit(url)
    if parts.scheme == "sqlite":  # sqlite:////abs/path (sqlite:///rel/path is relative to the working folder)
        return sqlite_database(unquote(parts.path[1:]))
    if parts.scheme not in {"postgres", "postgresql"}:
        raise ImproperlyConfigured(f"READERBOARD_DATABASE_URL must be postgres://... (or sqlite:///...), "
                                   f"not {parts.scheme}://...")
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": unquote(parts.path.lstrip("/")),
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": unquote(parts.hostname or ""),
        "PORT": str(parts.port or ""),
        "OPTIONS": dict(parse_qsl(parts.query)),
        # Seconds a process keeps its connection between requests (0: one per request).
        "CONN_MAX_AGE": env_int("DATABASE_CONN_MAX_AGE", 0),
        "CONN_HEALTH_CHECKS": True,
    }


# Postgres when READERBOARD_DATABASE_URL is set (production: several web processes, and workers on
# other hosts); else the embedded SQLite file under VAR_DIR (the demo, one machine).
DATABASE_URL = env("DATABASE_URL", "")
DATABASES = {
    "default": database_from_url(DATABASE_URL) if DATABASE_URL
    else sqlite_database(env("DB_PATH", str(VAR_DIR / "readerboard.sqlite3"))),
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
# Every deadline is stored and shown in UTC (platform-lessons: time-zone display bugs).
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
# Public files: a web server other than this user can serve them only from outside VAR_DIR (0700).
STATIC_ROOT = Path(env("STATIC_ROOT", str(VAR_DIR / "static")))
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "home"

# Uploaded files (predictions, hidden gold, system images) are private: no URL serves
# this directory; views stream a file only after a permission check.
PRIVATE_STORAGE_ROOT = private_dir(Path(env("PRIVATE_ROOT", str(VAR_DIR / "private"))))
# Readable by the platform's user only (the folders above guard the rest too); the
# database file is restricted the same way when it is opened (leaderboard.core.apps).
FILE_UPLOAD_PERMISSIONS = 0o600
FILE_UPLOAD_DIRECTORY_PERMISSIONS = 0o700
STORAGES = {
    "default": {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {"location": str(PRIVATE_STORAGE_ROOT), "base_url": None},
    },
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

# Upload limits: requests larger than this are refused before they are read whole.
MAX_PREDICTION_UPLOAD_BYTES = env_int("MAX_PREDICTION_UPLOAD_BYTES", 50 * 1024 * 1024)
# What a zip of predictions may expand to: near the upload limit, as a plain file could be that
# large anyway (a few hundred kilobytes of zip must not stand for half a gigabyte of JSON).
MAX_PREDICTION_ARCHIVE_BYTES = env_int("MAX_PREDICTION_ARCHIVE_BYTES", MAX_PREDICTION_UPLOAD_BYTES * 6 // 5)
MAX_GOLD_UPLOAD_BYTES = env_int("MAX_GOLD_UPLOAD_BYTES", 500 * 1024 * 1024)
# Systems: a `docker save` archive or a code bundle (separate endpoints, so the larger
# limit never applies to prediction uploads).
MAX_SYSTEM_UPLOAD_BYTES = env_int("MAX_SYSTEM_UPLOAD_BYTES", 2 * 1024 * 1024 * 1024)
MAX_IMAGE_UNCOMPRESSED_BYTES = env_int("MAX_IMAGE_UNCOMPRESSED_BYTES", 6 * 1024 * 1024 * 1024)
MAX_BUNDLE_UNCOMPRESSED_BYTES = env_int("MAX_BUNDLE_UNCOMPRESSED_BYTES", 512 * 1024 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
# An upload that started before a phase closed is in time (its request's arrival is what
# counts), if its body finished arriving within this long after the close: bytes sent
# later could have been computed later.
UPLOAD_DEADLINE_GRACE_S = env_int("UPLOAD_DEADLINE_GRACE_S", 15 * 60)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "leaderboard.accounts.auth.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "leaderboard.core.api.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Readerboard API",
    "DESCRIPTION": "Submit predictions and read results of machine reading comprehension challenges.",
    "VERSION": "1.0.0",
}

# Celery: the web app only sends tasks by name after commit (it never imports workers/).
CELERY_BROKER_URL = env("BROKER_URL", "redis://127.0.0.1:6379/0")
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_EAGER", False)  # run tasks in the web process, without a broker (tests only)

# Running systems.  A worker renews its lease on a run every RUN_HEARTBEAT_S; a run
# whose lease is older than RUN_LEASE_S lost its worker and is re-queued, at most
# MAX_RUN_ATTEMPTS times in all.  The reaper (Celery beat) looks every REAP_EVERY_S.
# "runc" or "runsc"; "" = HIDDEN_RUNTIME for every run (the engine's default with HIDDEN_ISOLATION off):
# a run its team reads under runc sees the host's counters an earlier hidden run moved.
CONTAINER_RUNTIME = env("CONTAINER_RUNTIME", "")
# Runs on hidden data (workers.runner.sandbox_choose): their runtime ("" = CONTAINER_RUNTIME), and
# whether they get their own image copy and the host to themselves (off only for trials); the lock
# file every compute worker of one host shares.  The defaults are the run contract's (HiddenRuns),
# the compute worker's too.
_HIDDEN_DEFAULTS = HiddenRuns()
HIDDEN_RUNTIME = env("HIDDEN_RUNTIME", _HIDDEN_DEFAULTS.runtime)
HIDDEN_ISOLATION = env_bool("HIDDEN_ISOLATION", _HIDDEN_DEFAULTS.isolate)
HOST_LOCK = Path(env("HOST_LOCK", str(_HIDDEN_DEFAULTS.lock_path)))
# Only the run folders inside are opened up, for the sandbox's user (workers/control_runs.py).
RUNS_DIR = private_dir(Path(env("RUNS_DIR", str(VAR_DIR / "runs"))))
RUN_HEARTBEAT_S = float(env("RUN_HEARTBEAT_S", "10"))  # how often a worker renews its lease on a run
RUN_LEASE_S = float(env("RUN_LEASE_S", "60"))  # a run whose lease is older lost its worker and is queued again
SCORING_LEASE_S = float(env("SCORING_LEASE_S", "1800"))  # the same for the scoring of a prediction file
# The scoring of a result a compute worker handed back (kept in private storage until it is scored) has
# a lease of its own: once it passed, the reaper sends the finish again (from the kept result, never a
# second run), so a control worker lost while scoring costs at most this plus REAP_EVERY_S.  A scoring
# that takes longer is scored a second time beside the first: safe, the first to write its scores wins.
RESULT_SCORING_LEASE_S = float(env("RESULT_SCORING_LEASE_S", "45"))
REAP_EVERY_S = float(env("REAP_EVERY_S", "15"))  # how often the reaper (Celery beat) looks for lost runs and messages
# 2: a platform fault is retried once (a second fault on a fresh attempt is rarely transient,
# and each attempt holds a runner), then the organizers are told.
MAX_RUN_ATTEMPTS = env_int("MAX_RUN_ATTEMPTS", 2)
# A run the platform failed (engine down, disk full, worker lost) is due again after this many
# seconds times the attempts it has had; the team's own faults are never retried.
RUN_RETRY_BACKOFF_S = float(env("RUN_RETRY_BACKOFF_S", "10"))
# Each run's image is loaded under <repository>/<submission>:<attempt> and removed after the run;
# platforms (or test runs) sharing one engine need repositories of their own.
RUN_IMAGE_REPOSITORY = env("RUN_IMAGE_REPOSITORY", "readerboard-run")
# A queued submission whose message is nowhere (a broker that lost it) is sent again after this long.
REDISPATCH_AFTER_S = float(env("REDISPATCH_AFTER_S", "60"))

# E-mail: a challenge's organizers (its staff's addresses; else ADMINS) are told of every run the
# platform could not complete.  The demo prints the messages in the worker's log (console backend);
# a deployment sets READERBOARD_EMAIL_BACKEND=django.core.mail.backends.smtp.EmailBackend and the host.
EMAIL_BACKEND = env("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
# For the file backend (django.core.mail.backends.filebased.EmailBackend): one file per message here.
EMAIL_FILE_PATH = env("EMAIL_FILE_PATH", str(VAR_DIR / "mail"))
EMAIL_HOST = env("EMAIL_HOST", "localhost")  # the SMTP server (with the smtp backend)
EMAIL_PORT = env_int("EMAIL_PORT", 25)  # its port: 587 with USE_TLS, 465 with USE_SSL
EMAIL_HOST_USER = env("EMAIL_HOST_USER", "")  # the SMTP login, if it needs one
EMAIL_HOST_PASSWORD = env("EMAIL_HOST_PASSWORD", "")  # its password
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)  # STARTTLS (port 587)
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", False)  # port 465 (implicit TLS); USE_TLS is STARTTLS on 587
# Password-reset and invitation mails are sent while the request waits: a mail server that
# does not answer must not hold a web process for Python's default (no timeout at all).
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT_S", 10)
DEFAULT_FROM_EMAIL = env("DEFAULT_FROM_EMAIL", "readerboard@localhost")  # the sender of every mail the platform sends
# A password-reset link works once, and for this long (Django's default is three days).
PASSWORD_RESET_TIMEOUT = env_int("PASSWORD_RESET_TIMEOUT_S", 24 * 60 * 60)

# Failed logins (the login page, the admin's and the API's password exchange): once LIMIT have
# failed within WINDOW_S for one username from one client address (or CLIENT_LIMIT from one
# client address), further attempts from there are refused unchecked until the oldest of them is
# WINDOW_S old; a browser that logged in to the account before counts on its own, so no client
# locks a user out for everyone (accounts.services.login_attempt).
LOGIN_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 10)
LOGIN_FAILURE_CLIENT_LIMIT = env_int("LOGIN_FAILURE_CLIENT_LIMIT", 30)
LOGIN_FAILURE_WINDOW_S = env_int("LOGIN_FAILURE_WINDOW_S", 60)
LOGIN_DEVICE_COOKIE_AGE_S = env_int("LOGIN_DEVICE_COOKIE_AGE_S", 180 * 24 * 60 * 60)  # how long a browser that logged in counts as the account's own
# A sign-up's e-mail address is confirmed by a signed link, valid this long; at most LIMIT
# confirmation (or "this address has an account") mails go to one address per WINDOW_S.
EMAIL_CONFIRM_TIMEOUT = env_int("EMAIL_CONFIRM_TIMEOUT_S", 3 * 24 * 60 * 60)
EMAIL_CONFIRM_MAIL_LIMIT = env_int("EMAIL_CONFIRM_MAIL_LIMIT", 3)
EMAIL_CONFIRM_MAIL_WINDOW_S = env_int("EMAIL_CONFIRM_MAIL_WINDOW_S", 60 * 60)
# Behind a reverse proxy every request comes from the proxy's address, so one attacker would
# lock everybody out: name the header the proxy sets (e.g. HTTP_X_FORWARDED_FOR); its last
# entry, the one the proxy itself appended, is taken as the client's address.
CLIENT_ADDRESS_HEADER = env("CLIENT_ADDRESS_HEADER", "")
SERVER_EMAIL = DEFAULT_FROM_EMAIL
ADMINS = [("Readerboard operators", address) for address in env("ADMINS", "").split(",") if address]  # operators' addresses (comma separated): told of errors, and of failed runs where a challenge has no staff

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env("LOG_LEVEL", "INFO")},  # DEBUG, INFO, WARNING, ERROR
}
