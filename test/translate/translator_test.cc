#include "src/translate/translator.h"

#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "envoy/config/cluster/v3/cluster.pb.h"
#include "envoy/config/listener/v3/listener.pb.h"
#include "envoy/config/route/v3/route.pb.h"
#include "envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.pb.h"
#include "envoy/extensions/transport_sockets/tls/v3/tls.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest-spi.h"
#include "gtest/gtest.h"
#include "src/snapshot/snapshot.h"
#include "src/snapshot/snapshot_file.h"
#include "src/source/config_files.h"
#include "src/source/directory_scanner.h"
#include "src/translate/envoy_validation.h"
#include "src/translate/names.h"
#include "src/translate/route.h"

namespace holdfast {
namespace {

using envoy::config::listener::v3::Listener;
using envoy::config::route::v3::RouteConfiguration;

TranslationInput Load(const std::string& yaml) {
  std::map<std::string, DecodedFile> files{{"test.yaml", DecodeObjects(yaml, "test.yaml")}};
  StatusMap file_statuses;
  return AssembleInput(files, {}, &file_statuses);
}

const Resource* Find(const TranslationOutput& out, absl::string_view type,
                     const std::string& name) {
  for (const ResourcePtr& r : out.resources) {
    if (r->type_url() == type && r->name() == name) return r.get();
  }
  return nullptr;
}

template <typename T>
const T& As(const Resource* r) {
  return *dynamic_cast<const T*>(r->message());
}

constexpr char kBase[] = R"(
apiVersion: holdfast.dev/v1
kind: Upstream
metadata: {name: a, namespace: ns}
spec: {hosts: [{address: 127.0.0.1, port: 8001}]}
---
apiVersion: holdfast.dev/v1
kind: Upstream
metadata: {name: b, namespace: ns}
spec: {hosts: [{address: 127.0.0.1, port: 8002}]}
---
apiVersion: holdfast.dev/v1
kind: VirtualService
metadata: {name: vs, namespace: ns, labels: {public: "yes"}}
spec:
  domains: [echo.test]
  routes:
  - match: {prefix: /, headers: [{name: x-backend, exact: b}]}
    upstream: b
  - match: {prefix: /}
    upstreams: [{name: a, weight: 3}, {name: b, weight: 1}]
---
apiVersion: holdfast.dev/v1
kind: Gateway
metadata: {name: gw, namespace: ns}
spec:
  port: 8080
  virtualServiceSelector: {labels: {public: "yes"}}
)";

// Files translated together, as a source would serve them, and the status
// each object must get: Accepted unless listed (by ObjectKey::ToString()).
struct ExampleCase {
  std::vector<std::string> files;  // relative to the source tree
  std::map<std::string, StatusState> not_accepted;
};

std::vector<ExampleCase> ExampleCases() {
  return {
      {{"examples/gateway/gateway.yaml", "examples/gateway/shop.yaml",
        "examples/gateway/upstreams.yaml"},
       {}},
      // Hosts by name and LeastRequest: served to Envoy, not to proxyless
      // gRPC clients.
      {{"test/fixtures/gateway/everything.yaml"}, {{"Upstream fx/by-name", StatusState::kWarning}}},
      // The loop table is Accepted: no VirtualService here delegates to it,
      // and a delegation cycle is reported on the route that follows it.
      {{"test/fixtures/gateway/bad-input.yaml"},
       {{"VirtualService shop/broken", StatusState::kRejected},
        {"VirtualService shop/conflict", StatusState::kWarning},
        {"Upstream default/x", StatusState::kRejected}}},
  };
}

// Every object of every file of `example` has its expected status (and
// every file has at least one object); every resource passes Envoy's
// validation.
void CheckExample(const ExampleCase& example) {
  const std::string root = HOLDFAST_SOURCE_DIR;
  std::map<std::string, DecodedFile> files;
  std::map<std::string, int> objects_per_file;
  for (const std::string& file : example.files) {
    auto contents = ReadWholeFile(root + "/" + file);
    EXPECT_TRUE(contents.ok()) << file << ": " << contents.status();
    if (!contents.ok()) return;
    files.emplace(file, DecodeObjects(*contents, file));
    objects_per_file[file] = 0;
  }
  StatusMap file_statuses;
  Translator translator;
  TranslationOutput out = translator.Translate(AssembleInput(files, {}, &file_statuses));
  for (const auto& [key, status] : MergeStatuses(out.statuses, file_statuses)) {
    auto expected = example.not_accepted.find(key.ToString());
    StatusState want =
        expected == example.not_accepted.end() ? StatusState::kAccepted : expected->second;
    EXPECT_EQ(StatusStateName(status.state), std::string(StatusStateName(want)))
        << status.location.ToString() << ": " << key.ToString();
    ++objects_per_file[status.location.file];
  }
  for (const std::string& file : example.files) {
    EXPECT_GT(objects_per_file[file], 0) << file << ": no object's status";
  }
  EXPECT_TRUE(Snapshot::Build(out.resources, absl::UnixEpoch()).ok()) << example.files[0];
  for (const ResourcePtr& r : out.resources) {
    absl::Status status = ValidateEnvoyResource(*r->message());
    EXPECT_TRUE(status.ok()) << example.files[0] << ": " << r->type_url() << " " << r->name()
                             << ": " << status;
  }
}

TEST(TranslatorTest, EveryExampleAndFixtureHasItsStatusesAndPassesEnvoyValidation) {
  std::set<std::string> covered;
  for (const ExampleCase& example : ExampleCases()) {
    SCOPED_TRACE(example.files[0]);
    CheckExample(example);
    covered.insert(example.files.begin(), example.files.end());
  }
  // A new example or fixture file needs its expectations here.
  const std::string root = HOLDFAST_SOURCE_DIR;
  for (const std::string dir : {"examples/gateway", "test/fixtures/gateway"}) {
    auto scan = ScanDirectory(root + "/" + dir, {".yaml"});
    ASSERT_TRUE(scan.ok()) << scan.status();
    for (const auto& [path, fingerprint] : scan->files) {
      std::string relative = std::filesystem::relative(path, root).string();
      EXPECT_TRUE(covered.count(relative)) << relative << " has no case in ExampleCases()";
    }
  }
}

TEST(TranslatorTest, ExampleCheckCatchesAnObjectThatIsNoLongerAccepted) {
  // bad-input.yaml as if VirtualService shop/broken should be Accepted.
  EXPECT_NONFATAL_FAILURE(CheckExample({{"test/fixtures/gateway/bad-input.yaml"},
                                        {{"VirtualService shop/conflict", StatusState::kWarning},
                                         {"Upstream default/x", StatusState::kRejected}}}),
                          "VirtualService shop/broken");
}

TEST(TranslatorTest, EveryUpstreamFieldReachesItsCluster) {
  auto text =
      ReadWholeFile(std::string(HOLDFAST_SOURCE_DIR) + "/test/fixtures/gateway/everything.yaml");
  ASSERT_TRUE(text.ok()) << text.status();
  Translator translator;
  TranslationOutput out = translator.Translate(Load(*text));
  const Resource* resource = Find(out, type_url::kCluster, "fx/full");
  ASSERT_NE(resource, nullptr);
  const auto& cluster = As<envoy::config::cluster::v3::Cluster>(resource);
  EXPECT_EQ(cluster.connect_timeout().nanos(), 250'000'000);
  EXPECT_EQ(cluster.lb_policy(), envoy::config::cluster::v3::Cluster::RING_HASH);
  EXPECT_TRUE(cluster.has_eds_cluster_config()) << "IP hosts: endpoints over EDS";
  EXPECT_EQ(cluster.typed_extension_protocol_options().count(
                "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"),
            1u)
      << "http2";
  envoy::extensions::transport_sockets::tls::v3::UpstreamTlsContext tls;
  ASSERT_TRUE(cluster.transport_socket().typed_config().UnpackTo(&tls));
  EXPECT_EQ(tls.sni(), "api.internal");
  EXPECT_EQ(tls.common_tls_context().validation_context().trusted_ca().filename(),
            "/etc/ssl/certs/ca-certificates.crt");
  ASSERT_EQ(cluster.circuit_breakers().thresholds_size(), 1);
  const auto& thresholds = cluster.circuit_breakers().thresholds(0);
  EXPECT_EQ(thresholds.max_connections().value(), 10u);
  EXPECT_EQ(thresholds.max_pending_requests().value(), 20u);
  EXPECT_EQ(thresholds.max_requests().value(), 30u);
  EXPECT_EQ(thresholds.max_retries().value(), 4u);
  ASSERT_EQ(cluster.health_checks_size(), 1);
  const auto& check = cluster.health_checks(0);
  EXPECT_EQ(check.interval().seconds(), 3);
  EXPECT_EQ(check.timeout().seconds(), 1);
  EXPECT_EQ(check.healthy_threshold().value(), 1u);
  EXPECT_EQ(check.unhealthy_threshold().value(), 2u);
  EXPECT_EQ(check.http_health_check().path(), "/health");
  const auto& outlier = cluster.outlier_detection();
  EXPECT_EQ(outlier.consecutive_5xx().value(), 3u);
  EXPECT_EQ(outlier.interval().seconds(), 5);
  EXPECT_EQ(outlier.base_ejection_time().seconds(), 15);
  EXPECT_EQ(outlier.max_ejection_percent().value(), 50u);
}

TEST(TranslatorTest, GatewayAndGrpcResources) {
  Translator translator;
  TranslationOutput out = translator.Translate(Load(kBase));
  for (const auto& [key, status] : out.statuses) {
    EXPECT_EQ(status.state, StatusState::kAccepted) << key.ToString();
  }
  const Resource* listener = Find(out, type_url::kListener, "gateway/ns/gw");
  ASSERT_NE(listener, nullptr);
  EXPECT_EQ(As<Listener>(listener).address().socket_address().port_value(), 8080u);
  const Resource* routes = Find(out, type_url::kRouteConfiguration, "gateway/ns/gw");
  ASSERT_NE(routes, nullptr);
  const RouteConfiguration& rc = As<RouteConfiguration>(routes);
  ASSERT_EQ(rc.virtual_hosts_size(), 1);
  ASSERT_EQ(rc.virtual_hosts(0).routes_size(), 2);
  EXPECT_EQ(rc.virtual_hosts(0).routes(0).match().headers(0).string_match().exact(), "b");
  EXPECT_EQ(rc.virtual_hosts(0).routes(0).route().cluster(), "ns/b");
  const auto& weighted = rc.virtual_hosts(0).routes(1).route().weighted_clusters();
  ASSERT_EQ(weighted.clusters_size(), 2);
  EXPECT_EQ(weighted.clusters(0).weight().value(), 3u);

  // Proxyless gRPC: an API listener named by the domain, over RDS.
  const Resource* api = Find(out, type_url::kListener, "echo.test");
  ASSERT_NE(api, nullptr);
  envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager hcm;
  ASSERT_TRUE(As<Listener>(api).api_listener().api_listener().UnpackTo(&hcm));
  EXPECT_EQ(hcm.rds().route_config_name(), "grpc/ns/vs");
  EXPECT_TRUE(hcm.rds().config_source().has_ads());
  EXPECT_EQ(hcm.http_filters(hcm.http_filters_size() - 1).name(), "envoy.filters.http.router");
  ASSERT_NE(Find(out, type_url::kRouteConfiguration, "grpc/ns/vs"), nullptr);
  ASSERT_NE(Find(out, type_url::kClusterLoadAssignment, "ns/a"), nullptr);
}

// A gateway lists services by name in any order, repeats and misses some,
// and selects others by label: each found one is served once, in key order.
TEST(TranslatorTest, AGatewayServesListedAndSelectedServicesOnceEachInKeyOrder) {
  std::string yaml =
      "apiVersion: holdfast.dev/v1\nkind: Upstream\nmetadata: {name: u, namespace: ns}\n"
      "spec: {hosts: [{address: 127.0.0.1, port: 8001}]}\n";
  for (const char* name : {"vs-a", "vs-b", "vs-c", "vs-d", "vs-e"}) {
    const bool picked = name == std::string("vs-a") || name == std::string("vs-c");
    absl::StrAppend(&yaml, "---\napiVersion: holdfast.dev/v1\nkind: VirtualService\n",
                    "metadata: {name: ", name, ", namespace: ns, labels: {pick: \"",
                    picked ? "yes" : "no", "\"}}\n", "spec:\n  domains: [", name,
                    ".test]\n  routes:\n  - {match: {prefix: /}, upstream: u}\n");
  }
  absl::StrAppend(
      &yaml,
      "---\napiVersion: holdfast.dev/v1\nkind: Gateway\nmetadata: {name: mixed, namespace: ns}\n"
      "spec:\n  port: 8080\n  virtualServiceSelector: {labels: {pick: \"yes\"}}\n"
      "  virtualServices: [{name: vs-d}, {name: vs-b}, {name: missing}, {name: vs-b}, "
      "{name: vs-a}]\n",
      "---\napiVersion: holdfast.dev/v1\nkind: Gateway\nmetadata: {name: sorted, namespace: ns}\n"
      "spec: {port: 8081, virtualServices: [{name: vs-a}, {name: vs-c}, {name: vs-d}, "
      "{name: vs-e}]}\n");
  Translator translator;
  TranslationOutput out = translator.Translate(Load(yaml));
  auto hosts = [&](const std::string& gateway) {
    std::vector<std::string> names;
    const Resource* routes =
        Find(out, type_url::kRouteConfiguration, names::GatewayRoutes({"Gateway", "ns", gateway}));
    EXPECT_NE(routes, nullptr) << gateway;
    if (routes == nullptr) return names;
    for (const auto& host : As<RouteConfiguration>(routes).virtual_hosts()) {
      names.push_back(host.name());
    }
    return names;
  };
  EXPECT_THAT(hosts("mixed"), testing::ElementsAre("ns/vs-a", "ns/vs-b", "ns/vs-c", "ns/vs-d"));
  EXPECT_THAT(hosts("sorted"), testing::ElementsAre("ns/vs-a", "ns/vs-c", "ns/vs-d", "ns/vs-e"));
  const ObjectStatus& mixed = out.statuses.at({"Gateway", "ns", "mixed"});
  ASSERT_EQ(mixed.reasons.size(), 1u);
  EXPECT_EQ(mixed.reasons[0].path, "spec.virtualServices[2]");
  EXPECT_EQ(mixed.reasons[0].message, "virtual service missing not found");
  EXPECT_EQ(out.statuses.at({"Gateway", "ns", "sorted"}).state, StatusState::kAccepted);
}

TEST(TranslatorTest, DeterministicAndChangesTouchOnlyDependents) {
  Translator first, second;
  TranslationOutput a = first.Translate(Load(kBase));
  TranslationOutput b = second.Translate(Load(kBase));
  ASSERT_EQ(a.resources.size(), b.resources.size());
  for (size_t i = 0; i < a.resources.size(); ++i) {
    EXPECT_EQ(a.resources[i]->serialized(), b.resources[i]->serialized());
    EXPECT_EQ(a.resources[i]->version(), b.resources[i]->version());
  }

  std::string changed = kBase;
  changed.replace(changed.find("8002"), 4, "9002");  // only upstream b's endpoint
  TranslationOutput c = first.Translate(Load(changed));
  std::set<std::string> differing;
  std::map<std::string, std::string> before;
  for (const auto& r : a.resources) before[r->type_url() + " " + r->name()] = r->version();
  for (const auto& r : c.resources) {
    if (before[r->type_url() + " " + r->name()] != r->version()) {
      differing.insert(r->type_url() + " " + r->name());
    }
  }
  EXPECT_EQ(differing,
            (std::set<std::string>{std::string(type_url::kClusterLoadAssignment) + " ns/b"}));
}

// A world of objects by name, as YAML documents, to change one at a time.
using World = std::map<std::string, std::string>;

World ManyServices() {
  World world;
  for (int i = 0; i < 6; ++i) {
    world[absl::StrCat("u", i)] = absl::StrCat(
        "kind: Upstream\nmetadata: {name: u", i, ", namespace: ns}\n",
        "spec: {hosts: [{address: 127.0.0.", i + 1, ", port: 80}]}\n");
  }
  world["table"] =
      "kind: RouteTable\nmetadata: {name: table, namespace: ns}\n"
      "spec:\n  routes:\n  - {match: {prefix: /t}, upstream: u5}\n";
  for (int i = 0; i < 12; ++i) {
    world[absl::StrCat("vs", i)] = absl::StrCat(
        "kind: VirtualService\nmetadata: {name: vs", i, ", namespace: ns, labels: {public: \"",
        i % 3 == 0 ? "no" : "yes", "\"}}\n", "spec:\n  domains: [vs", i, ".test, www.vs", i,
        ".test]\n  routes:\n  - {match: {prefix: /a}, upstream: u", i % 6, "}\n",
        i % 4 == 0 ? "  - match: {prefix: /}\n    delegate: {routeTables: [{name: table}]}\n" : "");
  }
  world["gw"] =
      "kind: Gateway\nmetadata: {name: gw, namespace: ns}\n"
      "spec: {port: 8080, virtualServiceSelector: {labels: {public: \"yes\"}}}\n";
  world["listed"] =
      "kind: Gateway\nmetadata: {name: listed, namespace: ns}\n"
      "spec: {port: 8081, virtualServices: [{name: vs6}, {name: vs0}, {name: vs3}]}\n";
  return world;
}

TranslationInput LoadWorld(const World& world) {
  std::string yaml;
  for (const auto& [name, doc] : world) {
    absl::StrAppend(&yaml, "---\napiVersion: holdfast.dev/v1\n", doc);
  }
  return Load(yaml);
}

std::string Replaced(std::string doc, const std::string& from, const std::string& to) {
  size_t at = doc.find(from);
  EXPECT_NE(at, std::string::npos) << from << " not in " << doc;
  if (at != std::string::npos) doc.replace(at, from.size(), to);
  return doc;
}

// What a translation publishes, in a form to compare: every resource's
// version by type and name, and every status with its reasons.
// What a translation makes again with the same content is the object made
// before: a snapshot finds it unchanged by its pointer, without reading it.
TEST(TranslatorTest, ResourcesMadeAgainEqualAreTheObjectsMadeBefore) {
  auto objects = [](const TranslationOutput& out) {
    std::map<std::string, const Resource*> by_key;
    for (const auto& r : out.resources) by_key[r->type_url() + " " + r->name()] = r.get();
    return by_key;
  };
  auto remade = [](const std::map<std::string, const Resource*>& before,
                   const std::map<std::string, const Resource*>& after) {
    EXPECT_EQ(before.size(), after.size());
    std::set<std::string> keys;
    for (const auto& [key, resource] : after) {
      auto old = before.find(key);
      if (old == before.end() || old->second != resource) keys.insert(key);
    }
    return keys;
  };
  Translator translator;
  const auto a = objects(translator.Translate(Load(kBase)));
  std::string changed = kBase;
  changed.replace(changed.find("8002"), 4, "9002");  // only upstream b's endpoint
  const auto b = objects(translator.Translate(Load(changed)));
  EXPECT_EQ(remade(a, b),
            (std::set<std::string>{std::string(type_url::kClusterLoadAssignment) + " ns/b"}));
  // A route's header changes: the service's routes and the gateway's are
  // new; its gRPC listener and the gateway's listener are the same objects.
  const auto c = objects(translator.Translate(Load(Replaced(changed, "exact: b", "exact: c"))));
  const std::string routes(type_url::kRouteConfiguration);
  EXPECT_EQ(remade(b, c),
            (std::set<std::string>{routes + " gateway/ns/gw", routes + " grpc/ns/vs"}));
}

std::map<std::string, std::string> Published(const TranslationOutput& out) {
  std::map<std::string, std::string> published;
  for (const ResourcePtr& r : out.resources) {
    EXPECT_TRUE(published.emplace(absl::StrCat(r->type_url(), " ", r->name()), r->version()).second)
        << r->name();
  }
  for (const auto& [key, status] : out.statuses) {
    std::string reasons;
    for (const FieldError& e : status.reasons) {
      absl::StrAppend(&reasons, e.path, ": ", e.message, "; ");
    }
    published[key.ToString()] = absl::StrCat(
        StatusStateName(status.state), status.serving_last_good ? " last-good " : " ", reasons);
  }
  return published;
}

// A translator that has seen every earlier version of the objects publishes
// exactly what a new one publishes from the current objects alone (no
// conflicts or invalid objects here, where history rightly matters).
TEST(TranslatorTest, AfterEachChangeThePublishedSnapshotIsAFullTranslations) {
  World world = ManyServices();
  const std::vector<std::pair<std::string, std::function<void(World&)>>> changes = {
      {"a route's prefix", [](World& w) { w["vs1"] = Replaced(w["vs1"], "/a", "/b"); }},
      {"a domain", [](World& w) { w["vs2"] = Replaced(w["vs2"], "www.vs2", "api.vs2"); }},
      {"a service selected", [](World& w) { w["vs3"] = Replaced(w["vs3"], "\"no\"", "\"yes\""); }},
      {"a service unselected",
       [](World& w) { w["vs4"] = Replaced(w["vs4"], "\"yes\"", "\"no\""); }},
      {"a service removed", [](World& w) { w.erase("vs5"); }},
      {"a service added",
       [](World& w) { w["vs5b"] = Replaced(ManyServices()["vs5"], "vs5", "vs5b"); }},
      {"an endpoint", [](World& w) { w["u2"] = Replaced(w["u2"], "port: 80", "port: 81"); }},
      {"an upstream removed", [](World& w) { w.erase("u1"); }},
      {"the route table", [](World& w) { w["table"] = Replaced(w["table"], "/t", "/tt"); }},
      {"a listed service removed", [](World& w) { w.erase("vs6"); }},
      {"an upstream back", [](World& w) { w["u1"] = ManyServices()["u1"]; }},
      {"a gateway's port", [](World& w) { w["gw"] = Replaced(w["gw"], "8080", "8090"); }},
      {"a gateway removed", [](World& w) { w.erase("listed"); }},
      {"a route names a missing upstream",
       [](World& w) { w["vs7"] = Replaced(w["vs7"], "upstream: u1", "upstream: u9"); }},
      {"that upstream appears",
       [](World& w) { w["u9"] = Replaced(ManyServices()["u1"], "name: u1", "name: u9"); }},
      {"a route table names it",
       [](World& w) { w["table"] = Replaced(w["table"], "upstream: u5", "upstream: u9"); }},
      {"it goes again", [](World& w) { w.erase("u9"); }},
      {"a mirror of another namespace's upstream",
       [](World& w) {
         w["vs10"] = Replaced(
             w["vs10"], "upstream: u4}",
             "upstream: u4, options: {mirrors: [{upstream: m, namespace: other}]}}");
       }},
      {"that upstream appears in its namespace",
       [](World& w) {
         w["m"] = "kind: Upstream\nmetadata: {name: m, namespace: other}\n"
                  "spec: {hosts: [{address: 127.0.0.9, port: 80}]}\n";
       }},
      {"a delegation by selector",
       [](World& w) {
         w["vs11"] = Replaced(w["vs11"], "routes:\n",
                              "routes:\n  - match: {prefix: /s}\n"
                              "    delegate: {selector: {labels: {team: s}}}\n");
       }},
      {"a table it selects appears",
       [](World& w) {
         w["picked"] =
             "kind: RouteTable\nmetadata: {name: picked, namespace: ns, labels: {team: s}}\n"
             "spec:\n  routes:\n  - {match: {prefix: /s/1}, upstream: u2}\n";
       }},
  };
  Translator warm;
  warm.Translate(LoadWorld(world));
  for (const auto& [what, change] : changes) {
    SCOPED_TRACE(what);
    change(world);
    TranslationInput input = LoadWorld(world);
    ASSERT_TRUE(input.invalid.empty());
    TranslationOutput incremental = warm.Translate(input);
    TranslationOutput full = Translator().Translate(input);
    EXPECT_EQ(Published(incremental), Published(full));
    auto a = Snapshot::Build(incremental.resources, absl::UnixEpoch());
    auto b = Snapshot::Build(full.resources, absl::UnixEpoch());
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ((*a)->version(), (*b)->version());
  }
}

// The gRPC route configuration of each virtual service, by name.
std::map<std::string, const Resource*> GrpcRoutes(const TranslationOutput& out) {
  std::map<std::string, const Resource*> routes;
  for (const ResourcePtr& r : out.resources) {
    if (r->type_url() == type_url::kRouteConfiguration && r->name().starts_with("grpc/")) {
      routes[r->name()] = r.get();
    }
  }
  return routes;
}

// The names whose resource is not the very object `before` had.
std::set<std::string> Remade(const std::map<std::string, const Resource*>& before,
                             const std::map<std::string, const Resource*>& after) {
  std::set<std::string> remade;
  for (const auto& [name, resource] : after) {
    auto it = before.find(name);
    if (it == before.end() || it->second != resource) remade.insert(name);
  }
  return remade;
}

// Adding or removing an upstream translates again only the services whose
// routes (or the tables they delegate to) name it, not all of them.
TEST(TranslatorTest, AnUpstreamComingOrGoingTranslatesOnlyTheServicesNamingIt) {
  World world = ManyServices();
  Translator translator;
  TranslationOutput base = translator.Translate(LoadWorld(world));
  const auto base_routes = GrpcRoutes(base);
  ASSERT_EQ(base_routes.size(), 12u);

  world["u9"] = Replaced(world["u1"], "name: u1", "name: u9");
  TranslationOutput added = translator.Translate(LoadWorld(world));
  EXPECT_EQ(Remade(base_routes, GrpcRoutes(added)), std::set<std::string>{})
      << "no route names u9";

  world.erase("u1");  // named by vs1 and vs7
  TranslationOutput removed = translator.Translate(LoadWorld(world));
  EXPECT_EQ(Remade(GrpcRoutes(added), GrpcRoutes(removed)),
            (std::set<std::string>{"grpc/ns/vs1", "grpc/ns/vs7"}));

  world.erase("u5");  // named by vs5, vs11 and the table vs0, vs4 and vs8 delegate to
  TranslationOutput table_upstream = translator.Translate(LoadWorld(world));
  EXPECT_EQ(Remade(GrpcRoutes(removed), GrpcRoutes(table_upstream)),
            (std::set<std::string>{"grpc/ns/vs0", "grpc/ns/vs11", "grpc/ns/vs4", "grpc/ns/vs5",
                                   "grpc/ns/vs8"}));

  world["table"] = Replaced(world["table"], "/t", "/tt");
  TranslationOutput table = translator.Translate(LoadWorld(world));
  EXPECT_EQ(Remade(GrpcRoutes(table_upstream), GrpcRoutes(table)),
            (std::set<std::string>{"grpc/ns/vs0", "grpc/ns/vs4", "grpc/ns/vs8"}))
      << "only the services that delegate";
}

// Translated on several threads (as at start, with many services), the
// output is the one a single thread gives, warnings and refusals included.
TEST(TranslatorTest, ManyServicesTranslateTheSameOnSeveralThreads) {
  World world = ManyServices();
  for (int i = 12; i < 300; ++i) {
    world[absl::StrCat("vs", i)] = absl::StrReplaceAll(
        ManyServices()["vs4"], {{"vs4", absl::StrCat("vs", i)},
                                // u6 does not exist: a warning
                                {"upstream: u4", absl::StrCat("upstream: u", i % 7)}});
  }
  world["vs13"] = Replaced(world["vs13"], "prefix: /a}",  // refused: a header name with CR LF
                           "prefix: /a, headers: [{name: \"x\\r\\ny\", exact: \"1\"}]}");
  const TranslationInput input = LoadWorld(world);
  TranslationOutput one = Translator(TranslatorOptions{.threads = 1}).Translate(input);
  TranslationOutput four = Translator(TranslatorOptions{.threads = 4}).Translate(input);
  EXPECT_EQ(Published(one), Published(four));
  EXPECT_EQ(one.statuses.at({kind::kVirtualService, "ns", "vs13"}).state, StatusState::kRejected);
  EXPECT_EQ(one.statuses.at({kind::kVirtualService, "ns", "vs20"}).state, StatusState::kWarning);
  EXPECT_EQ(GrpcRoutes(four).size(), 299u) << "all but the refused one";
}

// Gateways and gRPC listeners meet the served services in key order, in one
// walk: each found by the index's own pointer or by its key (a last
// accepted version is another object), a service that is not served never
// takes its neighbour's output.
TEST(ServedServicesTest, FindsEachServedServiceInOneWalkAndNoOther) {
  auto service = [](std::string name) {
    GatewayObject vs;
    vs.meta.ns = "ns";
    vs.meta.name = std::move(name);
    vs.spec = VirtualServiceSpec{};
    return vs;
  };
  const GatewayObject a = service("a"), b = service("b"), c = service("c"), d = service("d");
  const GatewayObject c_again = service("c"), e = service("e");
  const ServiceOutput out_a, out_c, out_d;
  const ServedServices served{{&a, &out_a}, {&c, &out_c}, {&d, &out_d}};
  auto cursor = served.cbegin();
  EXPECT_EQ(FindServed(served, cursor, a), &out_a);
  EXPECT_EQ(FindServed(served, cursor, b), nullptr);
  EXPECT_EQ(FindServed(served, cursor, c_again), &out_c);
  EXPECT_EQ(FindServed(served, cursor, e), nullptr);
  cursor = served.cbegin();
  EXPECT_EQ(FindServed(served, cursor, d), &out_d);
}

// A translation's snapshot, written as the last good one and read back at
// start, has the same versions: a restarted replica offers proxies what they
// already hold, and its first translation pushes nothing again.
TEST(TranslatorTest, ASnapshotReadBackFromItsFileKeepsTheTranslationsVersions) {
  TranslationOutput out = Translator().Translate(LoadWorld(ManyServices()));
  auto built = Snapshot::Build(out.resources, absl::UnixEpoch());
  ASSERT_TRUE(built.ok()) << built.status();
  const std::string path = ::testing::TempDir() + "/translator-test-last-good.snapshot";
  ASSERT_TRUE(WriteSnapshotFile(**built, path).ok());
  auto read = ReadSnapshotFile(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ((*read)->version(), (*built)->version());
  for (const std::string& type : (*built)->TypeUrls()) {
    EXPECT_EQ((*read)->TypeVersion(type), (*built)->TypeVersion(type)) << type;
  }
}

// A gateway's route configuration is versioned by its hosts' digests, not
// by all its bytes: the version still follows its content, host by host,
// whether translated afresh or after another translation.
TEST(TranslatorTest, GatewayRoutesVersionFollowsItsHosts) {
  auto routes_version = [](Translator& translator, const std::string& yaml) {
    TranslationOutput out = translator.Translate(Load(yaml));
    const Resource* routes = Find(out, type_url::kRouteConfiguration, "gateway/ns/gw");
    return routes == nullptr ? std::string() : routes->version();
  };
  Translator warm;
  const std::string base = routes_version(warm, kBase);
  ASSERT_FALSE(base.empty());
  EXPECT_EQ(routes_version(warm, kBase), base);
  Translator fresh;
  EXPECT_EQ(routes_version(fresh, kBase), base) << "the same on every replica";

  std::string changed = kBase;
  changed.replace(changed.find("exact: b}"), 9, "exact: c}");
  const std::string one_host = routes_version(warm, changed);
  EXPECT_NE(one_host, base) << "a route of one host changed";
  Translator fresh_changed;
  EXPECT_EQ(routes_version(fresh_changed, changed), one_host);

  const std::string second = absl::StrCat(
      kBase, "---\napiVersion: holdfast.dev/v1\nkind: VirtualService\n",
      "metadata: {name: vs2, namespace: ns, labels: {public: \"yes\"}}\n",
      "spec: {domains: [two.test], routes: [{match: {prefix: /}, upstream: a}]}\n");
  const std::string two_hosts = routes_version(warm, second);
  EXPECT_NE(two_hosts, base) << "a host added";
  EXPECT_EQ(routes_version(warm, kBase), base) << "and taken away again";
}

TEST(TranslatorTest, RejectedObjectKeepsItsLastAcceptedVersion) {
  Translator translator;
  TranslationOutput good = translator.Translate(Load(kBase));
  const std::string good_routes =
      Find(good, type_url::kRouteConfiguration, "gateway/ns/gw")->version();

  std::string broken = kBase;
  broken.replace(broken.find("upstream: b\n"), 12, "upstream: b\n    colour: red\n");
  TranslationOutput out = translator.Translate(Load(broken));
  const ObjectStatus& status = out.statuses.at({kind::kVirtualService, "ns", "vs"});
  EXPECT_EQ(status.state, StatusState::kRejected);
  EXPECT_TRUE(status.serving_last_good);
  ASSERT_FALSE(status.reasons.empty());
  EXPECT_EQ(status.reasons[0].path, "spec.routes[0].colour");
  EXPECT_EQ(Find(out, type_url::kRouteConfiguration, "gateway/ns/gw")->version(), good_routes);

  // Without an earlier good version, a rejected object is simply absent.
  Translator fresh;
  TranslationOutput none = fresh.Translate(Load(broken));
  EXPECT_FALSE(none.statuses.at({kind::kVirtualService, "ns", "vs"}).serving_last_good);
  EXPECT_EQ(Find(none, type_url::kListener, "echo.test"), nullptr);
}

// The last accepted version is the latest one accepted, and an object gone
// from the source is forgotten: back broken, it has no last good.
TEST(TranslatorTest, LastAcceptedFollowsEachAcceptedVersionAndForgetsObjectsGone) {
  Translator translator;
  translator.Translate(Load(kBase));
  const std::string v2 = Replaced(kBase, "- match: {prefix: /}\n", "- match: {prefix: /v2}\n");
  const std::string v2_routes = Find(translator.Translate(Load(v2)), type_url::kRouteConfiguration,
                                     "gateway/ns/gw")->version();
  std::string broken = v2;
  broken.replace(broken.find("upstream: b\n"), 12, "upstream: b\n    colour: red\n");
  TranslationOutput out = translator.Translate(Load(broken));
  EXPECT_TRUE(out.statuses.at({kind::kVirtualService, "ns", "vs"}).serving_last_good);
  EXPECT_EQ(Find(out, type_url::kRouteConfiguration, "gateway/ns/gw")->version(), v2_routes);

  std::string without_vs = kBase;
  const size_t vs_start =
      without_vs.find("---\napiVersion: holdfast.dev/v1\nkind: VirtualService");
  const size_t vs_end = without_vs.find("---", vs_start + 3);
  without_vs.erase(vs_start, vs_end - vs_start);
  translator.Translate(Load(without_vs));
  out = translator.Translate(Load(broken));
  const ObjectStatus& status = out.statuses.at({kind::kVirtualService, "ns", "vs"});
  EXPECT_EQ(status.state, StatusState::kRejected);
  EXPECT_FALSE(status.serving_last_good);
}

// The server gives each output's statuses back (Recycle) once published:
// the next translation's statuses are what they would be without that,
// as objects turn bad, warn, come and go.
TEST(TranslatorTest, RecycledStatusesAreEachTranslationsOwn) {
  std::string broken = kBase;
  broken.replace(broken.find("upstream: b\n"), 12, "upstream: b\n    colour: red\n");
  const std::string base = kBase;
  const std::string missing = Replaced(kBase, "upstream: b\n", "upstream: gone\n");
  const std::string renamed = Replaced(kBase, "name: a,", "name: a2,");
  Translator recycling, plain;
  for (const std::string& yaml : {base, broken, missing, renamed, base, broken, base}) {
    TranslationInput input = Load(yaml);
    input.invalid[{kind::kUpstream, "ns", "bad"}] = {{"spec.hosts", "must not be empty"}};
    TranslationOutput recycled = recycling.Translate(input);
    TranslationOutput expected = plain.Translate(input);
    EXPECT_EQ(Published(recycled), Published(expected));
    for (const auto& [key, status] : recycled.statuses) {
      EXPECT_EQ(status.key, key);
      EXPECT_EQ(status.location, expected.statuses.at(key).location) << key.ToString();
    }
    recycling.Recycle(std::move(recycled.statuses));
  }
}

TEST(TranslatorTest, BrokenReferencesAnswerClearlyAndSpareNeighbours) {
  std::string yaml = std::string(kBase) + R"(
---
apiVersion: holdfast.dev/v1
kind: VirtualService
metadata: {name: other, namespace: ns, labels: {public: "yes"}}
spec:
  domains: [other.test]
  routes:
  - match: {prefix: /gone}
    upstream: gone
  - match: {prefix: /tables}
    delegate: {routeTables: [{name: missing}]}
  - match: {prefix: /loop}
    delegate: {routeTables: [{name: loop}]}
---
apiVersion: holdfast.dev/v1
kind: RouteTable
metadata: {name: loop, namespace: ns}
spec:
  routes:
  - match: {prefix: /loop/x}
    delegate: {routeTables: [{name: loop}]}
---
apiVersion: holdfast.dev/v1
kind: VirtualService
metadata: {name: dup, namespace: ns, labels: {public: "yes"}}
spec:
  domains: [echo.test]
  routes: [{directResponse: {status: 200}}]
)";
  Translator translator;
  translator.Translate(Load(kBase));  // ns/vs serves echo.test first
  TranslationOutput out = translator.Translate(Load(yaml));
  const ObjectStatus& other = out.statuses.at({kind::kVirtualService, "ns", "other"});
  EXPECT_EQ(other.state, StatusState::kWarning);
  const ObjectStatus& loop = out.statuses.at({kind::kRouteTable, "ns", "loop"});
  EXPECT_EQ(loop.state, StatusState::kWarning);
  EXPECT_NE(loop.reasons[0].message.find("delegation cycle"), std::string::npos);
  const ObjectStatus& dup = out.statuses.at({kind::kVirtualService, "ns", "dup"});
  EXPECT_EQ(dup.state, StatusState::kRejected);
  EXPECT_NE(dup.reasons[0].message.find("echo.test (served by VirtualService ns/vs)"),
            std::string::npos)
      << dup.reasons[0].message;

  const RouteConfiguration& rc =
      As<RouteConfiguration>(Find(out, type_url::kRouteConfiguration, "gateway/ns/gw"));
  ASSERT_EQ(rc.virtual_hosts_size(), 2);  // vs and other; dup refused
  const auto& routes =
      rc.virtual_hosts(0).name() == "ns/other" ? rc.virtual_hosts(0) : rc.virtual_hosts(1);
  ASSERT_EQ(routes.routes_size(), 3);
  EXPECT_EQ(routes.routes(0).direct_response().status(), 503u);
  EXPECT_EQ(routes.routes(0).direct_response().body().inline_string(),
            "upstream ns/gone not found\n");
  EXPECT_EQ(routes.routes(1).direct_response().status(), 503u);
  EXPECT_EQ(routes.routes(2).direct_response().status(), 508u);
  EXPECT_TRUE(Snapshot::Build(out.resources, absl::UnixEpoch()).ok());
  // Its gRPC clients stay with ns/vs too: dup gets no API listener, so no
  // route configuration of its own.
  EXPECT_NE(Find(out, type_url::kRouteConfiguration, "grpc/ns/vs"), nullptr);
  EXPECT_EQ(Find(out, type_url::kRouteConfiguration, "grpc/ns/dup"), nullptr);
  EXPECT_NE(dup.reasons.back().message.find(
                "gRPC clients of echo.test are served by VirtualService ns/vs"),
            std::string::npos)
      << dup.reasons.back().message;

  // With no history, the first by key wins the domain, for gRPC clients too.
  Translator fresh;
  TranslationOutput first = fresh.Translate(Load(yaml));
  EXPECT_EQ(first.statuses.at({kind::kVirtualService, "ns", "vs"}).state, StatusState::kRejected);
  EXPECT_NE(Find(first, type_url::kRouteConfiguration, "grpc/ns/dup"), nullptr);
  EXPECT_EQ(Find(first, type_url::kRouteConfiguration, "grpc/ns/vs"), nullptr);
}

// A virtual service on the gateway of kBase, serving `domain`.
std::string PublicService(const std::string& name, const std::string& domain,
                          const std::string& prefix = "/") {
  return absl::StrCat("---\napiVersion: holdfast.dev/v1\nkind: VirtualService\n",
                      "metadata: {name: ", name, ", namespace: ns, labels: {public: \"yes\"}}\n",
                      "spec:\n  domains: [", domain, "]\n", "  routes: [{match: {prefix: ",
                      prefix, "}, directResponse: {status: 200}}]\n");
}

// Who serves which domain is kept from one translation to the next while the
// services' domains and names stay the same; any change to them is seen.
TEST(TranslatorTest, DomainOwnersFollowEveryChangeOfDomainsAndNames) {
  const std::string base(kBase);
  Translator translator;
  translator.Translate(Load(base + PublicService("other", "other.test")));
  // A route change: the owners of the last translation still hold.
  TranslationOutput same =
      translator.Translate(Load(base + PublicService("other", "other.test", "/x")));
  EXPECT_EQ(same.statuses.at({kind::kVirtualService, "ns", "other"}).state,
            StatusState::kAccepted);

  // A domain change that conflicts: the incumbent, ns/vs, keeps echo.test.
  TranslationOutput clash =
      translator.Translate(Load(base + PublicService("other", "echo.test")));
  const ObjectStatus& other = clash.statuses.at({kind::kVirtualService, "ns", "other"});
  EXPECT_EQ(other.state, StatusState::kRejected);
  EXPECT_EQ(clash.statuses.at({kind::kVirtualService, "ns", "vs"}).state, StatusState::kAccepted);
  EXPECT_EQ(Find(clash, type_url::kRouteConfiguration, "grpc/ns/other"), nullptr);
  EXPECT_NE(Find(clash, type_url::kRouteConfiguration, "grpc/ns/vs"), nullptr);
  EXPECT_TRUE(Snapshot::Build(clash.resources, absl::UnixEpoch()).ok());

  // Renamed with the same domain: the new name owns it, so a newcomer that
  // sorts first does not take it.
  translator.Translate(Load(base));
  std::string renamed = Replaced(base, "name: vs,", "name: zz,");
  translator.Translate(Load(renamed));
  TranslationOutput newcomer =
      translator.Translate(Load(renamed + PublicService("aa", "echo.test")));
  EXPECT_EQ(newcomer.statuses.at({kind::kVirtualService, "ns", "aa"}).state,
            StatusState::kRejected);
  EXPECT_EQ(newcomer.statuses.at({kind::kVirtualService, "ns", "zz"}).state,
            StatusState::kAccepted);
  EXPECT_NE(Find(newcomer, type_url::kRouteConfiguration, "grpc/ns/zz"), nullptr);
  EXPECT_EQ(Find(newcomer, type_url::kRouteConfiguration, "grpc/ns/aa"), nullptr);
}

// An upstream Envoy would refuse is served at its last accepted version, or
// not at all, and routes to it then answer as to a missing one; the
// upstreams beside it are untouched.
TEST(TranslatorTest, AnUpstreamEnvoyWouldRefuseKeepsItsLastGoodOrLeaves) {
  const std::string refused_tls = "  tls: {sni: " + std::string(300, 's') + "}\n";
  const std::string with_c = std::string(kBase) + R"(---
apiVersion: holdfast.dev/v1
kind: Upstream
metadata: {name: c, namespace: ns}
spec:
  hosts: [{address: 127.0.0.1, port: 8003}]
)" + refused_tls + PublicService("to-c", "c.test", "/c");
  std::string yaml = Replaced(with_c, "/c}, directResponse: {status: 200}", "/c}, upstream: c");
  Translator translator;
  const TranslationOutput before = translator.Translate(Load(kBase));
  const Resource* b_before = Find(before, type_url::kCluster, names::Cluster("ns", "b"));
  ASSERT_NE(b_before, nullptr);

