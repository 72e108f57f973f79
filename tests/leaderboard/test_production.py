"""Production serving: the settings read from the environment.

- ``leaderboard.settings.prod`` imports with the environment a deployment sets (README, "Production"),
  and refuses to start without a secret key or a database URL;
- ``READERBOARD_DATABASE_URL`` becomes the ``DATABASES`` entry (Postgres, or an SQLite file);
- deploy/serve.sh for real (gunicorn) is in tests/processes/test_production_serve.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from leaderboard.settings.base import database_from_url
from tests.builders.cast import REPO
from tests.builders.databases import database_url
from tests.builders.production import SECRET, clean_env

POSTGRES = "postgres://board:p%40ss%2Fword@db.internal:6432/readerboard?sslmode=require"

# What a deployment sets (deploy/compose.yaml and deploy/k8s/ set the same variables).
PRODUCTION_ENV = {
    "READERBOARD_SECRET_KEY": SECRET,
    "READERBOARD_DATABASE_URL": POSTGRES,
    "READERBOARD_BROKER_URL": "redis://redis.internal:6379/2",
    "READERBOARD_ALLOWED_HOSTS": "board.example.org",
    "READERBOARD_CSRF_TRUSTED_ORIGINS": "https://board.example.org",
    "READERBOARD_BEHIND_TLS_PROXY": "1",
    "READERBOARD_EMAIL_HOST": "smtp.example.org",
    "READERBOARD_EMAIL_PORT": "587",
    "READERBOARD_EMAIL_HOST_USER": "readerboard",
    "READERBOARD_EMAIL_HOST_PASSWORD": "mail-secret",
    "READERBOARD_EMAIL_USE_TLS": "1",
    "READERBOARD_DEFAULT_FROM_EMAIL": "board@example.org",
}

SHOW = """
import json, django
from django.conf import settings
django.setup()
print(json.dumps({name: getattr(settings, name, None) for name in (
    "DEBUG", "SECRET_KEY", "ALLOWED_HOSTS", "CSRF_TRUSTED_ORIGINS", "SECURE_PROXY_SSL_HEADER", "MIDDLEWARE",
    "CELERY_BROKER_URL", "EMAIL_BACKEND", "EMAIL_HOST", "EMAIL_PORT", "EMAIL_HOST_USER", "EMAIL_USE_TLS",
    "DEFAULT_FROM_EMAIL", "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE")}
    | {"DATABASE": settings.DATABASES["default"], "STATIC_ROOT": str(settings.STATIC_ROOT),
       "PRIVATE_ROOT": str(settings.PRIVATE_STORAGE_ROOT), "STATICFILES": settings.STORAGES["staticfiles"]}))
