#include "src/translate/cluster.h"

#include <arpa/inet.h>

#include "absl/strings/str_cat.h"
#include "envoy/config/cluster/v3/cluster.pb.h"
#include "envoy/config/endpoint/v3/endpoint.pb.h"
#include "envoy/extensions/transport_sockets/tls/v3/tls.pb.h"
#include "envoy/extensions/upstreams/http/v3/http_protocol_options.pb.h"
#include "src/translate/names.h"
#include "src/translate/proto_duration.h"
#include "src/translate/service_assignment.h"

namespace holdfast {
namespace {

using envoy::config::cluster::v3::Cluster;
using envoy::config::endpoint::v3::ClusterLoadAssignment;

bool IsIpAddress(const std::string& address) {
  unsigned char buf[16];
  return inet_pton(AF_INET, address.c_str(), buf) == 1 ||
         inet_pton(AF_INET6, address.c_str(), buf) == 1;
}

ClusterLoadAssignment LoadAssignment(const std::string& name, const UpstreamSpec& spec) {
  ClusterLoadAssignment cla;
  cla.set_cluster_name(name);
  auto* locality = cla.add_endpoints();
  // gRPC clients reject a locality without an identity and ignore one
  // without a weight.
  locality->mutable_locality()->set_zone("default");
  locality->mutable_load_balancing_weight()->set_value(1);
  for (const UpstreamHost& host : spec.hosts) {
    auto* lb_endpoint = locality->add_lb_endpoints();
    auto* socket = lb_endpoint->mutable_endpoint()->mutable_address()->mutable_socket_address();
    socket->set_address(host.address);
    socket->set_port_value(host.port);
    lb_endpoint->mutable_load_balancing_weight()->set_value(host.weight);
  }
  return cla;
}

bool AllIpAddresses(const std::vector<UpstreamHost>& hosts) {
  for (const UpstreamHost& host : hosts) {
    if (!IsIpAddress(host.address)) return false;
  }
  return true;
}

// The Service port the Upstream names; nullptr (with a warning) when the
// Service or the port is not there: the cluster then has no endpoints, and
// only the routes to it answer 503.
const DiscoveredServicePort* ResolveServicePort(const GatewayObject& object,
                                                const DiscoveredServices& services,
                                                ObjectStatus* status) {
  const ServiceRef& ref = *std::get<UpstreamSpec>(*object.spec).service;
  const ServiceKey key = *ServiceKeyOf(object);
  const std::string service = absl::StrCat(key.ns, "/", key.name);
  auto found = services.find(key);
  if (found == services.end()) {
    status->Warn("spec.service", absl::StrCat("Service ", service, " not found: no endpoints"));
    return nullptr;
  }
  const DiscoveredServicePort* port = FindServicePort(found->second, ref);
  if (port == nullptr) {
    status->Warn(ref.port_name.empty() ? "spec.service.port" : "spec.service.portName",
                 absl::StrCat("Service ", service, " has no port ",
                              ref.port_name.empty() ? absl::StrCat(ref.port) : ref.port_name,
                              ": no endpoints"));
  }
  return port;
}

void AddEdsConfig(Cluster* cluster) {
  cluster->set_type(Cluster::EDS);
  auto* eds = cluster->mutable_eds_cluster_config()->mutable_eds_config();
  eds->mutable_ads();
  eds->set_resource_api_version(envoy::config::core::v3::V3);
}

void AddHttp2(Cluster* cluster) {
  envoy::extensions::upstreams::http::v3::HttpProtocolOptions options;
  options.mutable_explicit_http_config()->mutable_http2_protocol_options();
  (*cluster->mutable_typed_extension_protocol_options())
      ["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"]
          .PackFrom(options);
}

void SetLoadBalancing(LoadBalancing policy, Cluster* cluster, ObjectStatus* status) {
  switch (policy) {
    case LoadBalancing::kRoundRobin:
      cluster->set_lb_policy(Cluster::ROUND_ROBIN);
      break;
    case LoadBalancing::kLeastRequest:
      cluster->set_lb_policy(Cluster::LEAST_REQUEST);
      status->Warn("spec.loadBalancing", "LeastRequest is not supported by proxyless gRPC clients");
      break;
    case LoadBalancing::kRandom:
      cluster->set_lb_policy(Cluster::RANDOM);
      status->Warn("spec.loadBalancing", "Random is not supported by proxyless gRPC clients");
      break;
    case LoadBalancing::kRingHash:
      cluster->set_lb_policy(Cluster::RING_HASH);
      break;
  }
}

void AddUpstreamTls(const UpstreamTls& spec, Cluster* cluster, ObjectStatus* status) {
  envoy::extensions::transport_sockets::tls::v3::UpstreamTlsContext tls;
  tls.set_sni(spec.sni);
  if (spec.ca_file.empty()) {
    status->Warn("spec.tls.caFile", "not set: the upstream's certificate is not verified");
  } else {
    tls.mutable_common_tls_context()
        ->mutable_validation_context()
        ->mutable_trusted_ca()
        ->set_filename(spec.ca_file);
  }
  auto* socket = cluster->mutable_transport_socket();
  socket->set_name("envoy.transport_sockets.tls");
  socket->mutable_typed_config()->PackFrom(tls);
}

void AddCircuitBreakers(const CircuitBreakers& cb, Cluster* cluster) {
  auto* thresholds = cluster->mutable_circuit_breakers()->add_thresholds();
  if (cb.max_connections) thresholds->mutable_max_connections()->set_value(*cb.max_connections);
  if (cb.max_pending_requests) {
    thresholds->mutable_max_pending_requests()->set_value(*cb.max_pending_requests);
  }
  if (cb.max_requests) thresholds->mutable_max_requests()->set_value(*cb.max_requests);
  if (cb.max_retries) thresholds->mutable_max_retries()->set_value(*cb.max_retries);
}

void AddHealthCheck(const HealthCheck& hc, Cluster* cluster) {
  auto* check = cluster->add_health_checks();
  SetDuration(hc.interval, check->mutable_interval());
  SetDuration(hc.timeout, check->mutable_timeout());
  check->mutable_healthy_threshold()->set_value(hc.healthy_threshold);
  check->mutable_unhealthy_threshold()->set_value(hc.unhealthy_threshold);
  check->mutable_http_health_check()->set_path(hc.path);
}

void AddOutlierDetection(const OutlierDetection& od, Cluster* cluster) {
  auto* outlier = cluster->mutable_outlier_detection();
  outlier->mutable_consecutive_5xx()->set_value(od.consecutive_5xx);
  SetDuration(od.interval, outlier->mutable_interval());
  SetDuration(od.base_ejection_time, outlier->mutable_base_ejection_time());
  outlier->mutable_max_ejection_percent()->set_value(od.max_ejection_percent);
}

}  // namespace

std::vector<ResourcePtr> TranslateUpstream(const GatewayObject& object, ObjectStatus* status,
                                           const DiscoveredServices& services) {
  const auto& spec = std::get<UpstreamSpec>(*object.spec);
  const std::string name = names::Cluster(object.meta.ns, object.meta.name);
  const DiscoveredServicePort* port =
      spec.service.has_value() ? ResolveServicePort(object, services, status) : nullptr;

  Cluster cluster;
  cluster.set_name(name);
  SetDuration(spec.connect_timeout, cluster.mutable_connect_timeout());
  SetLoadBalancing(spec.load_balancing, &cluster, status);
  const bool eds = spec.service.has_value() || AllIpAddresses(spec.hosts);
  if (eds) {
    AddEdsConfig(&cluster);
  } else {
    cluster.set_type(Cluster::STRICT_DNS);
    *cluster.mutable_load_assignment() = LoadAssignment(name, spec);
    status->Warn("spec.hosts",
                 "hosts given by name make a DNS cluster, which proxyless gRPC "
                 "clients cannot use; give IP addresses to serve them too");
  }
  // A Service port's appProtocol may ask for HTTP/2; the Upstream has the
  // last word.
  if (spec.http2.value_or(port != nullptr && AppProtocolIsHttp2(port->app_protocol))) {
    AddHttp2(&cluster);
  }
  if (spec.tls) AddUpstreamTls(*spec.tls, &cluster, status);
  if (spec.circuit_breakers) AddCircuitBreakers(*spec.circuit_breakers, &cluster);
  if (spec.health_check) AddHealthCheck(*spec.health_check, &cluster);
  if (spec.outlier_detection) AddOutlierDetection(*spec.outlier_detection, &cluster);

  std::vector<ResourcePtr> out;
  out.push_back(Resource::FromMessage(name, cluster));
  if (eds) {
    out.push_back(Resource::FromMessage(
        name, spec.service ? ServiceLoadAssignment(name, port) : LoadAssignment(name, spec)));
  }
  return out;
}

}  // namespace holdfast
