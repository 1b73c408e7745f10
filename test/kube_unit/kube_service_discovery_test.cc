// KubeServiceDiscovery: Services joined to their EndpointSlices as the
// EndpointSlice API defines them.
#include "src/source/kube_service_discovery.h"

#include "gtest/gtest.h"

namespace holdfast {
namespace {

using Json = nlohmann::json;

std::pair<std::string, std::shared_ptr<const KubeObject>> Object(const std::string& ns,
                                                                 const std::string& name,
                                                                 Json object) {
  object["metadata"]["namespace"] = ns;
  object["metadata"]["name"] = name;
  return {ns + "/" + name, std::make_shared<KubeObject>(KubeObject{ns, name, "1", object})};
}

Json Service(Json ports) { return {{"spec", {{"ports", ports}}}}; }

// `endpoints` is a vector: `{Endpoint(...)}` as a Json is the endpoint itself
// for clang and a one-item array for GCC.
Json Slice(const std::string& service, const std::string& type, Json ports,
           std::vector<Json> endpoints) {
  return {{"metadata", {{"labels", {{"kubernetes.io/service-name", service}}}}},
          {"addressType", type},
          {"ports", ports},
          {"endpoints", Json(std::move(endpoints))}};
}

Json Endpoint(std::vector<std::string> addresses, Json conditions, const std::string& zone = "") {
  Json endpoint = {{"addresses", addresses}, {"conditions", conditions}};
  if (!zone.empty()) endpoint["zone"] = zone;
  return endpoint;
}

const Json kWebPorts = Json::array({{{"name", "http"}, {"port", 80}, {"protocol", "TCP"}},
                                    {{"name", "grpc"}, {"port", 9090}, {"appProtocol", "grpc"}},
                                    {{"name", "dns"}, {"port", 53}, {"protocol", "UDP"}}});
const Json kSlicePorts = Json::array(
    {{{"name", "http"}, {"port", 8080}, {"protocol", "TCP"}}, {{"name", "grpc"}, {"port", 9000}}});

TEST(KubeServiceDiscoveryTest, JoinsSlicesToServicePortsByName) {
  KubeObjects services{Object("shop", "web", Service(kWebPorts))};
  KubeObjects slices{Object(
      "shop", "web-abc",
      Slice("web", "IPv4", kSlicePorts, {Endpoint({"10.0.0.2", "10.0.0.1"}, {}, "zone-a")}))};
  KubeServiceDiscovery discovery;
  DiscoveredServices out = discovery.Discover(services, slices);
  ASSERT_EQ(out.size(), 1u);
  const DiscoveredService& web = out.at({"shop", "web"});
  ASSERT_EQ(web.ports.size(), 2u) << "the UDP port is not an upstream";
  EXPECT_EQ(web.ports[0],
            (DiscoveredServicePort{
                "http", 80, "", {{"10.0.0.1", 8080, "zone-a"}, {"10.0.0.2", 8080, "zone-a"}}}));
  EXPECT_EQ(
      web.ports[1],
      (DiscoveredServicePort{
          "grpc", 9090, "grpc", {{"10.0.0.1", 9000, "zone-a"}, {"10.0.0.2", 9000, "zone-a"}}}));
}

TEST(KubeServiceDiscoveryTest, ConditionsDecideReadyDrainingOrLeftOut) {
  KubeObjects services{Object("shop", "web", Service({{{"port", 80}}}))};
  Json endpoints = Json::array({
      Endpoint({"10.0.0.1"}, {{"ready", nullptr}}),                      // unknown: ready
      Endpoint({"10.0.0.2"}, {{"ready", true}, {"terminating", true}}),  // still ready
      Endpoint({"10.0.0.3"}, {{"ready", false}, {"serving", true}, {"terminating", true}}),
      Endpoint({"10.0.0.4"}, {{"ready", false}, {"terminating", true}}),  // serving unknown: yes
      Endpoint({"10.0.0.5"}, {{"ready", false}, {"serving", false}, {"terminating", true}}),
      Endpoint({"10.0.0.6"}, {{"ready", false}, {"serving", true}}),  // starting, not terminating
      Endpoint({"10.0.0.7"}, {{"ready", false}}),
  });
  KubeObjects slices{
      Object("shop", "web-1", Slice("web", "IPv4", Json::array({{{"port", 8080}}}), endpoints))};
  KubeServiceDiscovery discovery;
  DiscoveredServices out = discovery.Discover(services, slices);
  EXPECT_EQ(out.at({"shop", "web"}).ports.at(0).endpoints,
            (std::vector<ServiceEndpoint>{{"10.0.0.1", 8080, "", false},
                                          {"10.0.0.2", 8080, "", false},
                                          {"10.0.0.3", 8080, "", true},
                                          {"10.0.0.4", 8080, "", true}}));
}

TEST(KubeServiceDiscoveryTest, DuplicatesCountOnceReadyWinningAndFqdnSlicesAreSkipped) {
  KubeObjects services{Object("shop", "web", Service({{{"name", "http"}, {"port", 80}}})),
                       Object("shop", "v6", Service({{{"name", "http"}, {"port", 80}}}))};
  Json ports = Json::array({{{"name", "http"}, {"port", 8080}}});
  Json draining = {{"ready", false}, {"serving", true}, {"terminating", true}};
  KubeObjects slices{
      Object("shop", "web-1", Slice("web", "IPv4", ports, {Endpoint({"10.0.0.1"}, draining)})),
      Object("shop", "web-2",
             Slice("web", "IPv4", ports, {Endpoint({"10.0.0.1"}, {}), Endpoint({"10.0.0.2"}, {})})),
      Object("shop", "web-3", Slice("web", "IPv4", ports, {Endpoint({"10.0.0.2"}, draining)})),
      Object("shop", "web-4", Slice("web", "FQDN", ports, {Endpoint({"web.example.com"}, {})})),
      Object("shop", "v6-1", Slice("v6", "IPv6", ports, {Endpoint({"2001:db8::1"}, {})})),
      // Another namespace's slice of a Service of the same name is not this one's.
      Object("other", "web-1", Slice("web", "IPv4", ports, {Endpoint({"10.9.9.9"}, {})})),
      // A slice of no known Service.
      Object("shop", "gone-1", Slice("gone", "IPv4", ports, {Endpoint({"10.8.8.8"}, {})}))};
  KubeServiceDiscovery discovery;
  DiscoveredServices out = discovery.Discover(services, slices);
  EXPECT_EQ(out.size(), 2u);
  EXPECT_EQ(
      out.at({"shop", "web"}).ports.at(0).endpoints,
      (std::vector<ServiceEndpoint>{{"10.0.0.1", 8080, "", false}, {"10.0.0.2", 8080, "", false}}));
  EXPECT_EQ(out.at({"shop", "v6"}).ports.at(0).endpoints,
            (std::vector<ServiceEndpoint>{{"2001:db8::1", 8080, "", false}}));
}

TEST(KubeServiceDiscoveryTest, ServiceWithoutSlicesHasPortsWithoutEndpoints) {
  KubeObjects services{Object("shop", "web", Service({{{"name", "http"}, {"port", 80}}}))};
  KubeServiceDiscovery discovery;
  DiscoveredServices out = discovery.Discover(services, {});
  EXPECT_EQ(out.at({"shop", "web"}),
            (DiscoveredService{{DiscoveredServicePort{"http", 80, "", {}}}}));
}

// Objects are read once while they are the same objects: a change reads
// the changed ones, and the result is a fresh discovery's.
TEST(KubeServiceDiscoveryTest, ReadsOnlyChangedObjectsAndJoinsAsAFreshOne) {
  KubeObjects services{Object("shop", "web", Service(kWebPorts)),
                       Object("shop", "api", Service({{{"name", "http"}, {"port", 80}}}))};
  Json ports = Json::array({{{"name", "http"}, {"port", 8080}}});
  KubeObjects slices{
      Object("shop", "web-1", Slice("web", "IPv4", kSlicePorts, {Endpoint({"10.0.0.1"}, {})})),
      Object("shop", "api-1", Slice("api", "IPv4", ports, {Endpoint({"10.0.1.1"}, {})}))};
  KubeServiceDiscovery discovery;
  auto fresh = [&] { return KubeServiceDiscovery().Discover(services, slices); };
  EXPECT_EQ(discovery.Discover(services, slices), fresh());
  EXPECT_EQ(discovery.objects_read(), 4u);
  EXPECT_EQ(discovery.Discover(services, slices), fresh());
  EXPECT_EQ(discovery.objects_read(), 4u) << "nothing changed: nothing read";

  // A slice changed, one added, a Service's ports changed: those are read.
  slices["shop/web-1"] =
      Object("shop", "web-1", Slice("web", "IPv4", kSlicePorts, {Endpoint({"10.0.0.9"}, {})}))
          .second;
  slices.insert(Object("shop", "api-2", Slice("api", "IPv4", ports, {Endpoint({"10.0.1.2"}, {})})));
  services["shop/api"] = Object("shop", "api", Service({{{"name", "http"}, {"port", 81}}})).second;
  const DiscoveredServices changed = discovery.Discover(services, slices);
  EXPECT_EQ(changed, fresh());
  EXPECT_EQ(discovery.objects_read(), 7u);
  EXPECT_EQ(changed.at({"shop", "api"}).ports.at(0).port, 81u);
  EXPECT_EQ(changed.at({"shop", "api"}).ports.at(0).endpoints.size(), 2u);
  EXPECT_EQ(changed.at({"shop", "web"}).ports.at(0).endpoints.at(0).address, "10.0.0.9");

  // A slice gone: its endpoints go, nothing is read.
  slices.erase("shop/api-2");
  EXPECT_EQ(discovery.Discover(services, slices).at({"shop", "api"}).ports.at(0).endpoints.size(),
            1u);
  EXPECT_EQ(discovery.objects_read(), 7u);
}

}  // namespace
}  // namespace holdfast
