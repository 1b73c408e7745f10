#!/usr/bin/env bash
# Configures and builds what scripts/test.sh runs the unit tests in under the
# sanitizers, after the release build (its Envoy API library is reused):
#   build-tsan  clang, ThreadSanitizer, -Wthread-safety as an error
#   build-asan  AddressSanitizer + UndefinedBehaviorSanitizer, every target
# test.sh runs this in the background at the lowest CPU priority while the
# integration tests run (docs/ci.md says why and what it saves).
# Usage: scripts/build_sanitized.sh   (HOLDFAST_SKIP_SANITIZE=1: build-tsan only)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
JOBS="${JOBS:-$(nproc)}"

# Clang checks the ABSL_GUARDED_BY annotations that GCC ignores (every file
# compiles with -Wthread-safety as an error), and ThreadSanitizer checks what
# the annotations cannot, with abseil's and gRPC's locks instrumented
# (scripts/tsan_absl.sh, cached). -O1: the least ThreadSanitizer's
# documentation asks for, and a fifth less compile time than -O2.
tsan_start=$SECONDS
CC=clang CXX=clang++ scripts/setup.sh build-tsan -DHOLDFAST_PREBUILT_API="$PWD/build" \
  -DHOLDFAST_TSAN_ABSL_LIB="$(scripts/tsan_absl.sh)" \
  "-DCMAKE_CXX_FLAGS=-Wthread-safety -Werror=thread-safety" \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
# Only what the analysis and the TSan run need: the app, the unit test
# binaries and the one benchmark with its own locks; fuzz drivers and the
# other benchmarks have none of their own.
tsan_targets=$(ctest --test-dir build-tsan -N -L unit -LE fuzz | awk '/Test +#/ {print $3}')
# shellcheck disable=SC2086 # one target per word
cmake --build build-tsan -j "$JOBS" --target holdfast xds_floor $tsan_targets
echo "build_sanitized: ThreadSanitizer build took $((SECONDS - tsan_start))s"

if [[ "${HOLDFAST_SKIP_SANITIZE:-0}" != 1 ]]; then
  asan_start=$SECONDS
  scripts/setup.sh build-asan -DHOLDFAST_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug \
    -DHOLDFAST_PREBUILT_API="$PWD/build"
  # Every target, benchmarks included, so none rots unbuilt.
  cmake --build build-asan -j "$JOBS"
  echo "build_sanitized: AddressSanitizer build took $((SECONDS - asan_start))s"
fi