  TranslationOutput out = translator.Translate(Load(yaml));
  const ObjectStatus& c = out.statuses.at({kind::kUpstream, "ns", "c"});
  EXPECT_EQ(c.state, StatusState::kRejected);
  EXPECT_FALSE(c.serving_last_good);
  EXPECT_EQ(Find(out, type_url::kCluster, names::Cluster("ns", "c")), nullptr);
  EXPECT_NE(Find(out, type_url::kCluster, names::Cluster("ns", "a")), nullptr);
  const RouteConfiguration& gateway =
      As<RouteConfiguration>(Find(out, type_url::kRouteConfiguration, "gateway/ns/gw"));
  ASSERT_EQ(gateway.virtual_hosts_size(), 2);
  const auto& to_c = gateway.virtual_hosts(0);  // in key order: before ns/vs
  ASSERT_EQ(to_c.name(), "ns/to-c");
  EXPECT_EQ(to_c.routes(0).direct_response().status(), 503u);
  EXPECT_EQ(to_c.routes(0).direct_response().body().inline_string(), "upstream ns/c not found\n");
  const RouteConfiguration& grpc =
      As<RouteConfiguration>(Find(out, type_url::kRouteConfiguration, "grpc/ns/to-c"));
  EXPECT_EQ(grpc.virtual_hosts(0).routes(0).route().cluster(), kUnroutableCluster);
  EXPECT_TRUE(Snapshot::Build(out.resources, absl::UnixEpoch()).ok());

