"""Production serving: the settings read from the environment.

- ``leaderboard.settings.prod`` imports with the environment a deployment sets (docs/operators/index.md),
  and refuses to start without a secret key, a database URL or a word on where mail goes, on one line;
- every entry point (manage.py, wsgi, the control worker's Celery app) picks its settings by one rule
  (``leaderboard.settings.choice``): the demo's only when nothing of production is in the environment;
- gunicorn's bind list (READERBOARD_WEB_BIND);
- ``READERBOARD_DATABASE_URL`` becomes the ``DATABASES`` entry (Postgres, or an SQLite file);
- deploy/serve.sh for real (gunicorn) is in tests/processes/test_production_serve.py.
"""

from __future__ import annotations

import json
import re
import runpy
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import connections
from django.db.backends.sqlite3.base import DatabaseWrapper as SQLiteDatabaseWrapper

from leaderboard.settings.base import SQLITE_MMAP_BYTES, database_from_url, sqlite_database
from leaderboard.settings.choice import PRODUCTION_VARIABLES, settings_module_choose
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
    assert done.returncode == 1
    assert "READERBOARD_SECRET_KEY must be set in production" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_production_refuses_to_start_without_a_database_url(tmp_path: Path) -> None:
    env = clean_env(tmp_path, **PRODUCTION_ENV)
    del env["READERBOARD_DATABASE_URL"]
    done = settings_of(env)
    assert done.returncode == 1
    assert "READERBOARD_DATABASE_URL must be set in production" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("missing", [("READERBOARD_EMAIL_HOST",), ("READERBOARD_EMAIL_HOST", "READERBOARD_EMAIL_PORT")])
def test_production_refuses_to_start_without_saying_where_mail_goes(tmp_path: Path, missing: tuple[str, ...]) -> None:
    env = clean_env(tmp_path, **PRODUCTION_ENV)
    for name in missing:
        del env[name]
    done = settings_of(env)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "READERBOARD_EMAIL_HOST must be set in production" in done.stderr
    assert "READERBOARD_EMAIL_BACKEND=django.core.mail.backends.console.EmailBackend" in done.stderr


def test_production_takes_an_explicit_mail_backend_without_a_mail_host(tmp_path: Path) -> None:
    env = clean_env(tmp_path, **PRODUCTION_ENV, READERBOARD_EMAIL_BACKEND="django.core.mail.backends.console.EmailBackend")
    del env["READERBOARD_EMAIL_HOST"]
    done = settings_of(env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["EMAIL_BACKEND"] == "django.core.mail.backends.console.EmailBackend"


def test_production_refuses_private_storage_under_the_static_root(tmp_path: Path) -> None:
    env = clean_env(tmp_path, **PRODUCTION_ENV, READERBOARD_STATIC_ROOT=str(tmp_path / "public"),
                    READERBOARD_PRIVATE_ROOT=str(tmp_path / "public" / "private"))
    done = settings_of(env)
    assert done.returncode == 1 and "must not be inside READERBOARD_STATIC_ROOT" in done.stderr
    assert "Traceback" not in done.stderr


# --------------------------------------------------------------------------- which settings: one rule


def manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "manage.py", *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=120, check=False)


