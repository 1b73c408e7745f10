#!/usr/bin/env bash
# Sets up a fresh machine and runs every test holdfast has:
#   1. the release build's tests (unit, gRPC, integration with real xDS clients,
#      Kubernetes tests against a real kube-apiserver built by scripts/kube.sh)
#   2. the unit and gRPC tests again under AddressSanitizer + UBSan
# Usage: scripts/test.sh   (HOLDFAST_SKIP_SANITIZE=1 skips step 2)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
JOBS="${JOBS:-$(nproc)}"

scripts/setup.sh build
cmake --build build -j "$JOBS"
ctest --test-dir build --output-on-failure -j "$JOBS" -LE integration
# The real kube-apiserver and etcd 3.6 of the kube tests: built once into
# $HOLDFAST_CACHE/kube (about 10 minutes cold on 2 cores), restored after.
kube_start=$SECONDS
scripts/kube.sh >/dev/null
echo "test.sh: Kubernetes test binaries ready in $((SECONDS - kube_start))s" >&2
ctest --test-dir build --output-on-failure -L integration

if [[ "${HOLDFAST_SKIP_SANITIZE:-0}" != 1 ]]; then
  scripts/setup.sh build-asan -DHOLDFAST_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug \
    -DHOLDFAST_PREBUILT_API="$PWD/build"
  cmake --build build-asan -j "$JOBS"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir build-asan --output-on-failure -j "$JOBS" -L unit
fi
echo "all tests passed"
