#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/common/clock.h"
#include "src/kube/kube_client.h"

namespace CLI {
class App;
}

namespace holdfast {

// How to reach the Kubernetes API server, and what to watch there.
struct KubeFlags {
  std::string kubeconfig;   // a kubeconfig file, or
  bool in_cluster = false;  // the pod's service account
  std::string context;      // with --kubeconfig: this context instead of the current one
  std::vector<std::string> watch_namespaces;  // empty: all namespaces
  bool allow_insecure = false;                // accept insecure-skip-tls-verify in the kubeconfig

  bool enabled() const { return !kubeconfig.empty() || in_cluster; }
};

// Adds --kubeconfig, --in-cluster, --kube-context, --watch-namespace and
// --kube-allow-insecure to `command`.
void AddKubeFlags(CLI::App* command, KubeFlags* flags);

// The configuration `flags` name: a kubeconfig's context, or the pod's.
absl::StatusOr<KubeConfig> KubeConfigFromFlags(const KubeFlags& flags);

// A client for `flags` (its configuration read and checked now).
absl::StatusOr<std::unique_ptr<KubeClient>> ConnectKube(const KubeFlags& flags, const Clock& clock);

}  // namespace holdfast
