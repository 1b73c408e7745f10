#!/usr/bin/env bash
# Fleet benchmarks: holdfast against go-control-plane and java-control-plane
# peers, same run.
#
#   bench/run.sh [--quick] [hfbench suite flags...]
#
# Builds holdfast (ninja, if build/ exists) and the Go tools (load generator
# and driver `hfbench`, peer `hfpeer`) into $HOLDFAST_CACHE/bench, and, when
# --servers names java-control-plane, the Java peer `javapeer.jar` (Maven,
# repository $HOLDFAST_CACHE/m2; skipped while it is newer than every file of
# bench/javapeer) and, when --servers names floor, the floor `xds_floor`
# (ninja, build/bench/floor); raises the open-files limit, runs every scenario against
# holdfast and then against the peers, and prints a markdown table with the
# figures and holdfast's ratio to each peer.
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
javapeer_jar="$cache/javapeer.jar"

# The Java peer and the floor are built and passed only when asked for.
servers_arg=
prev=
for a in "$@"; do
  case "$prev" in --servers | -servers) servers_arg="$a" ;; esac
  case "$a" in --servers=* | -servers=*) servers_arg="${a#*=}" ;; esac
  prev="$a"
done
want_java=0
want_floor=0
[[ ",$servers_arg," == *,java-control-plane,* ]] && want_java=1
[[ ",$servers_arg," == *,floor,* ]] && want_floor=1
floor_bin="$build_dir/bench/floor/xds_floor"

if [[ "${HFBENCH_NO_BUILD:-0}" != 1 ]]; then
  if [[ -f "$build_dir/build.ninja" && -z "${HOLDFAST_BIN:-}" ]]; then
    echo "== building holdfast ($build_dir)" >&2
    nice -n 10 ninja -C "$build_dir" holdfast >&2
  fi
  if [[ $want_floor == 1 ]]; then
    echo "== building xds_floor ($build_dir)" >&2
    nice -n 10 ninja -C "$build_dir" xds_floor >&2
  fi
  echo "== building hfbench and hfpeer into $cache" >&2
  (
    cd "$here"
    export GOPATH="$HOLDFAST_CACHE/go" GOMODCACHE="$HOLDFAST_CACHE/go/mod" \
      GOCACHE="$HOLDFAST_CACHE/go/build" GOFLAGS="-modcacherw -buildvcs=false" GOWORK=off
    nice -n 10 go build -o "$cache/" ./cmd/hfbench ./cmd/hfpeer
  )
  if [[ $want_java == 1 ]]; then
    if [[ ! -f "$javapeer_jar" ]] || [[ -n "$(find "$here/javapeer" -path "$here/javapeer/target" -prune \
        -o -type f -newer "$javapeer_jar" -print -quit)" ]]; then
      echo "== building javapeer into $cache (Maven repository $HOLDFAST_CACHE/m2)" >&2
      nice -n 10 mvn -B -q -f "$here/javapeer/pom.xml" -Dmaven.repo.local="$HOLDFAST_CACHE/m2" \
        -Djavapeer.buildDir="$cache/javapeer-build" package >&2
      cp "$cache/javapeer-build/javapeer.jar" "$javapeer_jar.tmp"
      mv "$javapeer_jar.tmp" "$javapeer_jar"
    else
      echo "== javapeer is up to date: $javapeer_jar" >&2
    fi
  fi
fi
[[ -x "$holdfast_bin" ]] || { echo "holdfast binary not found: $holdfast_bin" >&2; exit 1; }
if [[ $want_java == 1 ]]; then
  [[ -f "$javapeer_jar" ]] || { echo "javapeer not built: $javapeer_jar" >&2; exit 1; }
fi
if [[ $want_floor == 1 ]]; then
  [[ -x "$floor_bin" ]] || { echo "xds_floor not built: $floor_bin (configure $build_dir)" >&2; exit 1; }
fi

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
java_args=()
if [[ $want_java == 1 ]]; then
  # The JVM reads classes from the jar while it runs: a copy, like holdfast's.
  cp "$javapeer_jar" "$out/javapeer.jar"
  java_args=(--javapeer "$out/javapeer.jar")
  echo "== javapeer: $(java -version 2>&1 | head -1), jar sha256 $(sha256sum "$out/javapeer.jar" | cut -c1-16)" >&2
fi
floor_args=()
if [[ $want_floor == 1 ]]; then
  cp "$floor_bin" "$out/xds_floor"
  floor_args=(--floor "$out/xds_floor")
  echo "== xds_floor: built $(stat -c %y "$floor_bin" | cut -d. -f1), sha256 $(sha256sum "$out/xds_floor" | cut -c1-16)" >&2
fi
"$cache/hfbench" suite "${quick[@]}" --holdfast "$out/holdfast" --peer "$cache/hfpeer" \
  ${java_args[@]+"${java_args[@]}"} ${floor_args[@]+"${floor_args[@]}"} --out "$out" ${args[@]+"${args[@]}"}
