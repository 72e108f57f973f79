#!/usr/bin/env bash
# Install everything Readerboard needs on a fresh Debian machine (run as root):
# system packages, the Python virtual environment, the pinned requirements, the
# container engine (deploy/engine.sh) and the locally built images (deploy/images/build.sh).
# Safe to re-run: each step is skipped when it is already done.
set -euo pipefail
cd "$(dirname "$0")/.."

source deploy/lib.sh
apt_ensure setup redis-server chromium chromium-driver

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.requirements.sha256
want=$(sha256sum requirements.txt | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "setup: installing Python requirements"
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -r requirements.txt
  echo "$want" > "$stamp"
fi

# Submitted systems run in containers: the engine (docker.io + gVisor) and the images
# built locally (no registry needed).  READERBOARD_SKIP_ENGINE=1 skips both, for a
# machine that only serves pages; systems then stay queued until a worker with an engine runs.
if [ "${READERBOARD_SKIP_ENGINE:-0}" != "1" ]; then
  bash deploy/engine.sh
  bash deploy/images/build.sh
fi
