#!/usr/bin/env bash
# Runs the fuzz targets under libFuzzer (clang), starting from the committed
# corpora: for a while each, or for a number of executions each (the
# recorded campaign, docs/security.md "Fuzzing").
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET]   (default 60)
#        scripts/fuzz.sh --runs N [TARGET...]   (N executions per target)
# New crashing inputs land in build-fuzz/; add them to the corpus once fixed.
# Each target's libFuzzer output is kept in build-fuzz/log-TARGET.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
LIMIT=(-max_total_time="${1:-60}")
ONLY=()
if [[ "${1:-}" == "--runs" ]]; then
  LIMIT=(-runs="$2")
  ONLY=("${@:3}")
fi
[[ -f build/libenvoy_api.a ]] || { echo "build the main tree first (scripts/test.sh)"; exit 1; }
scripts/setup.sh build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DHOLDFAST_PREBUILT_API="$PWD/build" -DHOLDFAST_FUZZ=ON
# The targets are the ones test/CMakeLists.txt lists (HOLDFAST_FUZZ_TARGETS).
TARGETS=($(sed -n '/^set(HOLDFAST_FUZZ_TARGETS/,/)/p' test/CMakeLists.txt |
  sed 's/set(HOLDFAST_FUZZ_TARGETS//; s/)//'))
[[ ${#ONLY[@]} -gt 0 ]] && TARGETS=("${ONLY[@]}")
cmake --build build-fuzz --target "${TARGETS[@]/%/_fuzz}"
for target in "${TARGETS[@]}"; do
  mkdir -p "build-fuzz/corpus-$target"
  build-fuzz/test/${target}_fuzz "${LIMIT[@]}" -rss_limit_mb=4096 -timeout=20 -print_final_stats=1 \
    -artifact_prefix="build-fuzz/" "build-fuzz/corpus-$target" "test/fuzz/corpus/$target" \
    2>&1 | tee "build-fuzz/log-$target.txt" | grep -E "^(Done|stat::|==[0-9]+==|SUMMARY)" || true
  grep -q "^Done" "build-fuzz/log-$target.txt" || { echo "$target: no clean end"; exit 1; }
done