def without_settings(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = clean_env(tmp_path, **extra)
    del env["DJANGO_SETTINGS_MODULE"]
    return env


SHOW_MODULE = ["shell", "--no-imports", "-c", "from django.conf import settings; print(settings.SETTINGS_MODULE, settings.DATABASES['default']['ENGINE'])"]


def test_with_nothing_of_production_set_manage_py_runs_the_demo_settings(tmp_path: Path) -> None:
    done = manage(without_settings(tmp_path), *SHOW_MODULE)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["leaderboard.settings.dev", "django.db.backends.sqlite3"]


@pytest.mark.parametrize("variable", ["READERBOARD_DATABASE_URL", "READERBOARD_SECRET_KEY", "READERBOARD_BEHIND_TLS_PROXY"])
@pytest.mark.parametrize("command", [["check"], ["worker_token_create", "host-1"]])
def test_a_production_variable_without_a_settings_module_is_refused(
    tmp_path: Path, variable: str, command: list[str]
) -> None:
    env = without_settings(tmp_path, **{variable: PRODUCTION_ENV.get(variable, "1")})
    done = manage(env, *command)
    assert done.returncode == 1 and done.stdout == ""
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert f"{variable} is set but DJANGO_SETTINGS_MODULE is not" in done.stderr
    assert "export DJANGO_SETTINGS_MODULE=leaderboard.settings.prod" in done.stderr
    assert not (tmp_path / "var" / "readerboard.sqlite3").exists()  # nothing written to the demo's database


def test_the_refusal_names_every_production_variable_set(tmp_path: Path) -> None:
    env = without_settings(tmp_path, READERBOARD_DATABASE_URL=POSTGRES, READERBOARD_SECRET_KEY=SECRET)
    done = manage(env, "check")
    assert "READERBOARD_SECRET_KEY, READERBOARD_DATABASE_URL are set" in done.stderr


def test_the_production_settings_chosen_explicitly_pass_django_s_check(tmp_path: Path) -> None:
    env = clean_env(tmp_path, **PRODUCTION_ENV)
    done = manage(env, *SHOW_MODULE)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["leaderboard.settings.prod", "django.db.backends.postgresql"]
    done = manage(env, "check")
    assert done.returncode == 0 and "no issues" in done.stdout, done.stderr


def test_an_explicit_demo_choice_is_followed_with_a_production_variable(tmp_path: Path) -> None:
    # The tests' own worker processes run the demo's settings on the test database on purpose.
    env = clean_env(tmp_path, DJANGO_SETTINGS_MODULE="leaderboard.settings.dev",
                    READERBOARD_DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}")
    done = manage(env, *SHOW_MODULE)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[0] == "leaderboard.settings.dev"


@pytest.mark.parametrize("entry", ["import leaderboard.wsgi", "import workers.celery_app"])
def test_the_web_and_worker_entry_points_follow_the_same_rule(tmp_path: Path, entry: str) -> None:
    env = without_settings(tmp_path, READERBOARD_DATABASE_URL=POSTGRES)
    done = subprocess.run([sys.executable, "-c", entry], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "READERBOARD_DATABASE_URL is set but DJANGO_SETTINGS_MODULE is not" in done.stderr


def test_every_production_variable_is_one_the_production_settings_read() -> None:
    prod = (REPO / "leaderboard" / "settings" / "prod.py").read_text()
    read = {f"READERBOARD_{name}" for name in re.findall(r"\benv(?:_bool|_int)?\(\s*\"([A-Z0-9_]+)\"", prod)}
    read |= {"READERBOARD_DATABASE_URL"}  # read in base.py, required by prod.py
    assert set(PRODUCTION_VARIABLES) <= read
    assert {"READERBOARD_SECRET_KEY", "READERBOARD_DATABASE_URL"} <= set(PRODUCTION_VARIABLES)


def test_the_choice_itself() -> None:
    assert settings_module_choose(environ={}) == "leaderboard.settings.dev"
    assert settings_module_choose(environ={"READERBOARD_DATABASE_URL": ""}) == "leaderboard.settings.dev"
    assert settings_module_choose(environ={"DJANGO_SETTINGS_MODULE": "x.y", "READERBOARD_SECRET_KEY": "k"}) == "x.y"
    with pytest.raises(SystemExit, match="READERBOARD_CSRF_TRUSTED_ORIGINS is set"):
        settings_module_choose(environ={"READERBOARD_CSRF_TRUSTED_ORIGINS": "https://b.example.org"})


# --------------------------------------------------------------------------- gunicorn's bind list


def binds_of(value: str | None, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    if value is None:
        monkeypatch.delenv("READERBOARD_WEB_BIND", raising=False)
    else:
        monkeypatch.setenv("READERBOARD_WEB_BIND", value)
    return list(runpy.run_path(str(REPO / "deploy" / "gunicorn.conf.py"))["bind"])


def test_gunicorn_binds_one_address_or_several(monkeypatch: pytest.MonkeyPatch) -> None:
    assert binds_of(None, monkeypatch) == ["0.0.0.0:8000"]
    assert binds_of("127.0.0.1:8001", monkeypatch) == ["127.0.0.1:8001"]
    assert binds_of("0.0.0.0:8000 [::]:8000", monkeypatch) == ["0.0.0.0:8000", "[::]:8000"]
    assert binds_of(" 10.0.0.5:8001,[fd00::5]:8001 unix:/run/rb.sock ", monkeypatch) == [
        "10.0.0.5:8001", "[fd00::5]:8001", "unix:/run/rb.sock"]


def test_an_empty_bind_list_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SystemExit, match="READERBOARD_WEB_BIND names no address"):
        binds_of(" , ", monkeypatch)


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


def test_an_sqlite_connection_reads_through_a_memory_map(db: None, tmp_path: Path) -> None:
    # A snapshot's small columns are read past its renderings: through the page cache alone that
    # walked megabytes of overflow pages on every board request.
    fresh = SQLiteDatabaseWrapper({**connections["default"].settings_dict,
                                   **sqlite_database(str(tmp_path / "mapped.sqlite3"))}, alias="mapped")
    try:
        fresh.connect()
        with fresh.cursor() as cursor:
            cursor.execute("PRAGMA mmap_size")
            assert cursor.fetchone()[0] == SQLITE_MMAP_BYTES
            cursor.execute("PRAGMA journal_mode")
            assert cursor.fetchone()[0] == "wal"
    finally:
        fresh.close()


def test_another_database_url_is_refused() -> None:
    with pytest.raises(ImproperlyConfigured, match="must be postgres://"):
        database_from_url("mysql://u:pw@db/board")


# --------------------------------------------------------------------------- deploy/serve.sh for real


# --------------------------------------------------------------------------- the web process warmed


WARMED = """
import sys
import leaderboard.wsgi
from django.template import engines
cached = set(engines["django"].engine.template_loaders[0].get_template_cache)
print(int("leaderboard.rankings.views" in sys.modules), int("rankings/board.html" in cached),
      int("admin/base.html" in cached))
"""


def test_the_web_application_is_loaded_warm(tmp_path: Path) -> None:
    # What a worker forked from gunicorn's master (preload_app) finds done: every view imported and the
    # project's templates compiled, not left to its first requests (about 100 ms on a board page).
    env = clean_env(tmp_path, READERBOARD_SECRET_KEY=SECRET, READERBOARD_DATABASE_URL=POSTGRES,
                    READERBOARD_EMAIL_BACKEND="django.core.mail.backends.locmem.EmailBackend")
    done = subprocess.run([sys.executable, "-W", "ignore", "-c", WARMED], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    # The admin's templates are left for when an organizer opens it.
    assert done.stdout.split() == ["1", "1", "0"]
