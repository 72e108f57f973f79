#!/usr/bin/env bash
# The container engine that runs submitted systems: Debian's docker.io with gVisor
# (runsc) registered as a second runtime.  Installs what is missing, registers
# runsc in /etc/docker/daemon.json, and starts dockerd when it is not running
# (machines without systemd, like CI's, get it started in the background).
# Safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."

source deploy/lib.sh
apt_ensure engine docker.io runsc debootstrap busybox-static

# gVisor: the sandbox's own kernel; ptrace works where KVM is not available.
# --network=none: even a container given a network would have none.
mkdir -p /etc/docker
changed=$(python3 - <<'PY'
import json, os
path = "/etc/docker/daemon.json"
config = {}
if os.path.exists(path):
    with open(path, encoding="utf-8") as fh:
        config = json.load(fh)
want = {"path": "/usr/bin/runsc", "runtimeArgs": ["--network=none", "--platform=ptrace"]}
if config.get("runtimes", {}).get("runsc") != want:
    config.setdefault("runtimes", {})["runsc"] = want
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(config, fh, indent=2)
    print("yes")
PY
)

engine_up() { docker info >/dev/null 2>&1; }
if engine_up && [ -n "$changed" ]; then
  # A running daemon reloads its runtimes on SIGHUP.
  kill -HUP "$(pidof dockerd)" && sleep 1
fi
if ! engine_up; then
  echo "engine: starting dockerd"
  mkdir -p var
  if command -v systemctl >/dev/null && systemctl is-system-running >/dev/null 2>&1; then
    systemctl start docker
  else
    nohup dockerd >var/dockerd.log 2>&1 &
  fi
  for _ in $(seq 1 60); do engine_up && break; sleep 0.5; done
  engine_up || { echo "engine: dockerd did not start; see var/dockerd.log" >&2; exit 1; }
fi
docker info --format '{{json .Runtimes}}' | grep -q runsc || {
  echo "engine: dockerd does not list the runsc runtime; check /etc/docker/daemon.json" >&2; exit 1; }
