#!/usr/bin/env bash
# Fleet benchmarks: holdfast against a go-control-plane peer, same run.
#
#   bench/run.sh [--quick] [hfbench suite flags...]
#
# Builds holdfast (ninja, if build/ exists) and the Go tools (load generator
# and driver `hfbench`, peer `hfpeer`) into $HOLDFAST_CACHE/bench, raises the
# open-files limit, runs every scenario against holdfast and then against the
# peer, and prints a markdown table with both figures and their ratio.
# Results, logs and work files go to $HFBENCH_OUT (default: a new directory
# under $HOLDFAST_CACHE/bench/runs). Everything listens on 127.0.0.1.
#
# Environment: HOLDFAST_CACHE (default ~/.cache/holdfast), HOLDFAST_BIN
# (default build/src/app/holdfast), HOLDFAST_BUILD_DIR (default build),
# HFBENCH_OUT, HFBENCH_NO_BUILD=1 to use the binaries as they are.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
export HOLDFAST_CACHE="${HOLDFAST_CACHE:-$HOME/.cache/holdfast}"
cache="$HOLDFAST_CACHE/bench"
build_dir="${HOLDFAST_BUILD_DIR:-$root/build}"
holdfast_bin="${HOLDFAST_BIN:-$build_dir/src/app/holdfast}"
mkdir -p "$cache/runs"

if [[ "${HFBENCH_NO_BUILD:-0}" != 1 ]]; then
  if [[ -f "$build_dir/build.ninja" && -z "${HOLDFAST_BIN:-}" ]]; then
    echo "== building holdfast ($build_dir)" >&2
    nice -n 10 ninja -C "$build_dir" holdfast >&2
  fi
  echo "== building hfbench and hfpeer into $cache" >&2
  (
    cd "$here"
    export GOPATH="$HOLDFAST_CACHE/go" GOMODCACHE="$HOLDFAST_CACHE/go/mod" \
      GOCACHE="$HOLDFAST_CACHE/go/build" GOFLAGS="-modcacherw -buildvcs=false" GOWORK=off
    nice -n 10 go build -o "$cache/" ./cmd/hfbench ./cmd/hfpeer
  )
fi
[[ -x "$holdfast_bin" ]] || { echo "holdfast binary not found: $holdfast_bin" >&2; exit 1; }

# One connection per simulated proxy: use the whole hard limit (20,000 on
# these machines) for the driver and the servers it starts.
ulimit -n "$(ulimit -Hn)"

quick=()
args=()
for a in "$@"; do
  if [[ "$a" == --quick ]]; then quick=(--quick); else args+=("$a"); fi
done
out="${HFBENCH_OUT:-$cache/runs/$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$out"
echo "== results and logs in $out" >&2
echo "== machine: $(nproc) cores, $(free -g | awk '/^Mem:/{print $2}') GiB, kernel $(uname -r)" >&2
if [[ -z "${HOLDFAST_BIN:-}" ]] && git -C "$root" rev-parse --git-dir >/dev/null 2>&1; then
  echo "== holdfast source: commit $(git -C "$root" log -1 --format=%h), $(git -C "$root" status --short -- src cmake CMakeLists.txt | wc -l) changed files under src/ cmake/ CMakeLists.txt" >&2
fi
echo "== holdfast binary: $holdfast_bin, built $(stat -c %y "$holdfast_bin" | cut -d. -f1), sha256 $(sha256sum "$holdfast_bin" | cut -c1-16)" >&2

# Run a copy: a rebuild of build/ during the run must not change (or break)
# the binary under test.
cp "$holdfast_bin" "$out/holdfast"
"$cache/hfbench" suite "${quick[@]}" --holdfast "$out/holdfast" --peer "$cache/hfpeer" \
  --out "$out" ${args[@]+"${args[@]}"}
