// KubeSharedDocument against a real kube-apiserver, as the least-privileged
// holdfast user of deploy/rbac.yaml (configmaps: create; get and update
// holdfast-system/holdfast-rollout only). Run by test/kube/test_kube_client.py;
// skipped without its kubeconfigs.
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "src/kube/kube_client.h"
#include "src/kube/kube_shared_document.h"
#include "test/common/shared_document_conformance.h"
#include "test/kube_unit/real_kube_client.h"

namespace holdfast::testing {
namespace {

struct RealApi {
  std::unique_ptr<KubeClient> holdfast = ConnectFromEnv("HOLDFAST_TEST_KUBECONFIG_HOLDFAST");
  KubeSharedDocument a{holdfast.get(), "holdfast-system", "holdfast-rollout", "decisions"};
  KubeSharedDocument b{holdfast.get(), "holdfast-system", "holdfast-rollout", "decisions"};
};

SharedDocumentHandles MakeReal() {
  std::unique_ptr<KubeClient> admin = ConnectFromEnv("HOLDFAST_TEST_KUBECONFIG");
  auto api = std::make_shared<RealApi>();
  if (admin == nullptr || api->holdfast == nullptr) return {};
  // Each case starts without the ConfigMap (only an admin may delete it).
  absl::Status deleted =
      admin
          ->Send("DELETE",
                 absl::StrCat(kKubeConfigMaps.Path("holdfast-system"), "/holdfast-rollout"), "")
          .status();
  EXPECT_TRUE(deleted.ok() || absl::IsNotFound(deleted)) << deleted;
  return SharedDocumentHandles{api, &api->a, &api->b};
}

INSTANTIATE_TEST_SUITE_P(KubeReal, SharedDocumentConformance,
                         ::testing::Values(SharedDocumentCase{"RealApiServer", MakeReal}),
                         CaseName);

}  // namespace
}  // namespace holdfast::testing
