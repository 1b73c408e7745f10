#include "src/cli/resource_diff.h"

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "src/cli/json_yaml.h"

namespace holdfast {
namespace {

constexpr char kClusterType[] = "type.googleapis.com/envoy.config.cluster.v3.Cluster";
constexpr char kLds[] = "type.googleapis.com/envoy.config.listener.v3.Listener";

TEST(LineDiffTest, ShowsChangedLinesWithContextAndHunks) {
  std::string before, after;
  for (int i = 0; i < 20; ++i) {
    before += "line " + std::to_string(i) + "\n";
    after += (i == 2 ? "LINE 2" : i == 15 ? "LINE 15" : "line " + std::to_string(i)) + "\n";
  }
  const std::string diff = LineDiff(before, after, 1);
  EXPECT_EQ(diff,
            " line 1\n-line 2\n+LINE 2\n line 3\n@@\n line 14\n-line 15\n+LINE 15\n line 16\n");
  EXPECT_EQ(LineDiff("same\n", "same\n"), "");
}

TEST(ResourceDiffTest, AddedChangedAndRemovedByTypeThenName) {
  ServedResources before = {{{kClusterType, "a"}, {"v1", {{"connect_timeout", "1s"}}}},
                            {{kClusterType, "gone"}, {"v1", {{"x", 1}}}},
                            {{kLds, "l"}, {"v1", {{"name", "l"}}}},
                            {{kClusterType, "secret"}, {"v1", {{"key", "[redacted]"}}}}};
  ServedResources after = {{{kClusterType, "a"}, {"v2", {{"connect_timeout", "3s"}}}},
                           {{kClusterType, "new"}, {"v1", {{"x", 2}}}},
                           {{kLds, "l"}, {"v1", {{"name", "l"}}}},
                           {{kClusterType, "secret"}, {"v2", {{"key", "[redacted]"}}}}};
  std::vector<ResourceChange> changes = DiffResources(before, after);
  ASSERT_EQ(changes.size(), 4u);
  const std::string text = RenderChanges(changes);
  EXPECT_TRUE(absl::StrContains(text, "~ CDS a\n")) << text;
  EXPECT_TRUE(absl::StrContains(text, "-  \"connect_timeout\": \"1s\"\n")) << text;
  EXPECT_TRUE(absl::StrContains(text, "+  \"connect_timeout\": \"3s\"\n")) << text;
  EXPECT_TRUE(absl::StrContains(text, "- CDS gone\n")) << text;
  EXPECT_TRUE(absl::StrContains(text, "+ CDS new\n")) << text;
  EXPECT_TRUE(absl::StrContains(text, "~ CDS secret\n    (only redacted fields differ)")) << text;
  EXPECT_FALSE(absl::StrContains(text, "LDS")) << "an unchanged version is not a change";
  EXPECT_TRUE(absl::StrContains(text, "1 added, 2 changed, 1 removed")) << text;
}

TEST(ResourceDiffTest, ReadsAGroupOfASnapshotPage) {
  nlohmann::json page = {
      {"groups",
       {{"default",
         {{"types",
           {{kClusterType,
             {{"resources",
               {{{"name", "a"}, {"version", "v1"}, {"resource", {{"n", 1}}}}}}}}}}}}}}};
  ServedResources served = ServedResourcesOf(page, "default");
  ASSERT_EQ(served.size(), 1u);
  EXPECT_EQ(served.begin()->second.version, "v1");
  EXPECT_TRUE(ServedResourcesOf(page, "other").empty());
}

TEST(JsonYamlTest, StringsStayStringsAndEscapingIsForQueries) {
  const std::string yaml = JsonToYaml({{"name", "true"}, {"port", 80}, {"list", {1, "2"}}});
  EXPECT_TRUE(absl::StrContains(yaml, "name: \"true\"")) << yaml;
  EXPECT_TRUE(absl::StrContains(yaml, "port: 80")) << yaml;
  EXPECT_EQ(UrlQueryEscape("a b/c&d"), "a%20b%2Fc%26d");
}

}  // namespace
}  // namespace holdfast