  // b, accepted before, now refused: its last accepted cluster stays.
  const std::string b_spec = "spec: {hosts: [{address: 127.0.0.1, port: 8002}]}\n";
  TranslationOutput edited = translator.Translate(Load(Replaced(
      yaml, b_spec, "spec:\n  hosts: [{address: 127.0.0.1, port: 8012}]\n" + refused_tls)));
  const ObjectStatus& b = edited.statuses.at({kind::kUpstream, "ns", "b"});
  EXPECT_EQ(b.state, StatusState::kRejected);
  EXPECT_TRUE(b.serving_last_good);
  const Resource* b_after = Find(edited, type_url::kCluster, names::Cluster("ns", "b"));
  ASSERT_NE(b_after, nullptr);
  EXPECT_EQ(b_after->version(), b_before->version());
  EXPECT_EQ(Find(edited, type_url::kCluster, names::Cluster("ns", "c")), nullptr);
  EXPECT_TRUE(Snapshot::Build(edited.resources, absl::UnixEpoch()).ok());
}

TEST(TranslatorTest, MirrorsAndRedirectPort) {
  std::string yaml = std::string(kBase) + R"(
---
apiVersion: holdfast.dev/v1
kind: VirtualService
metadata: {name: mirrored, namespace: ns, labels: {public: "yes"}}
spec:
  domains: [mirror.test]
  routes:
  - match: {prefix: /all}
    upstream: a
    options: {mirrors: [{upstream: b}]}
  - match: {prefix: /some}
    upstreams: [{name: a}]
    options: {mirrors: [{upstream: b, fraction: {numerator: 1, denominator: 1000}},
                        {upstream: gone, percent: 10}]}
  - match: {prefix: /old}
    redirect: {https: true, port: 8443, code: 308}
)";
  Translator translator;
  TranslationOutput out = translator.Translate(Load(yaml));
  const RouteConfiguration& rc =
      As<RouteConfiguration>(Find(out, type_url::kRouteConfiguration, "gateway/ns/gw"));
  const envoy::config::route::v3::VirtualHost* host = nullptr;
  for (const auto& vh : rc.virtual_hosts()) {
    if (vh.name() == "ns/mirrored") host = &vh;
  }
  ASSERT_NE(host, nullptr);
  ASSERT_EQ(host->routes_size(), 3);
  const auto& all = host->routes(0).route();
  ASSERT_EQ(all.request_mirror_policies_size(), 1);
  EXPECT_EQ(all.request_mirror_policies(0).cluster(), names::Cluster("ns", "b"));
  EXPECT_FALSE(all.request_mirror_policies(0).has_runtime_fraction()) << "every request";
  const auto& some = host->routes(1).route();
  ASSERT_EQ(some.request_mirror_policies_size(), 1) << "the missing upstream is left out";
  const auto& share = some.request_mirror_policies(0).runtime_fraction().default_value();
  EXPECT_EQ(share.numerator(), 1000u);
  EXPECT_EQ(share.denominator(), envoy::type::v3::FractionalPercent::MILLION);
  const auto& redirect = host->routes(2).redirect();
  EXPECT_TRUE(redirect.https_redirect());
  EXPECT_EQ(redirect.port_redirect(), 8443u);
  EXPECT_EQ(redirect.response_code(), envoy::config::route::v3::RedirectAction::PERMANENT_REDIRECT);

  const ObjectStatus& status = out.statuses.at({kind::kVirtualService, "ns", "mirrored"});
  EXPECT_EQ(status.state, StatusState::kWarning);
  ASSERT_EQ(status.reasons.size(), 1u);
  EXPECT_EQ(status.reasons[0].path, "spec.routes[1].options.mirrors[1].upstream");
  EXPECT_NE(status.reasons[0].message.find("upstream ns/gone not found"), std::string::npos);

  // gRPC clients do not mirror: their route configuration has no policy.
  for (const ResourcePtr& r : out.resources) {
    if (r->type_url() != type_url::kRouteConfiguration || r->name() == "gateway/ns/gw") continue;
    RouteConfiguration grpc_routes;
    ASSERT_TRUE(grpc_routes.ParseFromString(r->serialized())) << r->name();
    for (const auto& vh : grpc_routes.virtual_hosts()) {
      for (const auto& route : vh.routes()) {
        EXPECT_EQ(route.route().request_mirror_policies_size(), 0) << r->name();
      }
    }
  }
  EXPECT_TRUE(Snapshot::Build(out.resources, absl::UnixEpoch()).ok());
}

