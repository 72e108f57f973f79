#!/usr/bin/env bash
# Build Readerboard's container images in the local Docker engine, without a container registry:
#   readerboard/python:bookworm   Debian bookworm minbase + python3, made with debootstrap + docker import
#   readerboard/baseline:latest   the extractive baseline system (deploy/images/baseline), FROM the above
#   readerboard-hidden:<id>       the base image's hidden copy: the same files in one layer of their own
#                                 (a random marker file in it), which runs on hidden data run instead
#                                 (workers.runner.hidden_copy makes it the same way where it is missing)
# Run as root (debootstrap needs it). Idempotent: an image whose org.readerboard.recipe label matches
# the current recipe is kept. Downloads are cached in var/images/ (delete it to refresh the packages).
# Environment: DEBIAN_MIRROR (default http://deb.debian.org/debian; used when the packages are not
# cached yet); FORCE=1 re-imports/rebuilds both images from the cache; BASE_IMAGE, BASELINE_IMAGE and
# IMAGES_CACHE override the two tags and the cache directory (for trials).
set -euo pipefail
cd "$(dirname "$0")/../.."

DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SUITE=bookworm
VARIANT=minbase
INCLUDE=python3
BASE_IMAGE=${BASE_IMAGE:-readerboard/python:bookworm}
BASELINE_IMAGE=${BASELINE_IMAGE:-readerboard/baseline:latest}
CACHE=$(realpath -m "${IMAGES_CACHE:-var/images}")
LABEL=org.readerboard.recipe
IMPORT_CHANGES=(
  'ENV LANG=C.UTF-8 PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1'
  'CMD ["python3"]'
)

t_start=$(date +%s.%N)
step_t=$t_start
say() { echo "build: $*"; }
# One line per finished step: what was done and how long it took.
done_step() {
  local now; now=$(date +%s.%N)
  awk -v a="$step_t" -v b="$now" -v m="$*" 'BEGIN { printf "build: %-64s %6.1fs\n", m, b - a }'
  step_t=$now
}
die() { echo "build: error: $*" >&2; exit 1; }

# The image's recipe label, or nothing when the image does not exist.
image_recipe() { docker image inspect -f "{{index .Config.Labels \"$LABEL\"}}" "$1" 2>/dev/null || true; }
image_id() { docker image inspect -f '{{.Id}}' "$1" 2>/dev/null || true; }
# After a rebuild, drop the image the tag pointed to before (only if nothing else uses it).
drop_old() { [ -n "$1" ] && [ "$1" != "$(image_id "$2")" ] && docker rmi "$1" >/dev/null 2>&1 || true; }

