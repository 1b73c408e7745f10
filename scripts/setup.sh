#!/usr/bin/env bash
# Installs everything holdfast needs to build and test on a fresh Debian 12
# machine, then configures a build directory. Safe to re-run: each step skips
# work that is already done.
#
#   scripts/setup.sh [BUILD_DIR] [extra cmake args...]
#
# Environment: HOLDFAST_CACHE (default ~/.cache/holdfast) holds the Go module
# cache and the protoc-gen-validate plugin, keyed by version.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/versions.sh
source scripts/env.sh

BUILD_DIR="${1:-build}"
shift || true
CACHE="$HOLDFAST_CACHE"

APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config git python3 python3-pytest python3-yaml curl
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libre2-dev libyaml-cpp-dev nlohmann-json3-dev libcli11-dev ccache
  libssl-dev libcurl4-openssl-dev libgtest-dev libgmock-dev libbenchmark-dev
  libgoogle-perftools-dev
  clang libclang-rt-14-dev
  nodejs npm golang-go
  iproute2 iptables procps openssl
  chromium fonts-dejavu-core
  etcd-server etcd-client
)

SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
missing=()
for p in "${APT_PACKAGES[@]}"; do
  # golang-go and nodejs may already be installed outside apt.
  case "$p" in
    golang-go) command -v go >/dev/null && continue ;;
    nodejs|npm) command -v node >/dev/null && command -v npm >/dev/null && continue ;;
  esac
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# The integration tests are driven by pytest (python3-pytest above; a python3
# earlier on PATH, such as pyenv's, may bring its own).
python3 -m pytest --version >/dev/null 2>&1 || python3 -m pip install --quiet "pytest>=7"
# PyYAML: the Kubernetes tests (test/kube/) and deploy/gen_crds.py.
python3 -c "import yaml" 2>/dev/null || python3 -m pip install --quiet "pyyaml>=5"


# Envoy API protos and the Node.js xDS client, pinned by package-lock.json.
if [[ ! -f node_modules/.package-lock.json ]] || ! cmp -s package-lock.json node_modules/.holdfast-lock; then
  npm ci --ignore-scripts --no-audit --no-fund
  cp package-lock.json node_modules/.holdfast-lock
fi

# protoc-gen-validate: generates Envoy's own validators (C++) from the
# validation annotations, and provides validate.proto / validate.h.
export GOPATH="$CACHE/go" GOMODCACHE="$CACHE/go/mod" GOFLAGS=-modcacherw
PGV_BIN="$CACHE/bin/pgv-$PGV_VERSION"
if [[ ! -x "$PGV_BIN/protoc-gen-validate" ]]; then
  GOBIN="$PGV_BIN" go install "github.com/envoyproxy/protoc-gen-validate@$PGV_VERSION"
fi
PGV_SRC="$GOMODCACHE/github.com/envoyproxy/protoc-gen-validate@$PGV_VERSION"

# etcd v3 API protos, from Debian's Go sources of the same etcd release as
# etcd-server. Only the .proto files are needed: take them from the package
# without installing it (installing would pull a Go toolchain).
ETCD_API="$CACHE/etcd-api-$ETCD_API_DEB_VERSION"
if [[ ! -f "$ETCD_API/.complete" ]]; then
  tmp="$(mktemp -d)"
  chmod 755 "$tmp"
  (cd "$tmp" && { apt-get download "golang-etcd-server-dev=$ETCD_API_DEB_VERSION" 2>/dev/null ||
                  { $SUDO apt-get update -q && apt-get download "golang-etcd-server-dev=$ETCD_API_DEB_VERSION"; }; })
  dpkg -x "$tmp"/golang-etcd-server-dev_*.deb "$tmp/x"
  rm -rf "$ETCD_API" && mkdir -p "$ETCD_API"
  cp -r "$tmp/x/usr/share/gocode/src/go.etcd.io/etcd" "$ETCD_API/"
  rm -rf "$tmp"
  touch "$ETCD_API/.complete"
fi

# promtool, from Debian's prometheus package: the tests check the /metrics
# format with it. Only the binary is taken; the server is not installed.
PROMTOOL_DIR="$CACHE/promtool"
if [[ ! -x "$PROMTOOL_DIR/promtool" ]]; then
  tmp="$(mktemp -d)"
  chmod 755 "$tmp"
  (cd "$tmp" && { apt-get download prometheus 2>/dev/null ||
                  { $SUDO apt-get update -q && apt-get download prometheus; }; })
  dpkg -x "$tmp"/prometheus_*.deb "$tmp/x"
  mkdir -p "$PROMTOOL_DIR"
  cp "$tmp/x/usr/bin/promtool" "$PROMTOOL_DIR/"
  rm -rf "$tmp"
fi

cmake -S . -B "$BUILD_DIR" -G Ninja \
  -DCMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-RelWithDebInfo}" \
  -DHOLDFAST_PGV_PLUGIN="$PGV_BIN/protoc-gen-validate" \
  -DHOLDFAST_PGV_SOURCE="$PGV_SRC" \
  -DHOLDFAST_ETCD_API_SOURCE="$ETCD_API" \
  "$@" >&2
