// KubeConfigSource with the Gateway API on the in-memory API server: its
// objects are served beside holdfast's own, statuses reach statuses(), and
// missing CRDs never hold translation back.
#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "src/gateway_api/status.h"
#include "src/kube/fake_kube_api.h"
#include "src/source/kube_config_source.h"
#include "test/kube_unit/gateway_api_fixtures.h"

namespace holdfast {
namespace {

using namespace gateway_api::testing;  // NOLINT: the fixtures

const KubeResource kUpstreamObjects{"holdfast.dev", "v1", "upstreams", "Upstream"};
const KubeResource kCoreServices{"", "v1", "services", "Service"};
const KubeResource kSlices{"discovery.k8s.io", "v1", "endpointslices", "EndpointSlice"};

std::vector<KubeResource> GatewayApiResources() {
  std::vector<KubeResource> all = NamespacedGatewayApiResources();
  all.push_back(GatewayClassesResource());
  return all;
}
KubeResource Resource(const std::string& name) {
  for (const KubeResource& r : GatewayApiResources()) {
    if (r.resource == name) return r;
  }
  return {};
}

class GatewayApiSourceTest : public ::testing::Test {
 protected:
  void SetUp() override { api_.set_linger(absl::Milliseconds(100)); }
  void TearDown() override {
    if (source_) source_->Stop();
  }
  void Start() {
    KubeConfigSource::Options options;
    options.apply_interval = absl::Milliseconds(20);
    options.min_backoff = absl::Milliseconds(10);
    options.max_backoff = absl::Milliseconds(100);
    source_ = std::make_unique<KubeConfigSource>(options, &api_, Clock::Real(), Random::Real(),
                                                 &metrics_, [this](SnapshotPtr s) {
                                                   absl::MutexLock lock(&mu_);
                                                   latest_ = std::move(s);
                                                 });
    source_->OnGatewayApiStatuses([this](const gateway_api::GatewayApiStatuses& statuses) {
      absl::MutexLock lock(&mu_);
      notified_ = statuses;
    });
    source_->Start();
  }
  bool Eventually(const std::function<bool()>& condition) {
    for (int i = 0; i < 2000; ++i) {
      if (condition()) return true;
      absl::SleepFor(absl::Milliseconds(10));
    }
    return false;
  }
  bool Serves(const std::string& type, const std::string& name, const std::string& text = "") {
    absl::MutexLock lock(&mu_);
    if (latest_ == nullptr) return false;
    const auto& resources = latest_->Resources(std::string("type.googleapis.com/") + type);
    auto it = resources.find(name);
    return it != resources.end() &&
           (text.empty() || (it->second->message() != nullptr &&
                             absl::StrContains(it->second->message()->ShortDebugString(), text)));
  }
  std::optional<ObjectStatus> StatusOf(const ObjectKey& key) {
    StatusMap statuses = source_->statuses();
    auto it = statuses.find(key);
    if (it == statuses.end()) return std::nullopt;
    return it->second;
  }
  void PutBackend() {
    api_.Put(kCoreServices, {{"metadata", {{"namespace", "shop"}, {"name", "web"}}},
                         {"spec", {{"ports", {{{"name", "http"}, {"port", 80}}}}}}});
    api_.Put(kSlices, {{"metadata",
                        {{"namespace", "shop"},
                         {"name", "web-1"},
                         {"labels", {{"kubernetes.io/service-name", "web"}}}}},
                       {"addressType", "IPv4"},
                       {"ports", {{{"name", "http"}, {"port", 8080}}}},
                       {"endpoints", {{{"addresses", {"192.0.2.7"}}}}}});
  }
  void PutGatewayApi() {
    api_.Put(GatewayClassesResource(), ClassJson("holdfast"));
    json listener = HttpListener("http", 8080, "*.example.com");
    listener["allowedRoutes"] = {{"namespaces", {{"from", "All"}}}};
    api_.Put(Resource("gateways"), GatewayJson("infra", "gw", {listener}));
    api_.Put(Resource("httproutes"), RouteJson("HTTPRoute", "shop", "store", {"shop.example.com"},
                                               {PrefixRule("/", {Backend("web", 80)})}));
  }

