#include "src/translate/virtual_service.h"

#include <algorithm>

#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "envoy/config/listener/v3/listener.pb.h"
#include "envoy/config/route/v3/route.pb.h"
#include "src/translate/envoy_validation.h"
#include "src/translate/flattener.h"
#include "src/translate/hcm.h"
#include "src/translate/names.h"
#include "src/translate/route.h"

namespace holdfast {
namespace {

namespace route_v3 = envoy::config::route::v3;
using envoy::config::listener::v3::Listener;

// The service's routes for gateways and for gRPC clients, and what they need.
struct VirtualHosts {
  route_v3::VirtualHost for_gateway;
  route_v3::VirtualHost for_grpc;
  bool cors = false;
};

VirtualHosts TranslateRoutes(const GatewayObject& vs, const ServiceContext& context,
                             StatusMap& scratch, std::vector<size_t>* upstreams_named) {
  VirtualHosts hosts;
  const auto& spec = std::get<VirtualServiceSpec>(*vs.spec);
  const std::string vhost_name = absl::StrCat(vs.meta.ns, "/", vs.meta.name);
  hosts.for_gateway.set_name(vhost_name);
  hosts.for_grpc.set_name(vhost_name);
  for (const std::string& domain : spec.domains) {
    hosts.for_gateway.add_domains(domain);
    hosts.for_grpc.add_domains(domain);
  }
  const ObjectIndex& index = *context.index;
  auto resolver_for = [&index, upstreams_named](const std::string& ns) {
    return [&index, upstreams_named, ns](const ObjectRef& ref) -> std::string {
      upstreams_named->push_back(UpstreamRefHash(ref.ns.empty() ? ns : ref.ns, ref.name));
      const GatewayObject* upstream = index.Find(kind::kUpstream, ref, ns);
      return upstream == nullptr ? "" : names::Cluster(upstream->meta.ns, upstream->meta.name);
    };
  };
  Flattener flattener(index, scratch, context.missing_upstream_status);
  for (const FlatRoute& flat : flattener.Flatten(vs, spec.routes)) {
    if (flat.synthesized) {
      *hosts.for_gateway.add_routes() = *flat.synthesized;
      route_v3::Route* grpc_route = hosts.for_grpc.add_routes();
      *grpc_route = *flat.synthesized;
      grpc_route->clear_direct_response();  // gRPC clients take forwarding routes only
      grpc_route->mutable_route()->set_cluster(kUnroutableCluster);
      continue;
    }
    RouteTarget target{resolver_for(flat.ns), context.missing_upstream_status, false};
    *hosts.for_gateway.add_routes() = TranslateRoute(*flat.route, flat.ns, target, flat.status);
    hosts.cors |= UsesCors(*flat.route);
    target.for_grpc = true;
    *hosts.for_grpc.add_routes() = TranslateRoute(*flat.route, flat.ns, target, flat.status);
  }
  return hosts;
}

absl::Status Refused(absl::string_view what, const absl::Status& status) {
  return absl::InvalidArgumentError(absl::StrCat("Envoy would refuse its ", what,
                                                 " (every service sharing it would be "
                                                 "refused too): ",
                                                 status.message()));
}

}  // namespace

absl::StatusOr<ServiceOutput> TranslateVirtualService(const GatewayObject& vs,
                                                      const ServiceContext& context) {
  ServiceOutput out;
  out.digest = vs.content_digest;
  const auto& routes = std::get<VirtualServiceSpec>(*vs.spec).routes;
  if (std::any_of(routes.begin(), routes.end(),
                  [](const Route& r) { return std::holds_alternative<Delegate>(r.action); })) {
    out.depends_on.route_tables = context.route_tables_epoch;
  }
  StatusMap scratch;  // warnings of this service and the tables it uses
  std::vector<size_t>& upstreams = out.depends_on.upstreams;
  VirtualHosts hosts = TranslateRoutes(vs, context, scratch, &upstreams);
  std::sort(upstreams.begin(), upstreams.end());
  upstreams.erase(std::unique(upstreams.begin(), upstreams.end()), upstreams.end());
  upstreams.shrink_to_fit();
  if (absl::Status valid = ValidateEnvoyResource(hosts.for_gateway); !valid.ok()) {
    return Refused("virtual host", valid);
  }
  out.cors = hosts.cors;
  for (const route_v3::Route& r : hosts.for_grpc.routes()) {
    out.uses_unroutable |= r.route().cluster() == kUnroutableCluster;
  }
  for (const auto& [key, status] : scratch) {
    for (const FieldError& reason : status.reasons) out.warnings.push_back({key, reason});
  }
  out.gateway_vhost = SerializeDeterministic(hosts.for_gateway);
  out.gateway_vhost_digest = ContentDigest(out.gateway_vhost);

  route_v3::RouteConfiguration grpc_routes;
  grpc_routes.set_name(names::GrpcRoutes(vs.key()));
  *grpc_routes.add_virtual_hosts() = std::move(hosts.for_grpc);
  if (absl::Status valid = ValidateEnvoyResource(grpc_routes); !valid.ok()) {
    return Refused("gRPC route configuration", valid);
  }
  out.grpc_routes = Resource::FromMessage(grpc_routes.name(), grpc_routes);
  for (const std::string& domain : std::get<VirtualServiceSpec>(*vs.spec).domains) {
    if (domain.find('*') != std::string::npos) continue;  // gRPC targets are exact names
    Listener listener;
    listener.set_name(domain);
    listener.mutable_api_listener()->mutable_api_listener()->PackFrom(
        MakeHcm(StatPrefix(grpc_routes.name()), grpc_routes.name(), false));
    if (absl::Status valid = ValidateEnvoyResource(listener); !valid.ok()) {
      return Refused(absl::StrCat("gRPC listener ", domain), valid);
    }
    out.grpc_listeners.emplace(domain, Resource::FromMessage(domain, listener));
  }
  out.gateway_claims =
      absl::HashOf(std::get<VirtualServiceSpec>(*vs.spec).domains, vs.meta.ns, vs.meta.name);
  out.grpc_claims = absl::HashOf(vs.meta.ns, vs.meta.name);
  for (const auto& [domain, listener] : out.grpc_listeners) {
    out.grpc_claims = absl::HashOf(out.grpc_claims, domain);
  }
  return out;
}

const ServiceOutput* FindServed(const ServedServices& served,
                                ServedServices::const_iterator& cursor, const GatewayObject& vs) {
  while (cursor != served.end() && cursor->first != &vs && KeyLess(*cursor->first, vs)) ++cursor;
  if (cursor == served.end()) return nullptr;
  return cursor->first == &vs || !KeyLess(vs, *cursor->first) ? cursor->second : nullptr;
}

std::string RouteTablesEpoch(const ObjectIndex& index) {
  std::string input;
  for (const GatewayObject* table : index.OfKind(kind::kRouteTable)) {
    absl::StrAppend(&input, table->meta.ns, "/", table->meta.name, "=", table->content_digest,
                    "\n");
  }
  return ContentDigest(input);
}

size_t UpstreamRefHash(const std::string& ns, const std::string& name) {
  return absl::HashOf(ns, name);
}

}  // namespace holdfast
