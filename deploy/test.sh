#!/usr/bin/env bash
# The whole test suite: set-up, type checks, import layering, then pytest.
# Extra arguments go to pytest (e.g. deploy/test.sh tests/leaderboard/test_uploads.py -x; a selection
# without database tests fails its SQLite pass with 5: READERBOARD_TEST_DATABASES=sqlite runs it once).
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/setup.sh
# The test-only requirements (pytest, the checkers, the manifest validators, MkDocs), on top of
# setup.sh's, once per change of the file.
stamp=.venv/.requirements-dev.sha256
want=$(sha256sum requirements-dev.txt | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  .venv/bin/pip install -q -r requirements-dev.txt
  echo "$want" > "$stamp"
fi

echo "== mypy --strict scoring, the run contract (leaderboard/sandbox), the participants' client and the compute worker"
.venv/bin/mypy --strict scoring
# The compute worker's files are the source modules of its forbidden contract in pyproject.toml.
.venv/bin/mypy --strict --follow-imports=silent --ignore-missing-imports \
  leaderboard/sandbox leaderboard/client workers/compute.py workers/run_system.py workers/internal_api.py workers/runner.py \
  workers/converse.py workers/celery_settings.py
echo "== mypy with django-stubs and the DRF plugin over the web app and the workers (pyproject.toml)"
.venv/bin/mypy leaderboard workers
echo "== mypy over the tests, the same flags (pyproject.toml): fixtures, builders and the systems they bundle"
.venv/bin/mypy tests
echo "== import layering: packages, apps, submission stages, the pure run contract (pyproject.toml)"
.venv/bin/lint-imports
echo "== ruff over the whole tree"
.venv/bin/ruff check .
echo "== the documentation site, --strict: a broken link, snippet or page left out of the navigation fails"
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict -f docs/mkdocs.yml  # not --quiet: it hides the warnings --strict counts
# The suite, in two passes: the whole suite once on PostgreSQL (production's database; deploy/postgres.sh
# installs and starts a local one and prints its URL), and again on SQLite (the demo's, embedded) only
# the tests that touch the database (marker "database", added at collection), without the sandbox and
# browser tiers, whose subject is not the database.  The scoring tests and the other database-free ones
# run once.  In each pass the fast tests run under xdist (READERBOARD_TEST_WORKERS, 2), then the slow
# tiers (tests/e2e, tests/sandbox, tests/processes: one engine, one host) one after another.
# READERBOARD_TEST_DATABASES=sqlite (or postgres) runs the whole suite on one of them, for a quick run by
# hand; with both, the first runs the whole suite and the second the database tests.
# A pass that collects nothing (pytest's 5 in both halves) fails, as any other non-zero status of
# pytest; the first is the script's.  Every test of the database pass must have the same outcome on the
# full pass (deploy/passes_agree.py reads the JUnit XML of both).
slow="docker or browser or processes"
status=0
passes=()
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
  if [ ${#passes[@]} -eq 0 ]; then
    echo "== pytest on $database: the whole suite"
    fast="not ($slow)" tiers="$slow"
  else
    echo "== pytest on $database: the tests that touch the database"
    fast="database and not ($slow)" tiers="database and processes and not docker and not browser"
  fi
  mkdir -p "$logs/$database"
  codes=()
  for half in fast tiers; do
    code=0
    if [ "$half" = fast ]; then
      READERBOARD_DATABASE_URL=$url .venv/bin/python -m pytest -n "$workers" -m "$fast" \
        --junitxml="$logs/$database/fast.xml" "$@" || code=$?
    else
      READERBOARD_DATABASE_URL=$url .venv/bin/python -m pytest -m "$tiers" \
        --junitxml="$logs/$database/tiers.xml" "$@" || code=$?
    fi
    codes+=("$code")
  done
  code=0
  [ "${codes[0]}" -ne 5 ] || [ "${codes[1]}" -ne 5 ] || code=5
  for half_code in "${codes[@]}"; do
    if [ "$code" -eq 0 ] && [ "$half_code" -ne 0 ] && [ "$half_code" -ne 5 ]; then code=$half_code; fi
  done
  [ "$status" -ne 0 ] || status=$code
  passes+=("$logs/$database")
done
if [ "$status" -eq 0 ] && [ ${#passes[@]} -eq 2 ]; then
  .venv/bin/python deploy/passes_agree.py "${passes[0]}" "${passes[1]}" || status=1
fi
exit "$status"