  FakeKubeApi api_;
  MetricsRegistry metrics_;
  std::unique_ptr<KubeConfigSource> source_;
  absl::Mutex mu_;
  SnapshotPtr latest_ ABSL_GUARDED_BY(mu_);
  gateway_api::GatewayApiStatuses notified_ ABSL_GUARDED_BY(mu_);
};

constexpr char kListener[] = "envoy.config.listener.v3.Listener";
constexpr char kEndpoints[] = "envoy.config.endpoint.v3.ClusterLoadAssignment";

TEST_F(GatewayApiSourceTest, GatewayApiObjectsAreServedWithTheirStatuses) {
  PutBackend();
  PutGatewayApi();
  Start();
  ASSERT_TRUE(Eventually([&] { return Serves(kListener, "gateway/infra/gateway-api:gw:8080"); }));
  EXPECT_TRUE(Serves(kListener, "shop.example.com")) << "gRPC API listener";
  ASSERT_TRUE(
      Eventually([&] { return Serves(kEndpoints, "shop/gateway-api:web:80", "192.0.2.7"); }));
  std::optional<ObjectStatus> route = StatusOf({gateway_api::kHttpRouteKind, "shop", "store"});
  ASSERT_TRUE(route.has_value());
  EXPECT_EQ(route->state, StatusState::kAccepted);
  gateway_api::GatewayApiStatuses statuses = source_->gateway_api_statuses();
  const auto& gateway = statuses.at({gateway_api::kGatewayKind, "infra", "gw"});
  EXPECT_TRUE(gateway_api::FindCondition(gateway.conditions, "Programmed")->status);
  EXPECT_EQ(gateway.listeners[0].attached_routes, 1);
  EXPECT_EQ(GatewayApiResourceOf(gateway_api::kGatewayKind)->resource, "gateways");
  absl::MutexLock lock(&mu_);
  EXPECT_TRUE(notified_.contains({gateway_api::kHttpRouteKind, "shop", "store"}))
      << "the listener hears every translation's statuses";
}

TEST_F(GatewayApiSourceTest, BadRouteIsNamedWhileValidRoutesKeepServing) {
  PutBackend();
  PutGatewayApi();
  json bad = RouteJson("HTTPRoute", "other", "bad", {"bad.example.com"},
                       {PrefixRule("/", {Backend("web", 80, 1, "shop")})});
  bad["spec"]["rules"][0]["matches"][0]["path"]["type"] = "Glob";
  api_.Put(Resource("httproutes"), bad);
  api_.Put(Resource("httproutes"), RouteJson("HTTPRoute", "other", "cross", {"cross.example.com"},
                                             {PrefixRule("/", {Backend("web", 80, 1, "shop")})}));
  Start();
  ASSERT_TRUE(Eventually([&] {
    return StatusOf({gateway_api::kHttpRouteKind, "other", "cross"}).has_value();
  }));
  ObjectStatus cross = *StatusOf({gateway_api::kHttpRouteKind, "other", "cross"});
  EXPECT_EQ(cross.state, StatusState::kWarning);
  EXPECT_EQ(cross.reasons[0].path, "spec.rules[0].backendRefs[0].namespace");
  ObjectStatus broken = *StatusOf({gateway_api::kHttpRouteKind, "other", "bad"});
  EXPECT_EQ(broken.state, StatusState::kRejected);
  EXPECT_EQ(broken.reasons[0].path, "spec.rules[0].matches[0].path.type");
  EXPECT_TRUE(Serves(kListener, "shop.example.com"));
  EXPECT_TRUE(
      Eventually([&] { return Serves(kEndpoints, "shop/gateway-api:web:80", "192.0.2.7"); }));
}

TEST_F(GatewayApiSourceTest, HttpsListenerTerminatesWithATlsSecret) {
  const KubeResource secrets{"", "v1", "secrets", "Secret"};
  auto secret = [](const std::string& name, const std::string& type) {
    return json{{"metadata", {{"namespace", "infra"}, {"name", name}}},
                {"type", type},
                {"data", {{"tls.crt", "Q0VSVC1QRU0="}, {"tls.key", "S0VZLVBFTQ=="}}}};
  };
  api_.Put(secrets, secret("cert", "kubernetes.io/tls"));
  api_.Put(secrets, secret("opaque", "Opaque"));
  // A key that is not PEM text (bytes 0x30 0x82 0x95: DER), found by the
  // fuzzer to end the process: not a usable certificate, nothing more.
  json der = secret("der", "kubernetes.io/tls");
  der["data"]["tls.key"] = "MIKV";
  api_.Put(secrets, der);
  api_.Put(GatewayClassesResource(), ClassJson("holdfast"));
  auto https = [](const std::string& name, int port, const std::string& cert) {
    return json{{"name", name},
                {"port", port},
                {"protocol", "HTTPS"},
                {"tls", {{"certificateRefs", {{{"name", cert}}}}}}};
  };
  api_.Put(Resource("gateways"), GatewayJson("infra", "secure",
                                             {https("a", 8443, "cert"), https("b", 9443, "opaque"),
                                              https("c", 10443, "der")}));
  Start();
  ASSERT_TRUE(Eventually(
      [&] { return Serves(kListener, "gateway/infra/gateway-api:secure:8443", "CERT-PEM"); }));
  gateway_api::GatewayApiStatuses statuses = source_->gateway_api_statuses();
  const auto& gateway = statuses.at({gateway_api::kGatewayKind, "infra", "secure"});
  EXPECT_EQ(gateway_api::FindCondition(gateway.listeners[1].conditions, "ResolvedRefs")->reason,
            "InvalidCertificateRef")
      << "only Secrets of type kubernetes.io/tls are read";
  EXPECT_FALSE(Serves(kListener, "gateway/infra/gateway-api:secure:9443"));
  EXPECT_EQ(gateway_api::FindCondition(gateway.listeners[2].conditions, "ResolvedRefs")->reason,
            "InvalidCertificateRef");
  EXPECT_FALSE(Serves(kListener, "gateway/infra/gateway-api:secure:10443"));
}

TEST_F(GatewayApiSourceTest, MissingCrdsDoNotHoldTranslationBack) {
  for (const KubeResource& r : GatewayApiResources()) api_.SetServed(r, false);
  api_.Put(kUpstreamObjects, {{"metadata", {{"namespace", "shop"}, {"name", "api"}}},
                        {"spec", {{"hosts", {{{"address", "10.0.0.1"}, {"port", 8080}}}}}}});
  Start();
  ASSERT_TRUE(Eventually([&] { return Serves(kEndpoints, "shop/api"); }));
  EXPECT_TRUE(source_->health().connected) << "a CRD not installed is not an outage";
  // The CRDs are installed later: picked up by the next listing.
  PutBackend();
  for (const KubeResource& r : GatewayApiResources()) api_.SetServed(r, true);
  PutGatewayApi();
  EXPECT_TRUE(Eventually([&] { return Serves(kListener, "gateway/infra/gateway-api:gw:8080"); }));
  EXPECT_TRUE(Serves(kEndpoints, "shop/api"));
}

}  // namespace
}  // namespace holdfast