TEST(TranslatorTest, GatewayCertificatesBySni) {
  const std::string gateway = R"(
---
apiVersion: holdfast.dev/v1
kind: Gateway
metadata: {name: tls, namespace: ns}
spec:
  port: 8443
  virtualServiceSelector: {labels: {public: "yes"}}
  tls:
    certificates:
    - {serverNames: [echo.test, "*.echo.test"], certFile: /certs/echo.crt, keyFile: /certs/echo.key}
    - {serverNames: [other.test], secretRef: {name: other}}
)";
  Translator translator;
  // The Secret is missing: the gateway is Rejected naming the entry, and
  // the plain gateway beside it is served.
  TranslationOutput missing = translator.Translate(Load(std::string(kBase) + gateway));
  const ObjectStatus& refused = missing.statuses.at({kind::kGateway, "ns", "tls"});
  EXPECT_EQ(refused.state, StatusState::kRejected);
  ASSERT_FALSE(refused.reasons.empty());
  EXPECT_EQ(refused.reasons[0].path, "spec.tls.certificates[1].secretRef");
  EXPECT_NE(Find(missing, type_url::kListener, "gateway/ns/gw"), nullptr);

  TranslationOutput out = translator.Translate(Load(std::string(kBase) + gateway + R"(
---
apiVersion: holdfast.dev/v1
kind: Secret
metadata: {name: other, namespace: ns}
spec: {certificate: CERT-OTHER, privateKey: KEY-OTHER}
)"));
  EXPECT_EQ(out.statuses.at({kind::kGateway, "ns", "tls"}).state, StatusState::kAccepted);
  const Listener& listener = As<Listener>(Find(out, type_url::kListener, "gateway/ns/tls"));
  ASSERT_EQ(listener.filter_chains_size(), 2) << "no default certificate: no third chain";
  EXPECT_EQ(listener.filter_chains(0).filter_chain_match().server_names(1), "*.echo.test");
  EXPECT_NE(listener.filter_chains(0).ShortDebugString().find("/certs/echo.crt"),
            std::string::npos);
  EXPECT_NE(listener.filter_chains(1).ShortDebugString().find("CERT-OTHER"), std::string::npos);
  ASSERT_EQ(listener.listener_filters_size(), 1);
  EXPECT_EQ(listener.listener_filters(0).name(), "envoy.filters.listener.tls_inspector");
  EXPECT_TRUE(ValidateEnvoyResource(listener).ok());
}