# ------------------------------------------------------------------ the base root file system
# Trim a debootstrapped tree: package lists and caches, docs, man pages, translations (C.UTF-8 is
# built into libc and stays), logs, and the host's files debootstrap copied in. dpkg is told to
# keep leaving docs out, so images FROM this one stay small after apt-get install.
trim_rootfs() {
  local root=$1
  rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb \
    "$root"/var/cache/debconf/*-old "$root"/var/lib/dpkg/*-old "$root"/var/log/* "$root"/tmp/* \
    "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/usr/share/lintian "$root"/debootstrap
  find "$root"/usr/share/doc -mindepth 1 ! -type d ! -name copyright -delete  # copyright files stay
  find "$root"/usr/share/doc -mindepth 1 -type d -empty -delete
  find "$root"/usr/share/locale -mindepth 1 -maxdepth 1 ! -name locale.alias -exec rm -rf {} +
  cat > "$root"/etc/dpkg/dpkg.cfg.d/readerboard-excludes <<'CFG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
path-exclude /usr/share/lintian/*
CFG
  cat > "$root"/etc/apt/sources.list <<'LIST'
deb http://deb.debian.org/debian bookworm main
deb http://deb.debian.org/debian bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
LIST
  : > "$root"/etc/resolv.conf; : > "$root"/etc/hostname; : > "$root"/etc/machine-id
  rm -rf "${root:?}"/dev/* "${root:?}"/proc/* "${root:?}"/sys/* "${root:?}"/run/*
  mkdir -p "$root"/run/lock
}

# The recipe of the base image: everything that decides its content (not the mirror it came from).
base_recipe=$( { echo "$SUITE $VARIANT $INCLUDE"; printf '%s\n' "${IMPORT_CHANGES[@]}"; declare -f trim_rootfs; } \
  | sha256sum | cut -c1-16)
arch=$(dpkg --print-architecture)
debs_tar=$CACHE/debs-$SUITE-$VARIANT-${INCLUDE//,/-}-$arch.tgz  # the downloaded .debs
rootfs_tar=$CACHE/rootfs-$SUITE-$arch-$base_recipe.tar          # the trimmed tree, ready to import

build_base() {
  [ "$(id -u)" = 0 ] || die "building $BASE_IMAGE needs root (debootstrap)"
  command -v debootstrap >/dev/null || die "debootstrap is not installed (apt-get install debootstrap)"
  mkdir -p "$CACHE"
  if [ ! -s "$rootfs_tar" ]; then
    local work; work=$(mktemp -d "$CACHE/work.XXXXXX")
    # shellcheck disable=SC2064
    trap "rm -rf '$work'" EXIT
    if [ ! -s "$debs_tar" ] || [ ! -s "$debs_tar.mirror" ]; then
      debootstrap --variant="$VARIANT" --include="$INCLUDE" --make-tarball="$work/debs.tgz" \
        "$SUITE" "$work/dl" "$DEBIAN_MIRROR" >"$work/log" 2>&1 \
        || { tail -20 "$work/log" >&2; die "debootstrap could not download $SUITE from $DEBIAN_MIRROR"; }
      echo "$DEBIAN_MIRROR" > "$debs_tar.mirror"
      mv "$work/debs.tgz" "$debs_tar"
      done_step "downloaded $SUITE packages ($(du -h "$debs_tar" | cut -f1)) from $DEBIAN_MIRROR"
    else
      done_step "packages cached: ${debs_tar#"$PWD"/}"
    fi
    # The package lists in the tarball are named after the mirror they came from: unpack with that
    # mirror's URL. Offline (own network namespace) where possible, to be sure nothing is fetched.
    local offline=(); unshare -n true 2>/dev/null && offline=(unshare -n)
    "${offline[@]}" debootstrap --variant="$VARIANT" --include="$INCLUDE" --unpack-tarball="$debs_tar" \
      "$SUITE" "$work/root" "$(cat "$debs_tar.mirror")" >"$work/log" 2>&1 \
      || { tail -20 "$work/log" >&2; die "debootstrap failed (log above; delete $debs_tar to download again)"; }
    done_step "debootstrap $SUITE ($VARIANT + $INCLUDE) from the cached packages${offline:+, offline}"
    trim_rootfs "$work/root"
    chroot "$work/root" python3 -c 'import json, gzip, re, math, sys; print("ok")' >/dev/null \
      || die "python3 does not run in the trimmed root file system"
    tar --numeric-owner --xattrs -C "$work/root" -cf "$work/rootfs.tar" .
    rm -f "$CACHE"/rootfs-"$SUITE"-"$arch"-*.tar
    mv "$work/rootfs.tar" "$rootfs_tar"
    rm -rf "$work"; trap - EXIT
    done_step "trimmed and packed the root file system ($(du -h "$rootfs_tar" | cut -f1))"
  else
    done_step "root file system cached: ${rootfs_tar#"$PWD"/}"
  fi
  local old; old=$(image_id "$BASE_IMAGE")
  local changes=(); local c
  for c in "${IMPORT_CHANGES[@]}" "LABEL $LABEL=$base_recipe"; do changes+=(--change "$c"); done
  docker import "${changes[@]}" --message "debootstrap $SUITE $VARIANT +$INCLUDE, trimmed (deploy/images/build.sh)" \
    "$rootfs_tar" "$BASE_IMAGE" >/dev/null
  drop_old "$old" "$BASE_IMAGE"
  done_step "imported $BASE_IMAGE"
}

# ------------------------------------------------------------------ the baseline system
# The legacy builder (DOCKER_BUILDKIT=0): it works with the 20.10 engine and CLIs without buildx,
# needs no registry, and never pulls a FROM image that exists locally (--pull is off by default).
build_baseline() {
  local recipe=$1 old; old=$(image_id "$BASELINE_IMAGE")
  local log; log=$(mktemp)
  DOCKER_BUILDKIT=0 docker build --quiet --build-arg BASE_IMAGE="$BASE_IMAGE" --label "$LABEL=$recipe" \
    -t "$BASELINE_IMAGE" deploy/images/baseline >"$log" 2>&1 \
    || { cat "$log" >&2; rm -f "$log"; die "docker build of $BASELINE_IMAGE failed"; }
  rm -f "$log"
  drop_old "$old" "$BASELINE_IMAGE"
  done_step "built $BASELINE_IMAGE"
}

# ------------------------------------------------------------------ the base image's hidden copy
# Runs on hidden data must not share a page of the page cache with runs whose output a team reads:
# every container of one image reads the same host inodes (its overlay lower layers).  The copy is
# the base image flattened (docker export of a created, never started container) and imported as a
# layer of its own; a random marker file makes its content, so its layer and inodes, unique (an
# identical tar would be the same layer).  workers/runner.py finds it by the source image's id.
HIDDEN_REPOSITORY=readerboard-hidden
HIDDEN_LABEL=org.readerboard.hidden-copy
build_hidden_copy() {
  local src; src=$(image_id "$BASE_IMAGE")
  local ref="$HIDDEN_REPOSITORY:${src#sha256:}"
  if [ "${FORCE:-0}" != 1 ] && \
     [ "$(docker image inspect -f "{{index .Config.Labels \"$HIDDEN_LABEL\"}}" "$ref" 2>/dev/null)" = "$src" ]; then
    done_step "hidden copy of $BASE_IMAGE up to date"
    return
  fi
  local work; work=$(mktemp -d)
  head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/marker"; echo >> "$work/marker"
  chmod 0444 "$work/marker"
  local cid; cid=$(docker create --network none --entrypoint /nonexistent "$src")
  local changes=(); local c
  for c in "${IMPORT_CHANGES[@]}" "LABEL $LABEL=$base_recipe" "LABEL $HIDDEN_LABEL=$src"; do changes+=(--change "$c"); done
  docker cp "$work/marker" "$cid:/.readerboard-hidden-copy" \
    && docker export "$cid" | docker import "${changes[@]}" --message "hidden copy of $BASE_IMAGE (deploy/images/build.sh)" \
      - "$ref" >/dev/null \
    || { docker rm -f "$cid" >/dev/null; rm -rf "$work"; die "the hidden copy of $BASE_IMAGE could not be made"; }
  docker rm -f "$cid" >/dev/null; rm -rf "$work"
  done_step "made the hidden copy of $BASE_IMAGE"
}

# ------------------------------------------------------------------ main
command -v docker >/dev/null || die "the docker CLI is not installed"
timeout 20 docker version --format '{{.Server.Version}}' >/dev/null 2>&1 \
  || die "cannot reach the Docker engine (is dockerd running? DOCKER_HOST=${DOCKER_HOST:-unset}); try: systemctl start docker"
mkdir -p "$CACHE"
[ -e "$CACHE/.lock" ] || : > "$CACHE/.lock"
exec 9<"$CACHE/.lock"
flock 9  # one build at a time (demo.sh and test.sh may both call this)
rm -rf "$CACHE"/work.*  # left by a build that was killed
done_step "docker engine $(docker version --format '{{.Server.Version}}') reachable"

if [ "${FORCE:-0}" != 1 ] && [ "$(image_recipe "$BASE_IMAGE")" = "$base_recipe" ]; then
  done_step "$BASE_IMAGE up to date (recipe $base_recipe)"
else
  old_base=$(image_id "$BASE_IMAGE")
  build_base
  # The copy of the image the tag pointed to before is of no use now.
  [ -n "$old_base" ] && [ "$old_base" != "$(image_id "$BASE_IMAGE")" ] \
    && docker rmi "$HIDDEN_REPOSITORY:${old_base#sha256:}" >/dev/null 2>&1 || true
fi
build_hidden_copy

base_id=$(image_id "$BASE_IMAGE")
baseline_recipe=$( { echo "$base_id"; cat deploy/images/baseline/Dockerfile deploy/images/baseline/baseline.py; } \
  | sha256sum | cut -c1-16)
if [ "${FORCE:-0}" != 1 ] && [ "$(image_recipe "$BASELINE_IMAGE")" = "$baseline_recipe" ]; then
  done_step "$BASELINE_IMAGE up to date (recipe $baseline_recipe)"
else
  build_baseline "$baseline_recipe"
fi

for img in "$BASE_IMAGE" "$BASELINE_IMAGE" "$HIDDEN_REPOSITORY:$(image_id "$BASE_IMAGE" | cut -d: -f2)"; do
  say "$(printf '%-30s %s  %s MB' "$img" "$(image_id "$img" | cut -c8-19)" \
    "$(( $(docker image inspect -f '{{.Size}}' "$img") / 1000000 ))")"
done
step_t=$t_start; done_step "total"
