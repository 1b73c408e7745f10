#!/usr/bin/env bash
# Builds, or restores from the cache, what the Kubernetes tests (test/kube/)
# run against: a real kube-apiserver, etcd 3.6 behind it, and the Gateway API
# CRDs. Everything comes from the Go module proxy at the versions pinned in
# scripts/versions.sh and lands under $HOLDFAST_CACHE/kube (default
# ~/.cache/holdfast/kube), keyed by version:
#
#   kube/kube-apiserver-$KUBE_VERSION/kube-apiserver          (~7-9 min cold, 2 cores)
#   kube/etcd-$ETCD36_VERSION/etcd                             (~1 min cold)
#   kube/gateway-api-$GATEWAY_API_VERSION/standard/*.yaml      (seconds)
#
# A second run does nothing. Usage:
#   scripts/kube.sh              build what is missing, then print the paths
#   scripts/kube.sh --print-env  only print the paths (export lines for eval),
#                                building nothing; test/kube/ uses this
# Environment: HOLDFAST_CACHE; JOBS (go build -p, default: Go's own, one per core).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/versions.sh
source scripts/env.sh

KUBE_DIR="$HOLDFAST_CACHE/kube"
APISERVER="$KUBE_DIR/kube-apiserver-$KUBE_VERSION/kube-apiserver"
ETCD36="$KUBE_DIR/etcd-$ETCD36_VERSION/etcd"
GATEWAY_CRDS="$KUBE_DIR/gateway-api-$GATEWAY_API_VERSION/standard"

print_env() {
  echo "export HOLDFAST_KUBE_APISERVER='$APISERVER'"
  echo "export HOLDFAST_ETCD36='$ETCD36'"
  echo "export HOLDFAST_GATEWAY_API_CRDS='$GATEWAY_CRDS'"
  echo "export HOLDFAST_KUBE_VERSION='$KUBE_VERSION'"
}
if [[ "${1:-}" == "--print-env" ]]; then print_env; exit 0; fi

command -v go >/dev/null || { echo "kube.sh: go is not on PATH (Go >= 1.26 is needed)" >&2; exit 1; }
# The module cache is setup.sh's; the build cache is the Go client's (hf_goclient.py).
export GOPATH="$HOLDFAST_CACHE/go" GOMODCACHE="$HOLDFAST_CACHE/go/mod"
export GOCACHE="$HOLDFAST_CACHE/go/build" GOFLAGS="-modcacherw -buildvcs=false"
# Never fetch another toolchain, never consult a workspace: the machine's Go
# builds these or the build fails plainly.
export GOTOOLCHAIN=local GOWORK=off CGO_ENABLED=0
PARALLEL=()
[[ -n "${JOBS:-}" ]] && PARALLEL=(-p "$JOBS")

log() { echo "kube.sh: $*" >&2; }
elapsed() { local s=$(( $(date +%s) - $1 )); printf '%dm%02ds' $((s / 60)) $((s % 60)); }

# Dir of a module version in the module cache (downloading it if needed).
module_dir() {
  go mod download -json "$1" | python3 -c 'import json, sys; d = json.load(sys.stdin); print(d.get("Dir") or sys.exit(d.get("Error", "no Dir")))'
}
module_gomod() {
  go mod download -json "$1" | python3 -c 'import json, sys; d = json.load(sys.stdin); print(d.get("GoMod") or sys.exit(d.get("Error", "no GoMod")))'
}

# go build of PACKAGE inside a throwaway main module at $work (go.mod
# already written), to OUT, atomically.
build_in() {
  local work="$1" package="$2" out="$3" ldflags="$4"
  mkdir -p "$(dirname "$out")"
  # -mod=mod: resolve the rest of the build list and write go.sum from the
  # checksum database, as `go get` would.
  (cd "$work" && go build -mod=mod -trimpath "${PARALLEL[@]}" -ldflags "$ldflags" \
       -o "$out.tmp" "$package")
  mv -f "$out.tmp" "$out"
}

# --- etcd 3.6 ------------------------------------------------------------------
# Its main package is the module go.etcd.io/etcd/server/v3 itself
# (server/main.go); the release's replace lines for its sibling modules
# (api, client, pkg) are its own and do not apply to a module that requires
# it, so the requirements of server/v3's go.mod pick them at the same version.
if [[ ! -x "$ETCD36" ]]; then
  start=$(date +%s)
  log "building etcd $ETCD36_VERSION (about a minute) ..."
  work="$(mktemp -d "${TMPDIR:-/tmp}/holdfast-etcd-build.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
  cat > "$work/go.mod" <<MOD
