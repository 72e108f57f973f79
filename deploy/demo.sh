#!/usr/bin/env bash
# Run Readerboard with the demo challenges on embedded defaults: SQLite, a local
# Redis broker, a control and a compute Celery worker started here, Django's server on :8000.
# The URL comes as soon as the site answers; the container engine, the images and the baseline
# runs follow it, each step printed with its time.  Ctrl-C stops everything this script started.
set -euo pipefail
cd "$(dirname "$0")/.."
source deploy/lib.sh
steps_start
bash deploy/setup.sh python
step_done demo "system package, virtual environment, requirements"
# From here on, what the platform writes (database, uploads, runs, logs, the baseline archive)
# is for this user only; the workers open each run folder up for the sandbox themselves.
umask 077

PORT=${PORT:-8000}
REDIS_PORT=${REDIS_PORT:-6379}
export DJANGO_SETTINGS_MODULE=leaderboard.settings.dev
export READERBOARD_BROKER_URL="redis://127.0.0.1:${REDIS_PORT}/0"
mkdir -p var
PY=.venv/bin/python

pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap cleanup EXIT INT TERM

# The broker first: loading the demo queues work on commit, and a send to an absent broker
# waits out its retries (demo_setup took 39 s instead of 12).
# A Redis already on the port is used (a developer's own); anything else there is refused, since
# the workers would wait on it for ever with nothing said.
redis_answers() { [ "$(timeout 5 redis-cli -p "$REDIS_PORT" -h 127.0.0.1 ping 2>/dev/null)" = "PONG" ]; }
if ! (exec 3<>"/dev/tcp/127.0.0.1/${REDIS_PORT}") 2>/dev/null; then
  redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --dir "$PWD/var" --save "" --appendonly no \
    >var/redis.log 2>&1 &
  pids+=($!)
  for _ in $(seq 50); do redis_answers && break; sleep 0.1; done
fi
redis_answers || { echo "demo: port ${REDIS_PORT} does not answer as Redis (var/redis.log); set REDIS_PORT to a free port" >&2; exit 1; }
$PY manage.py migrate -v0
$PY manage.py collectstatic --noinput -v0
step_done demo "database migrated, static files collected"
$PY manage.py demo_setup
step_done demo "demo accounts and challenges loaded"
# The compute worker's token for the internal API (printed once; a new one replaces the last run's).
worker_token=$($PY manage.py worker_token_create demo-compute)

# Two workers, so neither waits for the other.  The control worker scores prediction files,
# finishes runs against the gold and runs the reaper (--beat).
$PY -m celery -A workers.celery_app worker --pool=solo --loglevel=INFO -Q celery,control -n scoring@%h --beat \
  >var/worker.log 2>&1 &
pids+=($!)

# DEBUG is off (leaderboard/settings/dev.py), so visitors get the site's error pages, never Django's
# debug page; WhiteNoise serves the collected static files (--nostatic: not Django's static view).
# On 127.0.0.1 only: this one process also serves the compute workers' internal API (/internal/),
# which the demo's compute worker reaches here; a deployment serves it apart (docs/operators/index.md).
$PY manage.py runserver "127.0.0.1:${PORT}" --noreload --nostatic >var/web.log 2>&1 &
web=$!
pids+=($web)
# The URL once the site answers a page, not only once the port is open.
site_answers() { $PY -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=5).read()' \
  "http://127.0.0.1:${PORT}/" 2>/dev/null; }
for _ in $(seq 300); do
  site_answers && break
  kill -0 "$web" 2>/dev/null || { tail -20 var/web.log >&2; echo "demo: the web server stopped (var/web.log)" >&2; exit 1; }
  sleep 0.2
done
site_answers || { echo "demo: the web server does not answer on port ${PORT} (var/web.log)" >&2; exit 1; }
step_done demo "web server answering"

cat <<MSG

  Readerboard is running:  http://127.0.0.1:${PORT}/
  Demo accounts (user / password):
    admin     / admin-demo-pw       (site administrator: Django admin at /admin/, makes organizers)
    organizer / organizer-demo-pw   (organizer of the demo challenges: console at /c/mrqa-demo/console/)
    alice     / alice-demo-pw       (participant)
    bob       / bob-demo-pw         (participant)
  Boards: /c/mrqa-demo/board/dev/   /c/mrc2018-demo/board/dev/   /c/mrqa2019/board/test/
          /c/quac-demo/board/gold-history/   /c/quac-demo/board/own-history/   (and coqa-demo)
  API schema: /api/schema/    Logs: var/web.log, var/worker.log, var/worker-compute.log, var/redis.log
  Prediction files are scored from now on.  Still to come (below, each step timed): the container
  engine and the images, while uploaded systems wait in the queue; then the baseline systems' runs.

MSG

# After the URL: what only systems need.  A failure here leaves the site running; systems stay queued.
engine_ready=0
if [ "${READERBOARD_SKIP_ENGINE:-0}" != "1" ]; then
  if bash deploy/setup.sh engine; then
    engine_ready=1
    step_done demo "container engine and images"
  else
    echo "demo: the container engine or the images could not be set up (above); the site runs, systems stay queued" >&2
  fi
fi

if [ "$engine_ready" = 1 ]; then
  # The compute worker runs submitted systems (minutes each).  It gets what a worker on another host
  # would, and nothing else (env -i): its queue, the web app's address and its token; no broker, no
  # Django settings, no database, no gold.  It asks the web app for each run.
  env -i PATH="$PATH" READERBOARD_COMPUTE_QUEUES=cpu \
    READERBOARD_API_URL="http://127.0.0.1:${PORT}" READERBOARD_WORKER_TOKEN="$worker_token" \
    READERBOARD_WORK_DIR="$PWD/var/compute" READERBOARD_CONTAINER_RUNTIME="${READERBOARD_CONTAINER_RUNTIME:-}" \
    READERBOARD_RUN_IMAGE_REPOSITORY="${READERBOARD_RUN_IMAGE_REPOSITORY:-readerboard-run}" \
    $PY -m workers.compute >var/worker-compute.log 2>&1 &
  pids+=($!)

  # The baselines run on the hidden test data like any team's and rank as marked rows: the MRQA
  # baseline image, and two conversational code bundles on every board of the QuAC and CoQA demos.
  image_id=$(docker image inspect -f '{{.Id}}' readerboard/baseline:latest)
  archive="var/baseline-${image_id#sha256:}.tar"
  [ -f "$archive" ] || { rm -f var/baseline-*.tar; docker save readerboard/baseline:latest -o "$archive"; }
  $PY manage.py demo_baselines "$archive"
  step_done demo "baseline systems queued"
  echo "demo: ready.  The baselines' rows appear on the test boards as their runs finish (about two"
  echo "      minutes; /c/mrqa-demo/board/test/ first).  Ctrl-C stops everything."
fi
wait "$web"
