#!/usr/bin/env bash
# The whole test suite: set-up, type checks, import layering, then pytest.
# Extra arguments go to pytest (e.g. deploy/test.sh tests/scoring -x).
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/setup.sh

echo "== mypy --strict scoring, and the Django-free parts of systems (archives, runner)"
.venv/bin/mypy --strict scoring
.venv/bin/mypy --strict --follow-imports=silent --ignore-missing-imports \
  leaderboard/submissions/systems.py workers/runner.py
echo "== import layering (workers -> leaderboard -> scoring)"
.venv/bin/lint-imports
echo "== ruff"
.venv/bin/ruff check scoring tests deploy/images workers
echo "== pytest"
# pytest's exit status is the script's: 5 (it collected nothing) is a failure for us, not a pass.
exec .venv/bin/python -m pytest "$@"
