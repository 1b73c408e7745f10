// FakeKubeApi's Create and Replace behave as the API server's POST and PUT
// (test/kube_unit/kube_client_test.cc checks the real one the same way).
#include "src/kube/fake_kube_api.h"

#include "gtest/gtest.h"

namespace holdfast {
namespace {

const KubeResource kConfigMaps{"", "v1", "configmaps", "ConfigMap"};

nlohmann::json ConfigMap(const std::string& value) {
  return {{"metadata", {{"name", "c"}}}, {"data", {{"k", value}}}};
}

TEST(FakeKubeApiTest, CreateRefusesATakenName) {
  FakeKubeApi api;
  absl::StatusOr<nlohmann::json> created = api.Create(kConfigMaps, "ns", ConfigMap("1"));
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ((*created)["metadata"]["namespace"], "ns");
  EXPECT_EQ((*created)["kind"], "ConfigMap");
  EXPECT_FALSE((*created)["metadata"].value("resourceVersion", "").empty());
  EXPECT_TRUE(absl::IsAlreadyExists(api.Create(kConfigMaps, "ns", ConfigMap("2")).status()));
  EXPECT_TRUE(api.Create(kConfigMaps, "other", ConfigMap("2")).ok());
  EXPECT_EQ(api.Get(kConfigMaps, "ns", "c")->at("data")["k"], "1");
}

TEST(FakeKubeApiTest, ReplaceIsConditionedOnTheVersion) {
  FakeKubeApi api;
  nlohmann::json created = *api.Create(kConfigMaps, "ns", ConfigMap("1"));
  nlohmann::json next = created;
  next["data"]["k"] = "2";
  absl::StatusOr<nlohmann::json> replaced = api.Replace(kConfigMaps, next);
  ASSERT_TRUE(replaced.ok()) << replaced.status();
  EXPECT_NE((*replaced)["metadata"]["resourceVersion"], created["metadata"]["resourceVersion"]);
  EXPECT_EQ(api.Get(kConfigMaps, "ns", "c")->at("data")["k"], "2");

  absl::Status stale = api.Replace(kConfigMaps, next).status();  // carries the old version
  EXPECT_TRUE(absl::IsAborted(stale)) << stale;
  // Unchanged content keeps the version, as on the API server.
  absl::StatusOr<nlohmann::json> same = api.Replace(kConfigMaps, *replaced);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ((*same)["metadata"]["resourceVersion"], (*replaced)["metadata"]["resourceVersion"]);

  nlohmann::json unconditional = next;
  unconditional["metadata"].erase("resourceVersion");
  EXPECT_TRUE(absl::IsInvalidArgument(api.Replace(kConfigMaps, unconditional).status()));
  nlohmann::json missing = *replaced;
  missing["metadata"]["name"] = "nope";
  EXPECT_TRUE(absl::IsNotFound(api.Replace(kConfigMaps, missing).status()));
}

}  // namespace
}  // namespace holdfast
