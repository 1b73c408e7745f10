// KubeSharedDocument on the in-memory API server (the real one:
// kube_shared_document_real_test.cc).
#include "src/kube/kube_shared_document.h"

#include "gtest/gtest.h"
#include "src/kube/fake_kube_api.h"
#include "test/common/shared_document_conformance.h"

namespace holdfast::testing {
namespace {

struct FakeApi {
  FakeKubeApi api;
  KubeSharedDocument a{&api, "holdfast-system", "holdfast-rollout", "decisions"};
  KubeSharedDocument b{&api, "holdfast-system", "holdfast-rollout", "decisions"};
};

INSTANTIATE_TEST_SUITE_P(Kube, SharedDocumentConformance,
                         ::testing::Values(SharedDocumentCase{
                             "FakeApi",
                             [] {
                               auto s = std::make_shared<FakeApi>();
                               return SharedDocumentHandles{s, &s->a, &s->b};
                             }}),
                         CaseName);

TEST(KubeSharedDocument, KeepsWhatOthersPutOnTheConfigMap) {
  FakeKubeApi api;
  api.Put(kKubeConfigMaps, {{"apiVersion", "v1"},
                            {"kind", "ConfigMap"},
                            {"metadata",
                             {{"name", "holdfast-rollout"},
                              {"namespace", "holdfast-system"},
                              {"labels", {{"team", "edge"}}}}},
                            {"data", {{"note", "kept"}}}});
  KubeSharedDocument doc(&api, "holdfast-system", "holdfast-rollout", "decisions");
  absl::StatusOr<DocumentVersion> read = doc.Read();
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->text, "");
  EXPECT_FALSE(read->revision.empty());  // the ConfigMap exists without the key
  ASSERT_TRUE(doc.Replace("{}", read->revision).ok());
  absl::StatusOr<nlohmann::json> stored =
      api.Get(kKubeConfigMaps, "holdfast-system", "holdfast-rollout");
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ((*stored)["metadata"]["labels"]["team"], "edge");
  EXPECT_EQ((*stored)["data"]["note"], "kept");
  EXPECT_EQ((*stored)["data"]["decisions"], "{}");
}

TEST(KubeSharedDocument, ARefusalIsPassedOn) {
  FakeKubeApi api;
  KubeSharedDocument doc(&api, "holdfast-system", "holdfast-rollout", "decisions");
  api.FailNext(FakeKubeApi::Call::kGet, absl::PermissionDeniedError("configmaps is forbidden"));
  EXPECT_TRUE(absl::IsPermissionDenied(doc.Read().status()));
}

}  // namespace
}  // namespace holdfast::testing
