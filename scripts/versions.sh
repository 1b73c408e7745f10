# Pinned versions of tools fetched outside Debian and npm (npm: package-lock.json).
PGV_VERSION=v1.2.1
# etcd v3 API protos: Debian's golang-etcd-server-dev, same release as etcd-server.
ETCD_API_DEB_VERSION=3.4.23-4
# The real Kubernetes API server of the kube tests (scripts/kube.sh builds it
# from the Go module proxy): k8s.io/kubernetes at KUBE_VERSION with its staging
# modules (k8s.io/api, k8s.io/apiserver, ...) at KUBE_STAGING_VERSION.
KUBE_VERSION=v1.37.2
KUBE_STAGING_VERSION=v0.37.2
# etcd behind that API server (Debian's 3.4 answers 500 to the watches of
# a 1.37 API server with allowWatchBookmarks / sendInitialEvents).
ETCD36_VERSION=v3.6.16
# Gateway API CRDs, standard channel (sigs.k8s.io/gateway-api, config/crd/standard).
GATEWAY_API_VERSION=v1.6.3
# abseil built with ThreadSanitizer for the TSan stage (scripts/tsan_absl.sh):
# Debian's own source of the libabsl20220623 installed, so the instrumented
# libraries replace it under the same ABI and soname.
ABSL_DEB_UPSTREAM=20220623.1
ABSL_DEB_VERSION=20220623.1-1+deb12u2
ABSL_ORIG_SHA256=abfe2897f3a30edaa74bc34365afe3c2a3cd012091a97dc7e008f7016adcd5fe
ABSL_DEBIAN_SHA256=e08490fc7b6f3beca1925953b0c4fb92df2de5e2a01295e4641e2a3d4e528eeb
