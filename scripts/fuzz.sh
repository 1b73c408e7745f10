#!/usr/bin/env bash
# Runs the fuzz targets under libFuzzer (clang) for a while each, starting
# from the committed corpora. Usage: scripts/fuzz.sh [SECONDS_PER_TARGET]
# New crashing inputs land in build-fuzz/; add them to the corpus once fixed.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
SECONDS_PER_TARGET="${1:-60}"
[[ -f build/libenvoy_api.a ]] || { echo "build the main tree first (scripts/test.sh)"; exit 1; }
scripts/setup.sh build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DHOLDFAST_PREBUILT_API="$PWD/build" -DHOLDFAST_FUZZ=ON
# The targets are the ones test/CMakeLists.txt lists (HOLDFAST_FUZZ_TARGETS).
TARGETS=($(sed -n '/^set(HOLDFAST_FUZZ_TARGETS/,/)/p' test/CMakeLists.txt |
  sed 's/set(HOLDFAST_FUZZ_TARGETS//; s/)//'))
cmake --build build-fuzz --target "${TARGETS[@]/%/_fuzz}"
for target in "${TARGETS[@]}"; do
  mkdir -p "build-fuzz/corpus-$target"
  build-fuzz/test/${target}_fuzz -max_total_time="$SECONDS_PER_TARGET" -rss_limit_mb=4096 -timeout=20 \
    -artifact_prefix="build-fuzz/" "build-fuzz/corpus-$target" "test/fuzz/corpus/$target"
done
