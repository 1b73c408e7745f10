#include "src/snapshot/snapshot.h"

#include <algorithm>
#include <optional>
#include <random>
#include <set>

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

// A change to a few of many resources, in name order or not: Patched gives
// what Of gives (the same names, versions and version sum), copies what it
// keeps from the map before, lists what is new or of a new version, and
// refuses (for Of to name them) exactly the inputs with twins.
TEST(ResourceMapTest, PatchedGivesWhatOfGives) {
  std::mt19937 random(7);
  auto pick = [&](int n) { return static_cast<int>(random() % n); };
  auto name_of = [](int i) { return absl::StrCat("c", 100 + i); };
  for (int round = 0; round < 300; ++round) {
    SCOPED_TRACE(round);
    std::vector<ResourcePtr> old_resources;
    for (int i = 0; i < 30; ++i) {
      if (pick(3) != 0) old_resources.push_back(EdsCluster(name_of(i), 1 + pick(2)));
    }
    absl::StatusOr<ResourceMap> before = ResourceMap::Of(old_resources);
    ASSERT_TRUE(before.ok());
    std::vector<ResourcePtr> resources;
    for (int i = 0, next_old = 0; i < 30; ++i) {
      const bool was = next_old < static_cast<int>(old_resources.size()) &&
                       old_resources[next_old]->name() == name_of(i);
      const int change = pick(8);  // mostly kept as it was
      if (was && change > 2) resources.push_back(old_resources[next_old]);
      if (was && change == 1) resources.push_back(EdsCluster(name_of(i), 1 + pick(2)));
      if (!was && change == 0) resources.push_back(EdsCluster(name_of(i), 1));
      next_old += was;
    }
    if (resources.size() > 1 && pick(6) == 0) {  // two out of order, or a twin
      const size_t at = pick(resources.size() - 1);
      if (pick(2) == 0) std::swap(resources[at], resources[at + 1]);
      else resources[at + 1] = pick(2) == 0 ? resources[at] : EdsCluster(resources[at]->name(), 3);
    }
    if (pick(5) == 0) std::shuffle(resources.begin(), resources.end(), random);
    std::set<std::string> names;
    for (const ResourcePtr& resource : resources) names.insert(resource->name());
    const bool twins = names.size() != resources.size();

    std::optional<ResourceMap::Patch> patch = ResourceMap::Patched(*before, resources);
    ASSERT_EQ(patch.has_value(), !twins);
    if (twins) continue;
    absl::StatusOr<ResourceMap> whole = ResourceMap::Of(resources);
    ASSERT_TRUE(whole.ok());
    const ResourceMap& patched = patch->unchanged() ? *before : patch->map;
    EXPECT_EQ(patched.version_sum().Digest(), whole->version_sum().Digest());
    ASSERT_EQ(patched.size(), whole->size());
    std::vector<std::string> added, names_gone;
    for (auto p = patched.begin(), w = whole->begin(); p != patched.end(); ++p, ++w) {
      EXPECT_EQ(p->first, w->first);
      EXPECT_EQ(p->first, p->second->name());
      EXPECT_EQ(p->second->version(), w->second->version());
      auto old = before->find(p->first);
      if (old == before->end() || old->second->version() != p->second->version()) {
        added.push_back(p->first);
      } else {
        EXPECT_EQ(p->second, old->second) << "kept from before";
      }
    }
    for (const auto& [name, resource] : *before) {
      if (!whole->contains(name)) names_gone.push_back(name);
    }
    std::vector<std::string> listed;
    for (const ResourcePtr& resource : patch->added) listed.push_back(resource->name());
    EXPECT_EQ(listed, added);
    EXPECT_EQ(patch->names_removed, !names_gone.empty());
  }
}

// A type's version is a sum over its resources: the same set gives the same
// version whatever was before it, and a resource put back restores it.
TEST(ResourceMapTest, VersionSumDependsOnTheSetAlone) {
  const ResourcePtr a = EdsCluster("a"), b = EdsCluster("b"), b2 = EdsCluster("b", 2);
  auto digest = [](std::vector<ResourcePtr> resources) {
    return ResourceMap::Of(std::move(resources))->version_sum().Digest();
  };
  EXPECT_EQ(digest({a, b}), digest({b, a}));
  EXPECT_NE(digest({a, b}), digest({a, b2}));
  EXPECT_NE(digest({a, b}), digest({a}));
  EXPECT_NE(digest({a}), digest({}));
  VersionSum sum;
  sum.Add(*a);
  sum.Add(*b);
  sum.Remove(*b);
  sum.Add(*b2);
  EXPECT_EQ(sum.Digest(), digest({a, b2}));
  // A name's digest is bound to its version: two resources swapping
  // versions is a change.
  const ResourcePtr a2 = EdsCluster("a", 2), b1 = EdsCluster("b", 1);
  EXPECT_NE(digest({a, b2}), digest({a2, b1}));
}

