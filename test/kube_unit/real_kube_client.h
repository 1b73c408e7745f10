// Clients of the real kube-apiserver that test/kube/test_kube_client.py starts
// for kube_client_test: each kubeconfig is named by an environment variable.
#pragma once

#include <cstdlib>
#include <memory>

#include "gtest/gtest.h"
#include "src/kube/kube_client.h"

namespace holdfast::testing {

// A client with the kubeconfig the variable `env` names; nullptr when the
// driver did not set it (the test then skips itself). A kubeconfig that is
// set but unusable fails the test.
inline std::unique_ptr<KubeClient> ConnectFromEnv(const char* env,
                                                  KubeClient::Options options = {}) {
  const char* path = std::getenv(env);
  if (path == nullptr || *path == '\0') return nullptr;
  absl::StatusOr<KubeConfig> config = LoadKubeconfig({.path = path});
  EXPECT_TRUE(config.ok()) << config.status();
  if (!config.ok()) return nullptr;
  absl::StatusOr<std::unique_ptr<KubeClient>> client =
      KubeClient::Create(*config, options, Clock::Real());
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? std::move(*client) : nullptr;
}

}  // namespace holdfast::testing