"""


def settings_of(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", SHOW], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=60, check=False)


def test_the_production_settings_are_read_from_the_environment(tmp_path: Path) -> None:
    env = clean_env(tmp_path, **PRODUCTION_ENV, READERBOARD_PRIVATE_ROOT=str(tmp_path / "private"),
                    READERBOARD_STATIC_ROOT=str(tmp_path / "static"))
    done = settings_of(env)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["DEBUG"] is False and got["SECRET_KEY"] == SECRET
    assert got["DATABASE"]["ENGINE"] == "django.db.backends.postgresql"
    assert {k: got["DATABASE"][k] for k in ("NAME", "USER", "PASSWORD", "HOST", "PORT", "OPTIONS")} == {
        "NAME": "readerboard", "USER": "board", "PASSWORD": "p@ss/word", "HOST": "db.internal", "PORT": "6432",
        "OPTIONS": {"sslmode": "require"},
    }
    assert got["DATABASE"]["CONN_MAX_AGE"] == 60 and got["DATABASE"]["CONN_HEALTH_CHECKS"] is True
    assert got["CELERY_BROKER_URL"] == "redis://redis.internal:6379/2"
    assert got["ALLOWED_HOSTS"] == ["board.example.org"]
    assert got["CSRF_TRUSTED_ORIGINS"] == ["https://board.example.org"]
    assert got["SECURE_PROXY_SSL_HEADER"] == ["HTTP_X_FORWARDED_PROTO", "https"]
    assert got["SESSION_COOKIE_SECURE"] is True and got["CSRF_COOKIE_SECURE"] is True
    assert (got["EMAIL_BACKEND"], got["EMAIL_HOST"], got["EMAIL_PORT"], got["EMAIL_HOST_USER"], got["EMAIL_USE_TLS"],
            got["DEFAULT_FROM_EMAIL"]) == ("django.core.mail.backends.smtp.EmailBackend", "smtp.example.org", 587,
                                           "readerboard", True, "board@example.org")
    assert got["STATIC_ROOT"] == str(tmp_path / "static") and got["PRIVATE_ROOT"] == str(tmp_path / "private")
    # WhiteNoise right after SecurityMiddleware, as its documentation asks, with hashed, compressed files.
    middleware = got["MIDDLEWARE"]
    assert middleware[middleware.index("django.middleware.security.SecurityMiddleware") + 1] == (
        "whitenoise.middleware.WhiteNoiseMiddleware")
    assert got["STATICFILES"]["BACKEND"] == "whitenoise.storage.CompressedManifestStaticFilesStorage"


@pytest.mark.parametrize("secret", [None, "", "dev-only-not-secret"])
def test_production_refuses_to_start_without_a_secret_key(tmp_path: Path, secret: str | None) -> None:
    env = clean_env(tmp_path, **PRODUCTION_ENV)
    del env["READERBOARD_SECRET_KEY"]
    if secret is not None:
        env["READERBOARD_SECRET_KEY"] = secret
    done = settings_of(env)
    assert done.returncode != 0
    assert "READERBOARD_SECRET_KEY must be set in production" in done.stderr


def test_production_refuses_to_start_without_a_database_url(tmp_path: Path) -> None:
    env = clean_env(tmp_path, **PRODUCTION_ENV)
    del env["READERBOARD_DATABASE_URL"]
    done = settings_of(env)
    assert done.returncode != 0
    assert "READERBOARD_DATABASE_URL must be set in production" in done.stderr


def test_production_refuses_private_storage_under_the_static_root(tmp_path: Path) -> None:
    env = clean_env(tmp_path, **PRODUCTION_ENV, READERBOARD_STATIC_ROOT=str(tmp_path / "public"),
                    READERBOARD_PRIVATE_ROOT=str(tmp_path / "public" / "private"))
    done = settings_of(env)
    assert done.returncode != 0 and "must not be inside READERBOARD_STATIC_ROOT" in done.stderr


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("postgres://u:pw@127.0.0.1:5433/board", {"NAME": "board", "USER": "u", "PASSWORD": "pw", "HOST": "127.0.0.1",
                                                 "PORT": "5433", "OPTIONS": {}}),
        ("postgresql://u@%2Frun%2Fpostgresql/board", {"NAME": "board", "USER": "u", "PASSWORD": "",
                                                     "HOST": "/run/postgresql", "PORT": "", "OPTIONS": {}}),
        ("postgres://db/board?sslmode=verify-full&connect_timeout=5",
         {"NAME": "board", "USER": "", "PASSWORD": "", "HOST": "db", "PORT": "",
          "OPTIONS": {"sslmode": "verify-full", "connect_timeout": "5"}}),
    ],
)
def test_a_database_url_is_read_into_the_databases_entry(url: str, expected: dict[str, object]) -> None:
    entry = database_from_url(url)
    assert entry["ENGINE"] == "django.db.backends.postgresql"
    assert {k: entry[k] for k in expected} == expected
    assert database_from_url(database_url(entry)) == entry  # what the tests hand their processes


def test_an_sqlite_url_is_the_embedded_database_with_its_options() -> None:
    entry = database_from_url("sqlite:////srv/readerboard/db.sqlite3")
    assert entry["ENGINE"] == "django.db.backends.sqlite3" and entry["NAME"] == "/srv/readerboard/db.sqlite3"
    assert entry["OPTIONS"]["transaction_mode"] == "IMMEDIATE"


def test_another_database_url_is_refused() -> None:
    with pytest.raises(ImproperlyConfigured, match="must be postgres://"):
        database_from_url("mysql://u:pw@db/board")


# --------------------------------------------------------------------------- deploy/serve.sh for real


