#!/usr/bin/env bash
# Sets up a fresh machine and runs every test holdfast has:
#   1. the release build's integration tests (real xDS clients, etcd, chaos,
#      Kubernetes tests against a real kube-apiserver built by scripts/kube.sh)
#   2. the unit tests, the gRPC server's too, under ThreadSanitizer, in a clang
#      build with -Wthread-safety as an error (abseil built with TSan first)
#   3. the unit tests under AddressSanitizer + UBSan, and the integration
#      tests of the gateway model, of store outages and of CSDS against the
#      sanitized holdfast (it must also exit 0, leak-free, on SIGTERM)
# The builds of 2 and 3 (scripts/build_sanitized.sh) compile in the
# background while 1 runs; docs/ci.md has the timings.
# Usage: scripts/test.sh   (HOLDFAST_SKIP_SANITIZE=1 skips step 3)
# Every ctest run fails when its label selects no test (--no-tests=error):
# a renamed or dropped label must not pass a stage silently.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
JOBS="${JOBS:-$(nproc)}"

# The release build is what the integration tests run. Its unit tests run
# under both sanitizers below, not a third time here.
scripts/setup.sh build
build_start=$SECONDS
cmake --build build -j "$JOBS" --target integration_binaries
echo "test.sh: release build took $((SECONDS - build_start))s" >&2

# The integration tests use about a quarter of two cores: they mostly wait
# on processes, leases and timers. The sanitizer builds take the rest, at the
# lowest priority, so the tests still get the CPU whenever they want it.
sanitized_log="$PWD/build/sanitized-build.log"
chrt --idle 0 nice -n 19 setsid scripts/build_sanitized.sh >"$sanitized_log" 2>&1 &
sanitized_pid=$!
trap 'kill -- -"$sanitized_pid" 2>/dev/null || true' EXIT

# The real kube-apiserver and etcd 3.6 of the kube tests: built once into
# $HOLDFAST_CACHE/kube (about 10 minutes cold on 2 cores), restored after.
kube_start=$SECONDS
scripts/kube.sh >/dev/null
echo "test.sh: Kubernetes test binaries ready in $((SECONDS - kube_start))s" >&2
integration_start=$SECONDS
ctest --test-dir build --no-tests=error --output-on-failure -L integration
echo "test.sh: integration tests took $((SECONDS - integration_start))s" >&2

wait_start=$SECONDS
if ! wait "$sanitized_pid"; then
  tail -n 200 "$sanitized_log" >&2
  echo "test.sh: the sanitizer builds failed (all of it: $sanitized_log)" >&2
  exit 1
fi
trap - EXIT
grep '^build_sanitized:' "$sanitized_log" >&2
echo "test.sh: sanitizer builds finished $((SECONDS - wait_start))s after the integration tests" >&2

# The gRPC server's test too: its reactors state gRPC's hand-offs between
# threads themselves (src/common/thread_handoff.h; docs/security.md).
tsan_start=$SECONDS
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 ignore_noninstrumented_modules=1 suppressions=$PWD/test/tsan.supp" \
  ctest --test-dir build-tsan --no-tests=error --output-on-failure -j "$JOBS" -L unit -LE fuzz
echo "test.sh: ThreadSanitizer tests took $((SECONDS - tsan_start))s" >&2

if [[ "${HOLDFAST_SKIP_SANITIZE:-0}" != 1 ]]; then
  asan_start=$SECONDS
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
  ctest --test-dir build-asan --no-tests=error --output-on-failure -j "$JOBS" -L unit
  ctest --test-dir build-asan --no-tests=error --output-on-failure -L sanitized-integration
  echo "test.sh: AddressSanitizer tests took $((SECONDS - asan_start))s" >&2
fi
echo "all tests passed"
