#!/usr/bin/env bash
# Sets up a fresh machine, builds holdfast and serves the example
# configuration on its embedded default source (a directory, no external
# services): xDS on 127.0.0.1:18000, admin on http://127.0.0.1:19000.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
scripts/setup.sh build
cmake --build build --target holdfast
exec build/src/app/holdfast serve --config-dir examples/gateway "$@"