TEST(TranslatorTest, DelegatedTablesOrderedByWeight) {
  std::string yaml = R"(
apiVersion: holdfast.dev/v1
kind: VirtualService
metadata: {name: vs, namespace: ns}
spec:
  domains: [d.test]
  routes:
  - match: {prefix: /api}
    delegate: {selector: {labels: {team: x}}}
---
apiVersion: holdfast.dev/v1
kind: RouteTable
metadata: {name: a-late, namespace: ns, labels: {team: x}}
spec:
  weight: 10
  routes: [{match: {prefix: /api/late}, directResponse: {status: 201}}]
---
apiVersion: holdfast.dev/v1
kind: RouteTable
metadata: {name: z-early, namespace: ns, labels: {team: x}}
spec:
  weight: -1
  routes:
  - {match: {prefix: /api/early}, directResponse: {status: 202}}
  - {match: {prefix: /elsewhere}, directResponse: {status: 203}}
)";
  Translator translator;
  TranslationOutput out = translator.Translate(Load(yaml));
  const RouteConfiguration& rc =
      As<RouteConfiguration>(Find(out, type_url::kRouteConfiguration, "grpc/ns/vs"));
  ASSERT_EQ(rc.virtual_hosts(0).routes_size(), 2);
  EXPECT_EQ(rc.virtual_hosts(0).routes(0).match().prefix(), "/api/early");
  EXPECT_EQ(rc.virtual_hosts(0).routes(1).match().prefix(), "/api/late");
  const ObjectStatus& early = out.statuses.at({kind::kRouteTable, "ns", "z-early"});
  EXPECT_EQ(early.state, StatusState::kWarning);  // /elsewhere is outside /api
}

}  // namespace
}  // namespace holdfast