// Snapshots built one after another, each from the one before, with random
// changes (references left dangling among them) succeed, fail and version
// exactly as snapshots built alone.
TEST(SnapshotTest, BuildingFromThePreviousIsBuildingAlone) {
  std::mt19937 random(11);
  auto pick = [&](int n) { return static_cast<int>(random() % n); };
  const int kNames = 10;  // one digit each: in name order, as the translator emits
  std::vector<ResourcePtr> listeners(kNames), routes(kNames), clusters(kNames), endpoints(kNames);
  auto change = [&](std::vector<ResourcePtr>& of_type, int i, auto make) {
    const int what = pick(100);
    if (what == 0) {
      of_type[i] = nullptr;  // what names it dangles, until it is made again
    } else if (what <= 10 || (what < 50 && of_type[i] == nullptr)) {
      of_type[i] = make();
    }
  };
  // Now and then a new listener names a route none has, until it is mended.
  std::vector<std::string> route_of(kNames);
  auto listener = [&](int i) {
    route_of[i] = pick(25) == 0 ? "none" : absl::StrCat("r", pick(kNames));
    return ApiListener(absl::StrCat("l", i), route_of[i]);
  };
  SnapshotPtr previous;
  int failed = 0;
  for (int round = 0; round < 200; ++round) {
    SCOPED_TRACE(round);
    for (int i = 0; i < kNames; ++i) {
      const std::string n = absl::StrCat(i);
      change(listeners, i, [&] { return listener(i); });
      if (route_of[i] == "none" && pick(2) == 0) listeners[i] = listener(i);
      change(routes, i, [&] { return RouteConfig("r" + n, "c" + absl::StrCat(pick(kNames))); });
      change(clusters, i, [&] { return EdsCluster("c" + n, 1 + pick(3)); });
      change(endpoints, i, [&] { return Endpoints("c" + n, 80 + pick(3)); });
    }
    std::vector<ResourcePtr> resources;
    for (const auto* of_type : {&listeners, &routes, &clusters, &endpoints}) {
      for (const ResourcePtr& resource : *of_type) {
        if (resource != nullptr) resources.push_back(resource);
      }
    }
    if (pick(4) == 0) std::shuffle(resources.begin(), resources.end(), random);  // any order
    auto alone = Snapshot::Build(resources, absl::UnixEpoch());
    auto after = Snapshot::Build(resources, absl::UnixEpoch(), {}, previous.get());
    ASSERT_EQ(after.ok(), alone.ok()) << after.status() << " / " << alone.status();
    if (!alone.ok()) {
      EXPECT_EQ(after.status().message(), alone.status().message());
      ++failed;
      continue;
    }
    EXPECT_EQ((*after)->version(), (*alone)->version());
    for (absl::string_view type : {type_url::kListener, type_url::kRouteConfiguration,
                                   type_url::kCluster, type_url::kClusterLoadAssignment}) {
      EXPECT_EQ((*after)->TypeVersion(type), (*alone)->TypeVersion(type)) << type;
    }
    previous = *after;
  }
  EXPECT_GT(failed, 20) << "the rounds should leave references dangling now and then";
  EXPECT_LT(failed, 180);
}

// Known types are grouped by index, others by their type URL: interleaved,
// each lands with its own kind.
TEST(SnapshotTest, ResourcesOfKnownAndUnknownTypesInterleavedAreGroupedByType) {
  const std::string custom = "type.googleapis.com/example.v1.Custom";
  std::vector<ResourcePtr> resources;
  for (int i = 0; i < 3; ++i) {
    const std::string n = absl::StrCat(i);
    resources.push_back(Resource::FromBytes("x" + n, custom, "bytes" + n));
    resources.push_back(EdsCluster("c" + n));
    resources.push_back(Resource::FromBytes("y" + n, custom + "2", "bytes" + n));
    resources.push_back(Endpoints("c" + n, 80));
  }
  EXPECT_EQ(resources[0]->type_index(), type_url::kUnknownType);
  EXPECT_EQ(type_url::kKnownTypes[resources[1]->type_index()], type_url::kCluster);
  absl::StatusOr<SnapshotPtr> snapshot = Snapshot::Build(resources, absl::UnixEpoch());
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  for (const std::string& type : {custom, custom + "2", std::string(type_url::kCluster),
                                  std::string(type_url::kClusterLoadAssignment)}) {
    const ResourceMap& of_type = (*snapshot)->Resources(type);
    ASSERT_EQ(of_type.size(), 3u) << type;
    for (const auto& [name, resource] : of_type) EXPECT_EQ(resource->type_url(), type) << name;
  }
  EXPECT_EQ((*snapshot)->TypeUrls().size(), 4u);
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
  // A new listener names a route that never was.
  auto new_dangling = Snapshot::Build({listener, ApiListener("m", "nowhere"), RouteConfig("r", "d"),
                                       cluster, other, endpoints, Endpoints("d", 1)},
                                      absl::UnixEpoch(), {}, after->get());
  ASSERT_FALSE(new_dangling.ok());
  EXPECT_NE(new_dangling.status().message().find("Listener \"m\""), std::string::npos)
      << new_dangling.status();
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
