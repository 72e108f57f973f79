#!/usr/bin/env bash
# The production web process: migrate the database, collect the static files, then gunicorn
# (deploy/gunicorn.conf.py: threaded workers, timeouts for 2 GiB uploads) with WhiteNoise serving
# /static/.  Settings: leaderboard.settings.prod, so READERBOARD_SECRET_KEY, READERBOARD_DATABASE_URL
# and the mail server must be set (docs/operators/index.md).  Runs in the foreground; SIGTERM stops it gracefully.
#
#   READERBOARD_WEB_BIND=0.0.0.0:8000   where gunicorn listens: one address or several, separated by spaces
#                                       or commas ("0.0.0.0:8000 [::]:8000" for IPv4 and IPv6; unix:PATH)
#   READERBOARD_MIGRATE=0               skip migrate (several web replicas: migrate once, before them)
#   PYTHON=...                          the interpreter with the requirements (default: .venv/bin/python)
set -euo pipefail
cd "$(dirname "$0")/.."
export DJANGO_SETTINGS_MODULE=${DJANGO_SETTINGS_MODULE:-leaderboard.settings.prod}
PY=${PYTHON:-.venv/bin/python}
# Private files (database credentials aside: uploads, gold, logs) are for this user only.
umask 077

# READERBOARD_MIGRATE=0: skip migrate (several web replicas: migrate once, before them).
if [ "${READERBOARD_MIGRATE:-1}" = "1" ]; then
  "$PY" manage.py migrate --noinput -v1
fi
"$PY" manage.py collectstatic --noinput -v0
exec "$PY" -m gunicorn --config deploy/gunicorn.conf.py