module holdfast.dev/etcd-build

go 1.26

require go.etcd.io/etcd/server/v3 $ETCD36_VERSION
MOD
  build_in "$work" go.etcd.io/etcd/server/v3 "$ETCD36" "-s -w"
  rm -rf "$work"; trap - EXIT
  "$ETCD36" --version | sed 's/^/kube.sh:   /' >&2
  log "etcd $ETCD36_VERSION built in $(elapsed "$start")"
else
  log "etcd $ETCD36_VERSION: cached"
fi

# --- Gateway API CRDs ------------------------------------------------------------
if [[ ! -f "$GATEWAY_CRDS/.complete" ]]; then
  src="$(module_dir "sigs.k8s.io/gateway-api@$GATEWAY_API_VERSION")/config/crd/standard"
  [[ -d "$src" ]] || { log "$src: no such directory"; exit 1; }
  rm -rf "$GATEWAY_CRDS" && mkdir -p "$GATEWAY_CRDS"
  cp "$src"/*.yaml "$GATEWAY_CRDS/"
  chmod -R u+w "$GATEWAY_CRDS"
  touch "$GATEWAY_CRDS/.complete"
  log "Gateway API $GATEWAY_API_VERSION standard CRDs: $(ls "$GATEWAY_CRDS" | wc -l) files"
fi

# --- kube-apiserver ---------------------------------------------------------------
# k8s.io/kubernetes points each of its staging modules (k8s.io/api, ...) at
# ./staging/src/... with replace lines of its own, which a requiring module
# does not see; the published copies are the same code at v0.MINOR.PATCH. The
# replace lines here are generated from the release's go.mod: every staging
# module it requires (the sample modules it does not require are not
# published and are left out).
if [[ ! -x "$APISERVER" ]]; then
  start=$(date +%s)
  log "building kube-apiserver $KUBE_VERSION (about 7-9 minutes and 2.5 GB of memory on 2 cores) ..."
  gomod="$(module_gomod "k8s.io/kubernetes@$KUBE_VERSION")"
  mapfile -t staging < <(python3 - "$gomod" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
def block(word):
    out = []
    for m in re.finditer(r'^%s\s*\((.*?)^\)' % word, text, re.S | re.M):
        out += m.group(1).splitlines()
    out += [l[len(word):] for l in text.splitlines() if l.startswith(word + " ") and "(" not in l]
    return [l.split("//")[0].strip() for l in out if l.split("//")[0].strip()]
required = {l.split()[0] for l in block("require")}
for l in block("replace"):
    left, _, right = l.partition("=>")
    if right.strip().startswith("./staging/") and left.split()[0] in required:
        print(left.split()[0])
PY
)
  ((${#staging[@]} > 20)) || { log "found only ${#staging[@]} staging modules in $gomod"; exit 1; }
  go_line="$(grep -m1 '^go ' "$gomod")"
  work="$KUBE_DIR/build-kube-apiserver-$KUBE_VERSION"
  rm -rf "$work" && mkdir -p "$work"
  {
    echo "module holdfast.dev/kube-apiserver-build"
    echo
    echo "$go_line"
    echo
    echo "require k8s.io/kubernetes $KUBE_VERSION"
    echo
    echo "replace ("
    for m in "${staging[@]}"; do echo "	$m => $m $KUBE_STAGING_VERSION"; done
    echo ")"
  } > "$work/go.mod"
  log "go.mod with ${#staging[@]} staging replace lines: $work/go.mod"
  major="${KUBE_VERSION#v}"; major="${major%%.*}"
  minor="${KUBE_VERSION#v*.}"; minor="${minor%%.*}"
  ldflags="-s -w"
  # Both places the release build sets (hack/lib/version.sh): clients parse
  # the version the server reports from component-base.
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
    ldflags+=" -X $pkg.gitTreeState=clean"
  done
  build_in "$work" k8s.io/kubernetes/cmd/kube-apiserver "$APISERVER" "$ldflags"
  "$APISERVER" --version | sed 's/^/kube.sh:   /' >&2
  log "kube-apiserver $KUBE_VERSION built in $(elapsed "$start")"
else
  log "kube-apiserver $KUBE_VERSION: cached"
fi

print_env
