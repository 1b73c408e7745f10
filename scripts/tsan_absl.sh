#!/usr/bin/env bash
# Builds Debian's abseil (the libabsl20220623 holdfast, protobuf and gRPC
# link against) with ThreadSanitizer, once, into
# $HOLDFAST_CACHE/absl-tsan-VERSION/lib, and prints that directory.
#
# Why: TSan sees only synchronization that is instrumented. Every absl::Mutex
# in holdfast and gRPC's own locks (gpr_mu is an absl::Mutex) live in
# libabsl_synchronization; Debian's copy is not instrumented, so TSan reports
# every guarded access as a race. The TSan build (scripts/test.sh) loads these
# libraries instead through its rpath: same source, patches, options and
# soname, so the ABI is the one everything else was built against.
# About a minute on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/versions.sh
source scripts/env.sh

OUT="$HOLDFAST_CACHE/absl-tsan-$ABSL_DEB_VERSION"
if [[ -f "$OUT/.complete" ]]; then echo "$OUT/lib"; exit 0; fi

installed="$(dpkg-query -W -f='${Version}' libabsl20220623 2>/dev/null || true)"
[[ "$installed" == "$ABSL_DEB_UPSTREAM"-* ]] ||
  { echo "tsan_absl: libabsl20220623 $installed is not $ABSL_DEB_UPSTREAM" >&2; exit 1; }

pool="http://deb.debian.org/debian/pool/main/a/abseil"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fetch() {  # file sha256
  curl -sSf --retry 3 -o "$tmp/$1" "$pool/$1"
  echo "$2  $tmp/$1" | sha256sum -c --quiet -
}
fetch "abseil_$ABSL_DEB_UPSTREAM.orig.tar.gz" "$ABSL_ORIG_SHA256"
fetch "abseil_$ABSL_DEB_VERSION.debian.tar.xz" "$ABSL_DEBIAN_SHA256"
mkdir "$tmp/src"
tar xzf "$tmp/abseil_$ABSL_DEB_UPSTREAM.orig.tar.gz" -C "$tmp/src" --strip-components=1
tar xJf "$tmp/abseil_$ABSL_DEB_VERSION.debian.tar.xz" -C "$tmp"
while read -r patch; do
  [[ -z "$patch" || "$patch" == \#* ]] || patch -d "$tmp/src" -p1 -s < "$tmp/debian/patches/$patch"
done < "$tmp/debian/patches/series"
# Debian's options.h (inline namespace, own types) must be the one built.
cmp -s "$tmp/src/absl/base/options.h" /usr/include/absl/base/options.h ||
  { echo "tsan_absl: patched options.h differs from the installed one" >&2; exit 1; }

CC=clang CXX=clang++ cmake -S "$tmp/src" -B "$tmp/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_STANDARD=17 -DBUILD_SHARED_LIBS=ON -DBUILD_TESTING=OFF \
  -DCMAKE_C_FLAGS=-fsanitize=thread -DCMAKE_CXX_FLAGS=-fsanitize=thread \
  -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread >&2
ninja -C "$tmp/build" >&2
rm -rf "$OUT" && mkdir -p "$OUT/lib"
find "$tmp/build" -name 'libabsl_*.so*' -exec cp -P {} "$OUT/lib/" \;
touch "$OUT/.complete"
echo "$OUT/lib"
