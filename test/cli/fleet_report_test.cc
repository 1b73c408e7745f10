#include "src/cli/fleet_report.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace holdfast {
namespace {

constexpr char kCds[] = "type.googleapis.com/envoy.config.cluster.v3.Cluster";

nlohmann::json Proxy(const std::string& node, const std::string& state) {
  nlohmann::json types = {{kCds, {{"acked_version", "v1"}, {"nack", nullptr}}}};
  if (state == "nacking") {
    types[kCds]["nack"] = {{"version", "v2"}, {"error", "lb_policy unsupported"}};
  }
  return {{"node_id", node}, {"state", state}, {"group", "default"}, {"types", types}};
}

AdminPages Healthy() {
  AdminPages pages;
  pages.admin_url = "http://127.0.0.1:19000";
  pages.ready = true;
  pages.readiness = "ready: serving snapshot abc";
  pages.store = {{"connected", true}, {"serving", "live"}, {"access_error", ""}};
  pages.proxies = {{"proxies", {Proxy("a", "synced"), Proxy("b", "pending")}}};
  pages.status = {{"objects", {{{"kind", "Upstream"}, {"status", "Accepted"}}}}};
  return pages;
}

TEST(FleetReportTest, AHealthyReplicaNeedsNothing) {
  nlohmann::json summary = SummarizeReplica(Healthy());
  EXPECT_TRUE(summary["attention"].empty()) << summary.dump();
  EXPECT_EQ(summary["proxies"]["pending"], 1);
  const std::string text = RenderSummary(summary);
  EXPECT_TRUE(absl::StrContains(text, "proxies    2: 1 synced, 1 pending, 0 nacking")) << text;
  EXPECT_TRUE(absl::StrContains(text, "no election")) << text;
  EXPECT_TRUE(absl::StrContains(text, "nothing needs attention")) << text;
}

TEST(FleetReportTest, EachKindOfTroubleIsNamedAndLongListsAreCut) {
  AdminPages pages = Healthy();
  pages.ready = false;
  pages.readiness = "not ready: nothing served yet";
  pages.store = {{"connected", false},
                 {"unreachable_seconds", 12.4},
                 {"last_error", "connection refused"},
                 {"serving", "persisted"},
                 {"access_error", ""}};
  for (int i = 0; i < 25; ++i)
    pages.proxies["proxies"].push_back(Proxy(absl::StrCat("n", i), "nacking"));
  pages.status["objects"].push_back({{"kind", "VirtualService"},
                                     {"namespace", "shop"},
                                     {"name", "web"},
                                     {"status", "Rejected"},
                                     {"location", "shop.yaml:3"},
                                     {"reasons",
                                      {{{"field", "spec.routes[0].match.regex"},
                                        {"message", "invalid regex"},
                                        {"location", "shop.yaml:9"}}}}});
  pages.leader = {{"replica", "b"}, {"is_leader", false}, {"leader", "a"}, {"term", 7}};
  nlohmann::json summary = SummarizeReplica(pages);
  const std::string text = RenderSummary(summary);
  EXPECT_TRUE(absl::StrContains(text, "  not ready: nothing served yet")) << text;
  EXPECT_TRUE(absl::StrContains(text, "store unreachable for 12s: connection refused")) << text;
  EXPECT_TRUE(absl::StrContains(text, "serving the persisted last-known-good snapshot")) << text;
  EXPECT_TRUE(absl::StrContains(text, "proxy n0 NACKs CDS version v2: lb_policy unsupported"))
      << text;
  EXPECT_TRUE(absl::StrContains(text, "... and 5 more NACKing proxies")) << text;
  EXPECT_TRUE(absl::StrContains(text,
                                "Rejected VirtualService shop/web (shop.yaml:3); "
                                "spec.routes[0].match.regex (shop.yaml:9): invalid regex"))
      << text;
  EXPECT_TRUE(absl::StrContains(text, "a leads, term 7; this is b, a follower")) << text;
  EXPECT_EQ(summary["attention"].size(), 1 + 2 + kMaxAttention + 1 + 1) << summary["attention"];
}

TEST(FleetReportTest, ProxiesAreFilteredAndTroubleComesFirst) {
  nlohmann::json page = {{"proxies",
                          {Proxy("c", "synced"), Proxy("b", "pending"), Proxy("z", "nacking"),
                           Proxy("a", "nacking")}}};
  std::vector<std::string> order;
  for (const auto& p : SelectProxies(page, {})) order.push_back(p["node_id"]);
  EXPECT_EQ(order, (std::vector<std::string>{"a", "z", "b", "c"}));
  EXPECT_EQ(SelectProxies(page, {.nacking = true}).size(), 2u);
  EXPECT_EQ(SelectProxies(page, {.stale = true}).size(), 3u);
  EXPECT_EQ(SelectProxies(page, {.node = "b"}).size(), 1u);
  const std::string table = RenderProxyTable(SelectProxies(page, {.nacking = true}));
  EXPECT_TRUE(absl::StrContains(table, "CDS=v1")) << table;
  EXPECT_TRUE(absl::StrContains(RenderProxyDetail(SelectProxies(page, {.node = "z"})),
                                "NACKed v2 at : lb_policy unsupported"));
  EXPECT_EQ(ShortTypeName(kCds), "CDS");
  EXPECT_EQ(ShortTypeName("type.googleapis.com/a.b.Other"), "a.b.Other");
}

}  // namespace
}  // namespace holdfast
