#include "src/app/kube_flags.h"

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"

namespace holdfast {

void AddKubeFlags(CLI::App* command, KubeFlags* flags) {
  CLI::Option* kubeconfig = command->add_option(
      "--kubeconfig", flags->kubeconfig,
      "Read gateway objects (holdfast.dev/v1 custom resources) from the Kubernetes API server "
      "of this kubeconfig");
  CLI::Option* in_cluster = command->add_flag(
      "--in-cluster", flags->in_cluster,
      "Read gateway objects from the Kubernetes API server of this pod (its service account)");
  kubeconfig->excludes(in_cluster);
  command
      ->add_option("--kube-context", flags->context,
                   "With --kubeconfig: use this context instead of the current one")
      ->needs(kubeconfig);
  command->add_option("--watch-namespace", flags->watch_namespaces,
                      "Watch only this namespace (repeat for several; default: all)");
  command->add_flag("--kube-allow-insecure", flags->allow_insecure,
                    "Accept insecure-skip-tls-verify in the kubeconfig (not for production)");
}

absl::StatusOr<KubeConfig> KubeConfigFromFlags(const KubeFlags& flags) {
  return flags.in_cluster ? LoadInCluster(InClusterOptions::FromEnvironment())
                          : LoadKubeconfig({.path = flags.kubeconfig,
                                            .context = flags.context,
                                            .allow_insecure = flags.allow_insecure});
}

absl::StatusOr<std::unique_ptr<KubeClient>> ConnectKube(const KubeFlags& flags,
                                                        const Clock& clock) {
  absl::StatusOr<KubeConfig> config = KubeConfigFromFlags(flags);
  if (!config.ok()) return config.status();
  return KubeClient::Create(*config, KubeClient::Options{}, clock);
}

}  // namespace holdfast