namespace holdfast {
namespace {

constexpr char kPolicies[] = R"(
apiVersion: holdfast.dev/v1
kind: RolloutPolicy
metadata: {name: a-edge, namespace: ops}
spec: {nodeGroup: edge, canaries: {percent: 5}, bake: 2m}
---
apiVersion: holdfast.dev/v1
kind: RolloutPolicy
metadata: {name: b-edge, namespace: ops}
spec: {nodeGroup: edge, canaries: {percent: 50}}
---
apiVersion: holdfast.dev/v1
kind: RolloutPolicy
metadata: {name: everyone, namespace: ops}
spec: {canaries: {nodeMetadata: {key: canary, value: "yes"}}}
)";

// RolloutPolicy objects become the snapshot's policies, not resources; a
// second policy for a group is Rejected naming the first, which stays.
TEST(TranslatorRolloutPolicyTest, PoliciesByGroupAndConflictsNamed) {
  Translator translator;
  TranslationOutput out = translator.Translate(Load(kPolicies));
  EXPECT_EQ(out.resources.size(), Translator().Translate(Load("")).resources.size())
      << "policies make no resources";
  ASSERT_TRUE(out.rollouts.fallback.has_value());
  EXPECT_EQ(out.rollouts.fallback->metadata_key, "canary");
  EXPECT_EQ(out.rollouts.fallback->origin, "RolloutPolicy ops/everyone");
  ASSERT_EQ(out.rollouts.groups.size(), 1u);
  const RolloutPolicy& edge = out.rollouts.groups.at("edge");
  EXPECT_EQ(edge.canary_percent, 5);
  EXPECT_EQ(edge.bake, absl::Minutes(2));
  EXPECT_EQ(edge.ack_timeout, absl::Seconds(30));
  EXPECT_EQ(edge.origin, "RolloutPolicy ops/a-edge");
  const ObjectStatus& loser = out.statuses.at({"RolloutPolicy", "ops", "b-edge"});
  EXPECT_EQ(loser.state, StatusState::kRejected);
  ASSERT_EQ(loser.reasons.size(), 1u);
  EXPECT_EQ(loser.reasons[0].path, "spec.nodeGroup");
  EXPECT_EQ(loser.reasons[0].message,
            "node group \"edge\" already has a rollout policy: RolloutPolicy ops/a-edge");
  EXPECT_EQ(out.statuses.at({"RolloutPolicy", "ops", "a-edge"}).state, StatusState::kAccepted);
}

// An invalid edit keeps the last accepted policy in effect, like any object.
TEST(TranslatorRolloutPolicyTest, AnInvalidEditKeepsTheLastAcceptedPolicy) {
  Translator translator;
  translator.Translate(Load(kPolicies));
  std::string edited = kPolicies;
  edited.replace(edited.find("percent: 5}"), 11, "percent: 500}");
  TranslationOutput out = translator.Translate(Load(edited));
  EXPECT_EQ(out.rollouts.groups.at("edge").canary_percent, 5);
  const ObjectStatus& status = out.statuses.at({"RolloutPolicy", "ops", "a-edge"});
  EXPECT_EQ(status.state, StatusState::kRejected);
  EXPECT_TRUE(status.serving_last_good);
}

// The policies are part of the snapshot's version (a policy-only change is
// published), and a snapshot without policies keeps the version it always
// had.
TEST(TranslatorRolloutPolicyTest, PoliciesArePartOfTheSnapshotVersionOnlyWhenSet) {
  Translator translator;
  TranslationOutput out = translator.Translate(Load(kBase));
  ASSERT_TRUE(out.rollouts.empty());
  auto plain = Snapshot::Build(out.resources, absl::UnixEpoch());
  auto same = Snapshot::Build(out.resources, absl::UnixEpoch(), out.rollouts);
  ConfiguredRollouts rollouts;
  rollouts.groups["edge"] = {.canary_percent = 5};
  auto with = Snapshot::Build(out.resources, absl::UnixEpoch(), rollouts);
  rollouts.groups["edge"].canary_percent = 6;
  auto changed = Snapshot::Build(out.resources, absl::UnixEpoch(), rollouts);
  ASSERT_TRUE(plain.ok() && same.ok() && with.ok() && changed.ok());
  EXPECT_EQ((*plain)->version(), (*same)->version());
  EXPECT_NE((*plain)->version(), (*with)->version());
  EXPECT_NE((*with)->version(), (*changed)->version());
  EXPECT_EQ((*changed)->rollouts(), rollouts);
}

}  // namespace
}  // namespace holdfast