namespace holdfast {
namespace {

TEST(ParsedRoutesTest, ARouteIsParsedOnceWhileItsObjectIsTheSame) {
  using gateway_api::testing::RouteJson;
  std::shared_ptr<const KubeObject> object =
      MakeKubeObject(RouteJson("HTTPRoute", "shop", "r", {"shop.example.com"}, json::array()));
  KubeObjectsByResource objects;
  objects["httproutes"]["shop/r"] = object;
  ParsedRoutes parsed;
  const gateway_api::GatewayApiInput first = GatewayApiInputOf(objects, {}, &parsed);
  const gateway_api::GatewayApiInput again = GatewayApiInputOf(objects, {}, &parsed);
  ASSERT_EQ(first.routes.size(), 1u);
  ASSERT_EQ(again.routes.size(), 1u);
  EXPECT_EQ(first.routes[0], again.routes[0]) << "the same object: the route parsed before";

  // A changed object is a new object: parsed anew.
  objects["httproutes"]["shop/r"] =
      MakeKubeObject(RouteJson("HTTPRoute", "shop", "r", {"www.example.com"}, json::array()));
  const gateway_api::GatewayApiInput changed = GatewayApiInputOf(objects, {}, &parsed);
  ASSERT_EQ(changed.routes.size(), 1u);
  EXPECT_NE(changed.routes[0], first.routes[0]);
  EXPECT_EQ(changed.routes[0]->hostnames, std::vector<std::string>{"www.example.com"});
  // The old route was forgotten: only the new one is kept alive by the cache.
  EXPECT_EQ(first.routes[0].use_count(), 2) << "first and again hold it, the cache does not";
}

}  // namespace
}  // namespace holdfast
