# Shared by the deploy scripts (sourced, not run).

# apt_ensure WHO PACKAGE...: install the Debian packages that are missing, quietly.
apt_ensure() {
  local who=$1; shift
  local missing=()
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing+=("$pkg")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "$who: installing system packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

# steps_start / step_done MESSAGE: one line per finished step of a script, with its seconds and the
# seconds since steps_start (the demo's step table in tests/benchmarks/README.md comes from these lines).
steps_start() { STEPS_T0=$(date +%s.%N); STEPS_T=$STEPS_T0; }
step_done() {
  local who=$1; shift
  local now; now=$(date +%s.%N)
  awk -v w="$who" -v a="$STEPS_T" -v t0="$STEPS_T0" -v b="$now" -v m="$*" \
    'BEGIN { printf "%s: %-58s %6.1f s  (at %5.1f s)\n", w, m, b - a, b - t0 }'
  STEPS_T=$now
}
