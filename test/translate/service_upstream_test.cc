// Upstreams naming a Kubernetes Service: endpoints from the discovered
// Service, by locality, draining ones marked; HTTP/2 from the port's
// appProtocol; a missing Service or port warns and serves no endpoints.
#include <map>
#include <set>
#include <string>

#include "envoy/config/cluster/v3/cluster.pb.h"
#include "envoy/config/endpoint/v3/endpoint.pb.h"
#include "gtest/gtest.h"
#include "src/source/config_files.h"
#include "src/translate/translator.h"

namespace holdfast {
namespace {

using envoy::config::cluster::v3::Cluster;
using envoy::config::endpoint::v3::ClusterLoadAssignment;

constexpr char kObjects[] = R"(
apiVersion: holdfast.dev/v1
kind: Upstream
metadata: {name: web, namespace: shop}
spec: {service: {name: web, port: 80}}
---
apiVersion: holdfast.dev/v1
kind: Upstream
metadata: {name: rpc, namespace: shop}
spec: {service: {name: web, portName: grpc}}
---
apiVersion: holdfast.dev/v1
kind: Upstream
metadata: {name: plain, namespace: shop}
spec: {hosts: [{address: 10.0.0.9, port: 80}]}
---
apiVersion: holdfast.dev/v1
kind: VirtualService
metadata: {name: vs, namespace: shop}
spec:
  domains: [shop.test]
  routes:
  - {match: {prefix: /rpc}, upstream: rpc}
  - {match: {prefix: /}, upstream: web}
)";

TranslationInput Input(const std::string& yaml, DiscoveredServices services) {
  std::map<std::string, DecodedFile> files{{"test.yaml", DecodeObjects(yaml, "test.yaml")}};
  StatusMap file_statuses;
  TranslationInput input = AssembleInput(files, {}, &file_statuses);
  input.services = std::move(services);
  return input;
}

DiscoveredServices WebService() {
  DiscoveredService web;
  web.ports.push_back({"http",
                       80,
                       "",
                       {{"10.1.0.1", 8080, "zone-a", false},
                        {"10.1.0.2", 8080, "zone-b", false},
                        {"10.1.0.3", 8080, "zone-a", true},
                        {"10.1.0.4", 8080, "", false}}});
  web.ports.push_back({"grpc", 9090, "kubernetes.io/h2c", {{"10.1.0.1", 9000, "zone-a", false}}});
  return {{ServiceKey{"shop", "web"}, web}};
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

bool SpeaksHttp2(const Cluster& cluster) {
  return cluster.typed_extension_protocol_options().contains(
      "envoy.extensions.upstreams.http.v3.HttpProtocolOptions");
}

// "zone/address:port[/DRAINING]" per endpoint, and each locality's weight.
std::map<std::string, std::set<std::string>> Localities(const ClusterLoadAssignment& cla,
                                                        std::map<std::string, uint32_t>* weights) {
  std::map<std::string, std::set<std::string>> out;
  for (const auto& locality : cla.endpoints()) {
    (*weights)[locality.locality().zone()] = locality.load_balancing_weight().value();
    for (const auto& lb : locality.lb_endpoints()) {
      const auto& socket = lb.endpoint().address().socket_address();
      std::string entry = socket.address() + ":" + std::to_string(socket.port_value());
      if (lb.health_status() == envoy::config::core::v3::DRAINING) entry += "/DRAINING";
      out[locality.locality().zone()].insert(entry);
    }
  }
  return out;
}

std::map<std::string, std::string> Versions(const TranslationOutput& out) {
  std::map<std::string, std::string> versions;
  for (const auto& r : out.resources) versions[r->type_url() + " " + r->name()] = r->version();
  return versions;
}

TEST(ServiceUpstreamTest, EndpointsByZoneWithDrainingMarked) {
  Translator translator;
  TranslationOutput out = translator.Translate(Input(kObjects, WebService()));
  EXPECT_EQ(out.statuses.at({kind::kUpstream, "shop", "web"}).state, StatusState::kAccepted);
  const Resource* cla = Find(out, type_url::kClusterLoadAssignment, "shop/web");
  ASSERT_NE(cla, nullptr);
  std::map<std::string, uint32_t> weights;
  EXPECT_EQ(Localities(As<ClusterLoadAssignment>(cla), &weights),
            (std::map<std::string, std::set<std::string>>{
                {"default", {"10.1.0.4:8080"}},
                {"zone-a", {"10.1.0.1:8080", "10.1.0.3:8080/DRAINING"}},
                {"zone-b", {"10.1.0.2:8080"}}}));
  EXPECT_EQ(weights,
            (std::map<std::string, uint32_t>{{"default", 1}, {"zone-a", 2}, {"zone-b", 1}}));
  const auto& cluster = As<Cluster>(Find(out, type_url::kCluster, "shop/web"));
  EXPECT_EQ(cluster.type(), Cluster::EDS);
  EXPECT_FALSE(SpeaksHttp2(cluster));
}

TEST(ServiceUpstreamTest, PortByNameAndAppProtocolMeansHttp2UnlessTheUpstreamSaysOtherwise) {
  Translator translator;
  TranslationOutput out = translator.Translate(Input(kObjects, WebService()));
  std::map<std::string, uint32_t> weights;
  EXPECT_EQ(
      Localities(As<ClusterLoadAssignment>(Find(out, type_url::kClusterLoadAssignment, "shop/rpc")),
                 &weights),
      (std::map<std::string, std::set<std::string>>{{"zone-a", {"10.1.0.1:9000"}}}));
  EXPECT_TRUE(SpeaksHttp2(As<Cluster>(Find(out, type_url::kCluster, "shop/rpc"))));

  std::string no_h2 = kObjects;
  no_h2.replace(no_h2.find("portName: grpc}"), 15, "portName: grpc}, http2: false");
  out = translator.Translate(Input(no_h2, WebService()));
  EXPECT_FALSE(SpeaksHttp2(As<Cluster>(Find(out, type_url::kCluster, "shop/rpc"))));

  DiscoveredServices grpc = WebService();
  grpc.begin()->second.ports[0].app_protocol = "grpc";
  out = translator.Translate(Input(kObjects, grpc));
  EXPECT_TRUE(SpeaksHttp2(As<Cluster>(Find(out, type_url::kCluster, "shop/web"))));
}

TEST(ServiceUpstreamTest, AnEndpointChangeChangesOnlyThatLoadAssignment) {
  Translator translator;
  TranslationOutput before = translator.Translate(Input(kObjects, WebService()));
  DiscoveredServices changed = WebService();
  changed.begin()->second.ports[0].endpoints[2].draining = false;  // no longer terminating
  changed.begin()->second.ports[0].endpoints.push_back({"10.1.0.5", 8080, "zone-b", false});
  TranslationOutput after = translator.Translate(Input(kObjects, changed));

  std::map<std::string, std::string> old_versions = Versions(before);
  std::set<std::string> differing;
  for (const auto& [name, version] : Versions(after)) {
    if (old_versions[name] != version) differing.insert(name);
  }
  EXPECT_EQ(differing,
            (std::set<std::string>{std::string(type_url::kClusterLoadAssignment) + " shop/web"}));
}

TEST(ServiceUpstreamTest, MissingServiceOrPortWarnsAndServesNoEndpoints) {
  Translator translator;
  TranslationOutput out = translator.Translate(Input(kObjects, {}));
  const ObjectStatus& web = out.statuses.at({kind::kUpstream, "shop", "web"});
  EXPECT_EQ(web.state, StatusState::kWarning);
  ASSERT_EQ(web.reasons.size(), 1u);
  EXPECT_EQ(web.reasons[0].path, "spec.service");
  EXPECT_EQ(web.reasons[0].message, "Service shop/web not found: no endpoints");
  EXPECT_EQ(As<ClusterLoadAssignment>(Find(out, type_url::kClusterLoadAssignment, "shop/web"))
                .endpoints_size(),
            0);
  // Nothing else is withdrawn: the neighbour and the routes are served.
  EXPECT_NE(Find(out, type_url::kClusterLoadAssignment, "shop/plain"), nullptr);
  EXPECT_EQ(out.statuses.at({kind::kVirtualService, "shop", "vs"}).state, StatusState::kAccepted);

  DiscoveredServices no_grpc_port = WebService();
  no_grpc_port.begin()->second.ports.pop_back();
  out = translator.Translate(Input(kObjects, no_grpc_port));
  const ObjectStatus& rpc = out.statuses.at({kind::kUpstream, "shop", "rpc"});
  ASSERT_EQ(rpc.reasons.size(), 1u);
  EXPECT_EQ(rpc.reasons[0].path, "spec.service.portName");
  EXPECT_EQ(rpc.reasons[0].message, "Service shop/web has no port grpc: no endpoints");
  EXPECT_EQ(out.statuses.at({kind::kUpstream, "shop", "web"}).state, StatusState::kAccepted);
}

TEST(ServiceUpstreamTest, AReferenceMayNameAnotherNamespace) {
  // What the Gateway API's backendRefs produce (permitted by a ReferenceGrant).
  GatewayObject upstream;
  upstream.meta.ns = "routes";
  upstream.meta.name = "backend";
  UpstreamSpec spec;
  spec.service = ServiceRef{"web", "shop", 80, ""};
  upstream.spec = spec;
  upstream.content_digest = "d";
  TranslationInput input;
  input.objects.emplace(upstream.key(), upstream);
  input.services = WebService();
  Translator translator;
  TranslationOutput out = translator.Translate(input);
  EXPECT_EQ(out.statuses.at(upstream.key()).state, StatusState::kAccepted);
  EXPECT_EQ(As<ClusterLoadAssignment>(Find(out, type_url::kClusterLoadAssignment, "routes/backend"))
                .endpoints_size(),
            3);
}

}  // namespace
}  // namespace holdfast
