#include "src/snapshot/snapshot.h"

#include "absl/strings/str_cat.h"
#include "envoy/service/discovery/v3/discovery.pb.h"
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

// The wire forms are assembled by hand: they must read back as the messages
// protobuf would write, at every length of varint.
TEST(ResourceTest, WireFormsAreTheResponsesEntries) {
  for (size_t size : {0, 5, 200, 20'000, 3'000'000}) {
    SCOPED_TRACE(size);
    const std::string type = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration";
    const std::string bytes(size, 'x');
    ResourcePtr resource = Resource::FromBytes("gateway/shop/public", type, bytes);
    EXPECT_EQ(resource->version(),
              ContentDigest(absl::StrCat(type, "\n", "gateway/shop/public", "\n", bytes)));

    std::string sotw_wire, delta_wire;
    resource->AppendWire(/*delta=*/false, &sotw_wire);
    resource->AppendWire(/*delta=*/true, &delta_wire);
    EXPECT_EQ(sotw_wire.size(), resource->WireSize(false));
    EXPECT_EQ(delta_wire.size(), resource->WireSize(true));

    envoy::service::discovery::v3::DiscoveryResponse sotw;
    ASSERT_TRUE(sotw.ParseFromString(sotw_wire));
    ASSERT_EQ(sotw.resources_size(), 1);
    EXPECT_EQ(sotw.resources(0).type_url(), type);
    EXPECT_EQ(sotw.resources(0).value(), bytes);

    envoy::service::discovery::v3::DeltaDiscoveryResponse delta;
    ASSERT_TRUE(delta.ParseFromString(delta_wire));
    ASSERT_EQ(delta.resources_size(), 1);
    EXPECT_EQ(delta.resources(0).name(), "gateway/shop/public");
    EXPECT_EQ(delta.resources(0).version(), resource->version());
    EXPECT_EQ(delta.resources(0).resource().type_url(), type);
    EXPECT_EQ(delta.resources(0).resource().value(), bytes);
    // Nothing else: the lengths written match what follows them. (An empty
    // value is written as an explicit empty field, two bytes a serializer
    // would leave out.)
    std::string again;
    ASSERT_TRUE(delta.SerializeToString(&again));
    EXPECT_EQ(again.size() + (size == 0 ? 2 : 0), delta_wire.size());
  }
}

// Resources come in name order from the translator (no sort) or in any
// order from elsewhere (sorted); either way lookups find each name, and a
// name given twice is refused wherever the twins are.
TEST(ResourceMapTest, SortsFindsAndRefusesTwins) {
  for (const std::vector<std::string>& names : std::vector<std::vector<std::string>>{
           {"a", "b", "c", "d"}, {"c", "a", "d", "b"}, {"d", "c", "b", "a"}}) {
    std::vector<ResourcePtr> resources;
    for (const std::string& name : names) resources.push_back(EdsCluster(name));
    absl::StatusOr<ResourceMap> map = ResourceMap::Of(resources);
    ASSERT_TRUE(map.ok()) << map.status();
    std::vector<std::string> in_order;
    for (const auto& [name, resource] : *map) {
      EXPECT_EQ(name, resource->name());
      in_order.push_back(name);
    }
    EXPECT_EQ(in_order, (std::vector<std::string>{"a", "b", "c", "d"}));
    for (const std::string& name : names) {
      ASSERT_TRUE(map->contains(name)) << name;
      EXPECT_EQ(map->find(name)->second->name(), name);
    }
    for (absl::string_view absent : {"", "0", "bb", "e"}) EXPECT_FALSE(map->contains(absent));
  }
  const std::vector<std::pair<std::vector<std::string>, std::string>> with_twins = {
      {{"a", "b", "b", "c"}, "b"}, {{"b", "a", "c", "b"}, "b"}, {{"c", "c"}, "c"}};
  for (const auto& [names, twin] : with_twins) {
    std::vector<ResourcePtr> resources;
    for (const std::string& name : names) resources.push_back(EdsCluster(name));
    absl::StatusOr<ResourceMap> map = ResourceMap::Of(resources);
    ASSERT_FALSE(map.ok()) << twin;
    EXPECT_NE(map.status().message().find("Cluster are named \"" + twin + "\""),
              std::string::npos)
        << map.status();
  }
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
      {"complete",
       {ApiListener("l", "r"), RouteConfig("r", "c"), EdsCluster("c"), Endpoints("c", 1)},
       ""},
      {"missing route config",
       {ApiListener("l", "r")},
       "Listener \"l\" field api_listener.api_listener.rds.route_config_name names "
       "envoy.config.route.v3.RouteConfiguration \"r\""},
      {"missing load assignment",
       {EdsCluster("c")},
       "Cluster \"c\" field name names envoy.config.endpoint.v3.ClusterLoadAssignment \"c\""},
      {"duplicate",
       {EdsCluster("c"), EdsCluster("c", 2), Endpoints("c", 1)},
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

// Building after a snapshot shares the types whose resources did not
// change, and gives what a build without it gives: the same version, and the
// same refusals, also of a reference from a shared type to a changed one.
TEST(SnapshotTest, BuildingAfterAPreviousSnapshotSharesWhatDidNotChange) {
  const ResourcePtr listener = ApiListener("l", "r"), cluster = EdsCluster("c");
  const ResourcePtr endpoints = Endpoints("c", 1), other = EdsCluster("d");
  auto before = Snapshot::Build(
      {listener, RouteConfig("r", "c"), cluster, other, endpoints, Endpoints("d", 1)},
      absl::UnixEpoch());
  ASSERT_TRUE(before.ok()) << before.status();

  const std::vector<ResourcePtr> route_changed = {
      listener, RouteConfig("r", "d"), cluster, other, endpoints, Endpoints("d", 1)};
  auto after = Snapshot::Build(route_changed, absl::UnixEpoch(), {}, before->get());
  auto alone = Snapshot::Build(route_changed, absl::UnixEpoch());
  ASSERT_TRUE(after.ok()) << after.status();
  ASSERT_TRUE(alone.ok()) << alone.status();
  EXPECT_EQ((*after)->version(), (*alone)->version());
  for (absl::string_view type : {type_url::kListener, type_url::kRouteConfiguration,
                                 type_url::kCluster, type_url::kClusterLoadAssignment}) {
    EXPECT_EQ((*after)->TypeVersion(type), (*alone)->TypeVersion(type)) << type;
  }
  EXPECT_EQ(&(*after)->Resources(type_url::kCluster), &(*before)->Resources(type_url::kCluster))
      << "clusters did not change: shared";
  // Equal content made again (a service translated again) is shared too.
  auto remade = Snapshot::Build({ApiListener("l", "r"), RouteConfig("r", "d"), EdsCluster("c"),
                                 other, endpoints, Endpoints("d", 1)},
                                absl::UnixEpoch(), {}, after->get());
  ASSERT_TRUE(remade.ok()) << remade.status();
  EXPECT_EQ((*remade)->version(), (*after)->version());
  EXPECT_EQ(&(*remade)->Resources(type_url::kListener), &(*after)->Resources(type_url::kListener));
  EXPECT_NE(&(*after)->Resources(type_url::kRouteConfiguration),
            &(*before)->Resources(type_url::kRouteConfiguration));

  // Clusters are the same objects, but a load assignment they name is gone.
  auto dangling = Snapshot::Build({listener, RouteConfig("r", "d"), cluster, other, endpoints},
                                  absl::UnixEpoch(), {}, after->get());
  ASSERT_FALSE(dangling.ok());
  EXPECT_NE(dangling.status().message().find("Cluster \"d\" field name names"), std::string::npos)
      << dangling.status();
  // The route is gone: the unchanged listener's reference dangles.
  auto no_route = Snapshot::Build({listener, cluster, other, endpoints, Endpoints("d", 1)},
                                  absl::UnixEpoch(), {}, after->get());
  ASSERT_FALSE(no_route.ok());
  EXPECT_NE(no_route.status().message().find("Listener \"l\""), std::string::npos);
  // A duplicate in a changed type is still refused.
  auto duplicate = Snapshot::Build(
      {listener, RouteConfig("r", "d"), RouteConfig("r", "c"), cluster, other, endpoints,
       Endpoints("d", 1)},
      absl::UnixEpoch(), {}, after->get());
  ASSERT_FALSE(duplicate.ok());
  EXPECT_NE(duplicate.status().message().find("are named \"r\""), std::string::npos);
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
