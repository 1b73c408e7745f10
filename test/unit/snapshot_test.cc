#include "src/snapshot/snapshot.h"

#include "gtest/gtest.h"
#include "src/snapshot/snapshot_cache.h"
#include "test/unit/test_resources.h"

namespace holdfast {
namespace {

using testing::ApiListener;
using testing::Chain;
using testing::EdsCluster;
using testing::Endpoints;
using testing::RouteConfig;

TEST(ResourceTest, VersionIsContentDigest) {
  EXPECT_EQ(EdsCluster("a")->version(), EdsCluster("a")->version());
  EXPECT_NE(EdsCluster("a", 1)->version(), EdsCluster("a", 2)->version());
  EXPECT_NE(EdsCluster("a")->version(), EdsCluster("b")->version());
}

TEST(SnapshotTest, SameContentSameVersion) {
  EXPECT_EQ(Chain("1", 80)->version(), Chain("1", 80)->version());
  EXPECT_NE(Chain("1", 80)->version(), Chain("1", 81)->version());
}

TEST(SnapshotTest, TypeVersionChangesOnlyWithItsType) {
  auto a = Chain("1", 80);
  auto b = Chain("1", 81);  // only endpoints differ
  EXPECT_EQ(a->TypeVersion(type_url::kCluster), b->TypeVersion(type_url::kCluster));
  EXPECT_EQ(a->TypeVersion(type_url::kListener), b->TypeVersion(type_url::kListener));
  EXPECT_NE(a->TypeVersion(type_url::kClusterLoadAssignment),
            b->TypeVersion(type_url::kClusterLoadAssignment));
}

struct ConsistencyCase {
  std::string label;
  std::vector<ResourcePtr> resources;
  std::string error;  // empty: consistent
};

TEST(SnapshotTest, Consistency) {
  std::vector<ConsistencyCase> cases = {
      {"complete", {ApiListener("l", "r"), RouteConfig("r", "c"), EdsCluster("c"), Endpoints("c", 1)}, ""},
      {"missing route config", {ApiListener("l", "r")},
       "Listener \"l\" field api_listener.api_listener.rds.route_config_name names envoy.config.route.v3.RouteConfiguration \"r\""},
      {"missing load assignment", {EdsCluster("c")},
       "Cluster \"c\" field name names envoy.config.endpoint.v3.ClusterLoadAssignment \"c\""},
      {"duplicate", {EdsCluster("c"), EdsCluster("c", 2), Endpoints("c", 1)},
       "two resources of type envoy.config.cluster.v3.Cluster are named \"c\""},
  };
  for (const ConsistencyCase& c : cases) {
    auto snapshot = Snapshot::Build(c.resources, absl::UnixEpoch());
    if (c.error.empty()) {
      EXPECT_TRUE(snapshot.ok()) << c.label << ": " << snapshot.status();
    } else {
      ASSERT_FALSE(snapshot.ok()) << c.label;
      EXPECT_NE(snapshot.status().message().find(c.error), std::string::npos)
          << c.label << ": " << snapshot.status();
    }
  }
}

TEST(SnapshotCacheTest, GroupsFallBackToDefault) {
  SnapshotCache cache("default");
  EXPECT_EQ(cache.Current("g").snapshot, nullptr);
  auto d = Chain("d", 1);
  cache.Set("default", d);
  EXPECT_EQ(cache.Current("g").snapshot, d);
  auto g = Chain("g", 2);
  cache.Set("g", g);
  EXPECT_EQ(cache.Current("g").snapshot, g);
  EXPECT_EQ(cache.Current("other").snapshot, d);
}

TEST(SnapshotCacheTest, WatchersSeeTheirGroupInOrder) {
  SnapshotCache cache("default");
  std::vector<uint64_t> seen_g, seen_h;
  auto wg = cache.Watch("g", [&](const Published& p) { seen_g.push_back(p.sequence); });
  auto wh = cache.Watch("h", [&](const Published& p) { seen_h.push_back(p.sequence); });
  cache.Set("default", Chain("1", 1));  // both follow the default
  cache.Set("g", Chain("2", 1));        // g has its own now
  cache.Set("default", Chain("3", 1));  // only h follows
  EXPECT_EQ(seen_g, (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(seen_h, (std::vector<uint64_t>{1, 3}));
  wg.reset();
  cache.Set("g", Chain("4", 1));
  EXPECT_EQ(seen_g.size(), 2u);  // unwatched
}

}  // namespace
}  // namespace holdfast
