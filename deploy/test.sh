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
echo "== mypy with django-stubs and the DRF plugin over the web app and the workers (pyproject.toml)"
.venv/bin/mypy leaderboard workers
echo "== import layering: packages, apps, submission stages, the pure run contract (pyproject.toml)"
.venv/bin/lint-imports
echo "== ruff over the whole tree"
.venv/bin/ruff check .
# The suite runs twice, on the two databases the platform supports: SQLite (the demo's, embedded) and
# PostgreSQL (production's; deploy/postgres.sh installs and starts a local one and prints its URL).
# READERBOARD_TEST_DATABASES=sqlite (or postgres) runs one of them, for a quick run by hand.
# The first non-zero exit status of pytest is the script's (5, it collected nothing, is a failure for
# us, not a pass), and both runs must end with the same counts (passed, skipped, ...).
status=0
summaries=()
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
for database in ${READERBOARD_TEST_DATABASES:-sqlite postgres}; do
  case $database in
    sqlite) url="" ;;
    postgres) url=$(bash deploy/postgres.sh)
      case $url in
        postgres://*) ;;
        *) echo "test.sh: deploy/postgres.sh printed '$url' where a postgres:// URL was expected" >&2; exit 2 ;;
      esac ;;
    *) echo "test.sh: READERBOARD_TEST_DATABASES: unknown database '$database' (sqlite, postgres)" >&2; exit 2 ;;
  esac
  echo "== pytest on $database"
  code=0
  READERBOARD_DATABASE_URL=$url .venv/bin/python -m pytest "$@" 2>&1 | tee "$logs/$database.log" || code=$?
  [ "$status" -ne 0 ] || status=$code
  # pytest's closing line without its duration and warnings: "1234 passed, 5 skipped".
  summaries+=("$(grep -E '([0-9]+ (passed|failed|errors?|skipped|deselected)|no tests ran).* in [0-9.]+s' \
    "$logs/$database.log" | tail -n1 | sed -E 's/^=+ //; s/ in [0-9.]+s.*$//; s/,? [0-9]+ warnings?//')")
done
if [ "$status" -eq 0 ] && [ ${#summaries[@]} -eq 2 ] && [ "${summaries[0]}" != "${summaries[1]}" ]; then
  echo "test.sh: the two runs differ: SQLite '${summaries[0]}', Postgres '${summaries[1]}'" >&2
  status=1
fi
exit "$status"
