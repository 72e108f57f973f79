#!/usr/bin/env bash
# A local PostgreSQL for the test suite (deploy/test.sh): installs Debian's `postgresql` if it is
# missing, creates a cluster of its own ("readerboard", on the next free port), starts it and makes
# the role and database the tests use; then prints the database's URL, the only thing on stdout:
#
#   READERBOARD_DATABASE_URL=$(bash deploy/postgres.sh)
#
# Safe to re-run and to run twice at once (a lock), as root, with or without systemd (pg_ctlcluster
# runs pg_ctl as the postgres user).  The cluster holds test data only: it runs with fsync off and
# listens on localhost (Debian's default).
# pytest-django makes its test database (test_readerboard_<pid>) from this role and drops it after.
set -euo pipefail
# stdout carries the URL and nothing else: every other command's output goes to stderr (pg_ctlcluster
# prints "Removed stale pid file." on stdout when a cluster was not shut down cleanly, as on a machine
# restored from a snapshot; that line once made the URL unreadable in CI).  The URL's descriptor,
# fd 3, is closed for every command (the block below): the server that pg_ctlcluster starts inherits
# open descriptors and would hold the caller's $(...) pipe open for ever (CI once waited on it until
# its time ran out; tests/test_postgres_script.py).
exec 3>&1 1>&2
{
cd "$(dirname "$0")/.."
source deploy/lib.sh
apt_ensure postgres postgresql

# READERBOARD_PG_CLUSTER names another cluster: tests/test_postgres_script.py takes one of its own, so
# that stopping it leaves the suite's cluster, and any run using it, alone.
CLUSTER=${READERBOARD_PG_CLUSTER:-readerboard}
ROLE=readerboard
PASSWORD=readerboard-test-only  # the cluster listens on loopback only and holds nothing but tests

as_postgres() { runuser -u postgres -- "$@"; }
port_of() { pg_lsclusters -h | awk -v c="$CLUSTER" '$2 == c { print $3 }'; }
status_of() { pg_lsclusters -h | awk -v c="$CLUSTER" '$2 == c { print $4 }'; }

exec 9>/tmp/readerboard-postgres.lock  # one for every cluster: pg_createcluster picks a port by looking
# at the clusters already made, so two made at once would pick the same one
flock 9

if [ -z "$(port_of)" ]; then
  version=$(ls /usr/lib/postgresql | sort -V | tail -n1)
  echo "postgres: creating cluster $version/$CLUSTER" >&2
  # UTF-8 whatever the machine's locale, and C ordering (by code point, as SQLite orders text).
  pg_createcluster "$version" "$CLUSTER" --start-conf=manual --locale=C.UTF-8 --encoding=UTF8 \
    -o fsync=off -o synchronous_commit=off -o full_page_writes=off \
    -o max_connections=200 >/dev/null 9>&-
fi
version=$(pg_lsclusters -h | awk -v c="$CLUSTER" '$2 == c { print $1 }')
port=$(port_of)
if [ "$(status_of)" != "online" ]; then
  echo "postgres: starting cluster $version/$CLUSTER on port $port" >&2
  pg_ctlcluster "$version" "$CLUSTER" start 9>&-  # the server must not hold the lock
fi

psql_admin() { as_postgres psql -X -q -v ON_ERROR_STOP=1 -p "$port" -d postgres -tA "$@"; }
if [ "$(psql_admin -c "SELECT 1 FROM pg_roles WHERE rolname = '$ROLE'")" != "1" ]; then
  psql_admin -c "CREATE ROLE $ROLE LOGIN CREATEDB PASSWORD '$PASSWORD'"
fi
if [ "$(psql_admin -c "SELECT 1 FROM pg_database WHERE datname = '$ROLE'")" != "1" ]; then
  psql_admin -c "CREATE DATABASE $ROLE OWNER $ROLE"
fi
# Test databases of runs that were killed before pytest-django could drop them.
for name in $(psql_admin -c "SELECT datname FROM pg_database WHERE datname ~ '^test_${ROLE}_[0-9]+(_gw[0-9]+)?\$'"); do
  pid=${name#test_"${ROLE}"_}
  pid=${pid%%_*}
  kill -0 "$pid" 2>/dev/null || psql_admin -c "DROP DATABASE IF EXISTS \"$name\" WITH (FORCE)" >&2 \
    || echo "postgres: could not drop $name (left as it is)" >&2
done

} 3>&-
echo "postgres://$ROLE:$PASSWORD@127.0.0.1:$port/$ROLE" >&3
