#!/usr/bin/env bash
# The whole test suite: set-up, type checks, import layering, then pytest.
# Extra arguments go to pytest (e.g. deploy/test.sh tests/scoring -x).
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/setup.sh

echo "== mypy --strict scoring, the run contract (leaderboard/sandbox) and the compute worker"
.venv/bin/mypy --strict scoring
# The compute worker's files are the source modules of its forbidden contract in pyproject.toml.
.venv/bin/mypy --strict --follow-imports=silent --ignore-missing-imports \
  leaderboard/sandbox workers/compute_app.py workers/run_system.py workers/internal_api.py workers/runner.py \
  workers/converse.py workers/celery_settings.py
echo "== import layering (workers -> leaderboard -> scoring)"
.venv/bin/lint-imports
echo "== ruff"
.venv/bin/ruff check scoring tests deploy/images workers
# The suite, in two passes: the whole suite once on PostgreSQL (production's database; deploy/postgres.sh
# installs and starts a local one and prints its URL), and again on SQLite (the demo's, embedded) only
# the tests that touch the database (marker "database", added at collection), without the sandbox and
# browser tiers, whose subject is not the database.  The scoring tests and the other database-free ones
# run once.  Both passes run under xdist (two workers); the slow tiers (tests/e2e, tests/sandbox,
# tests/processes) run one after another on one of them (--dist loadgroup), beside the fast tests.
# READERBOARD_TEST_DATABASES=sqlite (or postgres) runs the whole suite on one of them, for a quick run by
# hand; with both, the first runs the whole suite and the second the database tests.
# The first non-zero exit status of pytest is the script's (5, it collected nothing, is a failure for
# us, not a pass), and every test of the database pass must have the same outcome on the full pass
# (deploy/passes_agree.py reads both passes' JUnit XML).
status=0
reports=()
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
workers=${READERBOARD_TEST_WORKERS:-2}
for database in ${READERBOARD_TEST_DATABASES:-postgres sqlite}; do
  case $database in
    sqlite) url="" ;;
    postgres) url=$(bash deploy/postgres.sh)
      case $url in
        postgres://*) ;;
        *) echo "test.sh: deploy/postgres.sh printed '$url' where a postgres:// URL was expected" >&2; exit 2 ;;
      esac ;;
    *) echo "test.sh: READERBOARD_TEST_DATABASES: unknown database '$database' (sqlite, postgres)" >&2; exit 2 ;;
  esac
  selection=()
  if [ ${#reports[@]} -eq 0 ]; then
    echo "== pytest on $database: the whole suite"
  else
    echo "== pytest on $database: the tests that touch the database"
    selection=(-m "database and not docker and not browser")
  fi
  code=0
  READERBOARD_DATABASE_URL=$url .venv/bin/python -m pytest -n "$workers" --dist loadgroup \
    --junitxml="$logs/$database.xml" "${selection[@]}" "$@" || code=$?
  [ "$status" -ne 0 ] || status=$code
  reports+=("$logs/$database.xml")
done
if [ "$status" -eq 0 ] && [ ${#reports[@]} -eq 2 ]; then
  .venv/bin/python deploy/passes_agree.py "${reports[0]}" "${reports[1]}" || status=1
fi
exit "$status"
