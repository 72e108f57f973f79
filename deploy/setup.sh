#!/usr/bin/env bash
# Install what Readerboard needs on a fresh Debian machine (run as root), in parts:
#   python   the web app's system package (redis-server), the virtual environment, the pinned requirements
#   engine   the container engine (deploy/engine.sh) and the locally built images (deploy/images/build.sh)
#   browser  Chromium and its driver (the page tests')
# With no argument, all three.  The demo sets up `python` before its URL and `engine` after it;
# the test suite needs everything first.  Safe to re-run: each step is skipped when it is already done.
set -euo pipefail
cd "$(dirname "$0")/.."

source deploy/lib.sh
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(python engine browser)

setup_python() {
  apt_ensure setup redis-server
  PYTHON=${PYTHON:-python3}
  if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv"
    "$PYTHON" -m venv .venv
  fi
  local stamp=.venv/.requirements.sha256 want
  want=$(sha256sum requirements.txt | cut -d' ' -f1)
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    echo "setup: installing Python requirements"
    # No pip self-upgrade: the interpreter's pip installs these pins (wheels only, no build), and its
    # upgrade cost a fresh machine a download and a few seconds for nothing.
    .venv/bin/pip install -q --disable-pip-version-check -r requirements.txt
    echo "$want" > "$stamp"
  fi
  # The project's own modules byte-compiled once (about half a second): under PYTHONDONTWRITEBYTECODE, as
  # on this kind of machine, every Django process would compile them again at its start.
  .venv/bin/python -m compileall -q -j 0 leaderboard workers scoring >/dev/null
}

# Submitted systems run in containers: the engine (docker.io + gVisor) and the images built locally
# (no registry needed).  READERBOARD_SKIP_ENGINE=1 skips both, for a machine that only serves pages;
# systems then stay queued until a worker with an engine runs.
setup_engine() {
  [ "${READERBOARD_SKIP_ENGINE:-0}" != "1" ] || return 0
  bash deploy/engine.sh
  bash deploy/images/build.sh
}

for part in "${parts[@]}"; do
  case $part in
    python) setup_python ;;
    engine) setup_engine ;;
    browser) apt_ensure setup chromium chromium-driver ;;
    *) echo "setup: unknown part '$part' (python, engine, browser)" >&2; exit 2 ;;
  esac
done
