#!/usr/bin/env bash
# Sets up a fresh machine and runs every test holdfast has:
#   1. the release build's tests (unit, gRPC, integration with real xDS clients,
#      Kubernetes tests against a real kube-apiserver built by scripts/kube.sh)
#   2. a clang build with ThreadSanitizer and -Wthread-safety as an error,
#      and the unit tests under it but the gRPC server's (abseil built with
#      TSan first)
#   3. the unit and gRPC tests again under AddressSanitizer + UBSan, and the
#      integration tests of the gateway model and of store outages against
#      the sanitized holdfast (it must also exit 0, leak-free, on SIGTERM)
# Usage: scripts/test.sh   (HOLDFAST_SKIP_SANITIZE=1 skips step 3)
# Every ctest run fails when its label selects no test (--no-tests=error):
# a renamed or dropped label must not pass a stage silently.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
JOBS="${JOBS:-$(nproc)}"

scripts/setup.sh build
cmake --build build -j "$JOBS"
ctest --test-dir build --no-tests=error --output-on-failure -j "$JOBS" -LE integration
# The real kube-apiserver and etcd 3.6 of the kube tests: built once into
# $HOLDFAST_CACHE/kube (about 10 minutes cold on 2 cores), restored after.
kube_start=$SECONDS
scripts/kube.sh >/dev/null
echo "test.sh: Kubernetes test binaries ready in $((SECONDS - kube_start))s" >&2
ctest --test-dir build --no-tests=error --output-on-failure -L integration

# Clang checks the ABSL_GUARDED_BY annotations that GCC ignores (every file
# compiles with -Wthread-safety as an error), and ThreadSanitizer checks what
# the annotations cannot: the unit tests run under it, with abseil's and
# gRPC's locks instrumented (scripts/tsan_absl.sh, cached).
tsan_start=$SECONDS
CC=clang CXX=clang++ scripts/setup.sh build-tsan -DHOLDFAST_PREBUILT_API="$PWD/build" \
  -DHOLDFAST_TSAN_ABSL_LIB="$(scripts/tsan_absl.sh)" \
  "-DCMAKE_CXX_FLAGS=-Wthread-safety -Werror=thread-safety"
# Only what the analysis and the TSan run need: the app, the unit test
# binaries and the one benchmark
# with its own locks; fuzz drivers and the other benchmarks have none of
# their own, and skipping them saves about three minutes of a cold run.
tsan_targets=$(ctest --test-dir build-tsan -N -L unit -LE fuzz | awk '/Test +#/ {print $3}')
# shellcheck disable=SC2086 # one target per word
cmake --build build-tsan -j "$JOBS" --target holdfast xds_floor $tsan_targets
# The gRPC server's test too: its reactors state gRPC's hand-offs between
# threads themselves (src/common/thread_handoff.h; docs/security.md).
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 ignore_noninstrumented_modules=1 suppressions=$PWD/test/tsan.supp" \
  ctest --test-dir build-tsan --no-tests=error --output-on-failure -j "$JOBS" -L unit -LE fuzz
echo "test.sh: ThreadSanitizer stage took $((SECONDS - tsan_start))s" >&2

if [[ "${HOLDFAST_SKIP_SANITIZE:-0}" != 1 ]]; then
  scripts/setup.sh build-asan -DHOLDFAST_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug \
    -DHOLDFAST_PREBUILT_API="$PWD/build"
  cmake --build build-asan -j "$JOBS"
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
  ctest --test-dir build-asan --no-tests=error --output-on-failure -j "$JOBS" -L unit
  ctest --test-dir build-asan --no-tests=error --output-on-failure -L sanitized-integration
fi
echo "all tests passed"
