#include "src/translate/translator.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_join.h"
#include "envoy/config/cluster/v3/cluster.pb.h"
#include "envoy/config/endpoint/v3/endpoint.pb.h"
#include "envoy/config/listener/v3/listener.pb.h"
#include "envoy/config/route/v3/route.pb.h"
#include "envoy/extensions/filters/http/cors/v3/cors.pb.h"
#include "envoy/extensions/filters/http/router/v3/router.pb.h"
#include "envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.pb.h"
#include "envoy/extensions/transport_sockets/tls/v3/tls.pb.h"
#include "src/common/protowire.h"
#include "src/translate/cluster.h"
#include "src/translate/names.h"
#include "src/translate/object_index.h"
#include "src/translate/route.h"

namespace holdfast {
namespace {

namespace route_v3 = envoy::config::route::v3;
using envoy::config::listener::v3::Listener;
using envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager;

// A route after delegation is expanded, with the object it belongs to.
struct FlatRoute {
  const Route* route = nullptr;
  std::string ns;
  ObjectStatus* status = nullptr;
  // Set instead of `route` for a delegation that could not be followed.
  std::optional<route_v3::Route> synthesized;
};

std::string PathPrefixOf(const Route& route) {
  return route.match.path.kind == StringMatch::Kind::kPrefix ? route.match.path.value : "";
}

class Flattener {
 public:
  Flattener(const ObjectIndex& index, StatusMap& statuses, uint32_t missing_status)
      : index_(index), statuses_(statuses), missing_status_(missing_status) {}

  std::vector<FlatRoute> Flatten(const GatewayObject& owner, const std::vector<Route>& routes) {
    std::vector<FlatRoute> out;
    std::vector<ObjectKey> stack = {owner.key()};
    Expand(owner, routes, "", stack, &out);
    return out;
  }

 private:
  void Expand(const GatewayObject& owner, const std::vector<Route>& routes,
              const std::string& parent_prefix, std::vector<ObjectKey>& stack,
              std::vector<FlatRoute>* out) {
    ObjectStatus& status = statuses_[owner.key()];
    for (const Route& route : routes) {
      if (!parent_prefix.empty() && parent_prefix != "/" &&
          PathPrefixOf(route).rfind(parent_prefix, 0) != 0) {
        status.Warn(absl::StrCat(route.path, ".match"),
                    absl::StrCat("a delegated route must match a prefix under \"", parent_prefix,
                                 "\"; route ignored"),
                    route.location);
        continue;
      }
      const auto* delegate = std::get_if<Delegate>(&route.action);
      if (delegate == nullptr) {
        out->push_back({&route, owner.meta.ns, &status, std::nullopt});
        continue;
      }
      std::vector<const GatewayObject*> tables;
      for (size_t i = 0; i < delegate->route_tables.size(); ++i) {
        const ObjectRef& ref = delegate->route_tables[i];
        const GatewayObject* table = index_.Find(kind::kRouteTable, ref, owner.meta.ns);
        if (table == nullptr) {
          status.Warn(absl::StrCat(route.path, ".delegate.routeTables[", i, "]"),
                      absl::StrCat("route table ", ref.ns.empty() ? owner.meta.ns : ref.ns, "/",
                                   ref.name, " not found; the route answers ", missing_status_),
                      route.location);
          out->push_back(Synthesized(route, owner.meta.ns, &status, missing_status_,
                                     "route table not found\n"));
          continue;
        }
        tables.push_back(table);
      }
      if (delegate->selector) {
        for (const GatewayObject* table :
             index_.Select(kind::kRouteTable, *delegate->selector, owner.meta.ns)) {
          tables.push_back(table);
        }
      }
      std::stable_sort(tables.begin(), tables.end(), [](const auto* a, const auto* b) {
        const int wa = std::get<RouteTableSpec>(a->spec).weight;
        const int wb = std::get<RouteTableSpec>(b->spec).weight;
        return wa != wb ? wa < wb : a->key() < b->key();
      });
      tables.erase(std::unique(tables.begin(), tables.end()), tables.end());
      for (const GatewayObject* table : tables) {
        if (std::find(stack.begin(), stack.end(), table->key()) != stack.end()) {
          std::vector<std::string> cycle;
          for (const ObjectKey& k : stack) cycle.push_back(k.ToString());
          cycle.push_back(table->key().ToString());
          status.Warn(absl::StrCat(route.path, ".delegate"),
                      absl::StrCat("delegation cycle: ", absl::StrJoin(cycle, " -> "),
                                   "; the route answers 508"),
                      route.location);
          out->push_back(Synthesized(route, owner.meta.ns, &status, 508, "delegation cycle\n"));
          continue;
        }
        stack.push_back(table->key());
        Expand(*table, std::get<RouteTableSpec>(table->spec).routes, PathPrefixOf(route), stack,
               out);
        stack.pop_back();
      }
    }
  }

  static FlatRoute Synthesized(const Route& route, const std::string& ns, ObjectStatus* status,
                               uint32_t code, const std::string& body) {
    route_v3::Route r;
    if (!route.name.empty()) r.set_name(route.name);
    r.mutable_match()->set_prefix(PathPrefixOf(route).empty() ? "/" : PathPrefixOf(route));
    r.mutable_direct_response()->set_status(code);
    r.mutable_direct_response()->mutable_body()->set_inline_string(body);
    return {nullptr, ns, status, std::move(r)};
  }

  const ObjectIndex& index_;
  StatusMap& statuses_;
  uint32_t missing_status_;
};

HttpConnectionManager MakeHcm(const std::string& stat_prefix, const std::string& route_config,
                              bool cors) {
  HttpConnectionManager hcm;
  hcm.set_stat_prefix(stat_prefix);
  auto* rds = hcm.mutable_rds();
  rds->set_route_config_name(route_config);
  rds->mutable_config_source()->mutable_ads();
  rds->mutable_config_source()->set_resource_api_version(envoy::config::core::v3::V3);
  if (cors) {
    auto* filter = hcm.add_http_filters();
    filter->set_name("envoy.filters.http.cors");
    filter->mutable_typed_config()->PackFrom(envoy::extensions::filters::http::cors::v3::Cors());
  }
  auto* router = hcm.add_http_filters();
  router->set_name("envoy.filters.http.router");
  router->mutable_typed_config()->PackFrom(envoy::extensions::filters::http::router::v3::Router());
  return hcm;
}

// Whether `vs` served one of its domains on `scope` in the last translation.
bool IsIncumbent(const std::map<std::pair<std::string, std::string>, ObjectKey>& owners,
                 const std::string& scope, const GatewayObject& vs) {
  for (const std::string& domain : std::get<VirtualServiceSpec>(vs.spec).domains) {
    auto it = owners.find({scope, domain});
    if (it != owners.end() && it->second == vs.key()) return true;
  }
  return false;
}


// What translated routes can depend on besides their own object: the route
// tables (content) and which upstreams exist (not their endpoints).
std::string RoutingEpoch(const ObjectIndex& index) {
  std::string input;
  for (const GatewayObject* table : index.OfKind(kind::kRouteTable)) {
    absl::StrAppend(&input, table->meta.ns, "/", table->meta.name, "=", table->content_digest, "\n");
  }
  for (const GatewayObject* upstream : index.OfKind(kind::kUpstream)) {
    absl::StrAppend(&input, upstream->meta.ns, "/", upstream->meta.name, "\n");
  }
  return ContentDigest(input);
}

std::string StatPrefix(const std::string& name) {
  std::string out = name;
  std::replace(out.begin(), out.end(), '/', '.');
  return out;
}

}  // namespace

TranslationOutput Translator::Translate(const TranslationInput& input) {
  TranslationOutput output;
  StatusMap& statuses = output.statuses;

  // 1. The objects in effect: valid ones, and the last accepted version of
  //    invalid ones.
  std::map<ObjectKey, const GatewayObject*> effective;
  for (const auto& [key, object] : input.objects) {
    effective[key] = &object;
    ObjectStatus& status = statuses[key];
    status.key = key;
    status.location = object.meta.location;
  }
  for (const auto& [key, errors] : input.invalid) {
    ObjectStatus& status = statuses[key];
    status.key = key;
    for (const FieldError& e : errors) status.Reject(e.path, e.message, e.location);
    if (!errors.empty()) status.location = errors.front().location;
    auto last = last_accepted_.find(key);
    if (last != last_accepted_.end()) {
      effective[key] = &last->second;
      status.serving_last_good = true;
    }
  }
  ObjectIndex index;
  for (const auto& [key, object] : effective) index.Add(object);

  std::vector<ResourcePtr>& resources = output.resources;

  // 2. Upstreams: clusters and load assignments, reused when unchanged.
  std::map<ObjectKey, UpstreamOutput> next_cache;
  for (const GatewayObject* upstream : index.OfKind(kind::kUpstream)) {
    ObjectStatus& status = statuses[upstream->key()];
    auto cached = upstream_cache_.find(upstream->key());
    UpstreamOutput out;
    if (cached != upstream_cache_.end() && cached->second.digest == upstream->content_digest) {
      out = cached->second;
      for (const FieldError& w : out.warnings) status.Warn(w.path, w.message, w.location);
    } else {
      ObjectStatus scratch;
      scratch.location = upstream->meta.location;
      out.digest = upstream->content_digest;
      out.resources = TranslateUpstream(*upstream, &scratch);
      out.warnings = scratch.reasons;
      for (const FieldError& w : out.warnings) status.Warn(w.path, w.message, w.location);
    }
    resources.insert(resources.end(), out.resources.begin(), out.resources.end());
    next_cache.emplace(upstream->key(), std::move(out));
  }
  upstream_cache_ = std::move(next_cache);

  // 3. Virtual services: routes with delegation expanded, translated once for
  //    gateways and once for proxyless gRPC clients. Reused as long as the
  //    service and everything routing can depend on (route tables, which
  //    upstreams exist) are unchanged; endpoint changes never invalidate.
  const std::string epoch = RoutingEpoch(index);
  auto resolver_for = [&](const std::string& ns) {
    return [&index, ns](const ObjectRef& ref) -> std::string {
      const GatewayObject* upstream = index.Find(kind::kUpstream, ref, ns);
      return upstream == nullptr ? "" : names::Cluster(upstream->meta.ns, upstream->meta.name);
    };
  };
  std::map<ObjectKey, ServiceOutput> next_services;
  for (const GatewayObject* vs : index.OfKind(kind::kVirtualService)) {
    auto cached = service_cache_.find(vs->key());
    if (cached != service_cache_.end() && cached->second.digest == vs->content_digest &&
        cached->second.epoch == epoch) {
      for (const auto& [key, warning] : cached->second.warnings) {
        statuses[key].key = key;
        statuses[key].Warn(warning.path, warning.message, warning.location);
      }
      next_services.emplace(vs->key(), std::move(cached->second));
      continue;
    }
    ServiceOutput out;
    out.digest = vs->content_digest;
    out.epoch = epoch;
    StatusMap scratch;  // warnings of this service and the tables it uses
    Flattener flattener(index, scratch, options_.missing_upstream_status);
    const auto& spec = std::get<VirtualServiceSpec>(vs->spec);
    route_v3::VirtualHost for_gateway, for_grpc;
    const std::string vhost_name = absl::StrCat(vs->meta.ns, "/", vs->meta.name);
    for_gateway.set_name(vhost_name);
    for_grpc.set_name(vhost_name);
    for (const std::string& domain : spec.domains) {
      for_gateway.add_domains(domain);
      for_grpc.add_domains(domain);
    }
    for (const FlatRoute& flat : flattener.Flatten(*vs, spec.routes)) {
      if (flat.synthesized) {
        *for_gateway.add_routes() = *flat.synthesized;
        route_v3::Route* grpc_route = for_grpc.add_routes();
        *grpc_route = *flat.synthesized;
        grpc_route->clear_direct_response();  // gRPC clients take forwarding routes only
        grpc_route->mutable_route()->set_cluster(kUnroutableCluster);
        continue;
      }
      RouteTarget target{resolver_for(flat.ns), options_.missing_upstream_status, false};
      *for_gateway.add_routes() = TranslateRoute(*flat.route, flat.ns, target, flat.status);
      out.cors |= UsesCors(*flat.route);
      target.for_grpc = true;
      *for_grpc.add_routes() = TranslateRoute(*flat.route, flat.ns, target, flat.status);
    }
    for (const route_v3::Route& r : for_grpc.routes()) {
      out.uses_unroutable |= r.route().cluster() == kUnroutableCluster;
    }
    for (const auto& [key, status] : scratch) {
      for (const FieldError& reason : status.reasons) {
        out.warnings.push_back({key, reason});
        statuses[key].key = key;
        statuses[key].Warn(reason.path, reason.message, reason.location);
      }
    }
    for_gateway.SerializeToString(&out.gateway_vhost);
    route_v3::RouteConfiguration grpc_routes;
    grpc_routes.set_name(names::GrpcRoutes(vs->key()));
    *grpc_routes.add_virtual_hosts() = std::move(for_grpc);
    out.grpc_routes = Resource::FromMessage(grpc_routes.name(), grpc_routes);
    for (const std::string& domain : spec.domains) {
      if (domain.find('*') != std::string::npos) continue;  // gRPC targets are exact names
      Listener listener;
      listener.set_name(domain);
      listener.mutable_api_listener()->mutable_api_listener()->PackFrom(
          MakeHcm(StatPrefix(grpc_routes.name()), grpc_routes.name(), false));
      out.grpc_listeners.emplace(domain, Resource::FromMessage(domain, listener));
    }
    next_services.emplace(vs->key(), std::move(out));
  }
  service_cache_ = std::move(next_services);

  // 4. Gateways: a listener and a route configuration each.
  std::map<std::pair<std::string, std::string>, ObjectKey> next_owners;
  std::map<std::pair<std::string, uint32_t>, ObjectKey> bound;
  for (const GatewayObject* gateway : index.OfKind(kind::kGateway)) {
    const auto& spec = std::get<GatewaySpec>(gateway->spec);
    ObjectStatus& status = statuses[gateway->key()];
    auto [slot, inserted] = bound.emplace(std::make_pair(spec.bind_address, spec.port), gateway->key());
    if (!inserted) {
      status.Reject("spec.port", absl::StrCat(spec.bind_address, ":", spec.port,
                                              " is already used by ", slot->second.ToString()));
      continue;
    }

    std::vector<const GatewayObject*> selected;
    for (size_t i = 0; i < spec.virtual_services.size(); ++i) {
      const GatewayObject* vs =
          index.Find(kind::kVirtualService, spec.virtual_services[i], gateway->meta.ns);
      if (vs == nullptr) {
        status.Warn(absl::StrCat("spec.virtualServices[", i, "]"),
                    absl::StrCat("virtual service ", spec.virtual_services[i].name, " not found"));
        continue;
      }
      selected.push_back(vs);
    }
    if (spec.virtual_service_selector) {
      for (const GatewayObject* vs : index.Select(kind::kVirtualService,
                                                  *spec.virtual_service_selector,
                                                  gateway->meta.ns)) {
        selected.push_back(vs);
      }
    }
    std::sort(selected.begin(), selected.end(),
              [](const auto* a, const auto* b) { return a->key() < b->key(); });
    selected.erase(std::unique(selected.begin(), selected.end()), selected.end());
    const std::string gateway_id = gateway->key().ToString();
    std::stable_partition(selected.begin(), selected.end(), [&](const GatewayObject* vs) {
      return IsIncumbent(domain_owners_, gateway_id, *vs);
    });
    if (selected.empty()) status.Warn("spec", "selects no virtual service; every request gets 404");

    // The route configuration is assembled from the services' encoded
    // virtual hosts: a change to one service re-encodes only its own.
    const std::string routes_name = names::GatewayRoutes(gateway->key());
    std::string routes_bytes;
    AppendLengthDelimited(1, routes_name, &routes_bytes);  // RouteConfiguration.name
    std::map<std::string, ObjectKey> domain_owner;
    bool cors = false;
    for (const GatewayObject* vs : selected) {
      std::vector<std::string> conflicts;
      for (const std::string& domain : std::get<VirtualServiceSpec>(vs->spec).domains) {
        auto [owner, fresh] = domain_owner.emplace(domain, vs->key());
        if (!fresh) conflicts.push_back(absl::StrCat(domain, " (served by ", owner->second.ToString(), ")"));
        else next_owners[{gateway_id, domain}] = vs->key();
      }
      if (!conflicts.empty()) {
        statuses[vs->key()].Reject(
            "spec.domains",
            absl::StrCat("conflicts on ", gateway->key().ToString(), ": ",
                         absl::StrJoin(conflicts, ", "), "; not served by that gateway"));
        // Release the domains this service claimed before the conflict.
        for (auto it = domain_owner.begin(); it != domain_owner.end();) {
          if (it->second == vs->key()) {
            next_owners.erase({gateway_id, it->first});
            it = domain_owner.erase(it);
          } else {
            ++it;
          }
        }
        continue;
      }
      const ServiceOutput& service = service_cache_.at(vs->key());
      AppendLengthDelimited(2, service.gateway_vhost, &routes_bytes);  // .virtual_hosts
      cors |= service.cors;
    }

    Listener listener;
    listener.set_name(names::GatewayListener(gateway->key()));
    auto* socket = listener.mutable_address()->mutable_socket_address();
    socket->set_address(spec.bind_address);
    socket->set_port_value(spec.port);
    auto* chain = listener.add_filter_chains();
    auto* filter = chain->add_filters();
    filter->set_name("envoy.filters.network.http_connection_manager");
    filter->mutable_typed_config()->PackFrom(
        MakeHcm(StatPrefix(listener.name()), routes_name, cors));
    if (spec.tls) {
      envoy::extensions::transport_sockets::tls::v3::DownstreamTlsContext tls;
      auto* certificate = tls.mutable_common_tls_context()->add_tls_certificates();
      if (!spec.tls->secret.name.empty()) {
        const GatewayObject* secret = index.Find(kind::kSecret, spec.tls->secret, gateway->meta.ns);
        if (secret == nullptr) {
          status.Reject("spec.tls.secretRef",
                        absl::StrCat("secret ", spec.tls->secret.name, " not found"));
          continue;
        }
        const auto& material = std::get<SecretSpec>(secret->spec);
        certificate->mutable_certificate_chain()->set_inline_string(material.certificate);
        certificate->mutable_private_key()->set_inline_string(material.private_key);
      } else {
        certificate->mutable_certificate_chain()->set_filename(spec.tls->cert_file);
        certificate->mutable_private_key()->set_filename(spec.tls->key_file);
      }
      chain->mutable_transport_socket()->set_name("envoy.transport_sockets.tls");
      chain->mutable_transport_socket()->mutable_typed_config()->PackFrom(tls);
    }
    resources.push_back(Resource::FromBytes(routes_name,
                                            std::string(type_url::kRouteConfiguration),
                                            std::move(routes_bytes)));
    resources.push_back(Resource::FromMessage(listener.name(), listener));
  }

  // 5. Proxyless gRPC: an API listener per domain, a route config per service.
  if (options_.grpc_listeners) {
    bool unroutable = false;
    for (const auto& [key, service] : service_cache_) unroutable |= service.uses_unroutable;
    if (unroutable) {
      envoy::config::cluster::v3::Cluster cluster;
      cluster.set_name(kUnroutableCluster);
      cluster.set_type(envoy::config::cluster::v3::Cluster::EDS);
      cluster.mutable_eds_cluster_config()->mutable_eds_config()->mutable_ads();
      cluster.mutable_eds_cluster_config()->mutable_eds_config()->set_resource_api_version(
          envoy::config::core::v3::V3);
      cluster.mutable_connect_timeout()->set_seconds(1);
      envoy::config::endpoint::v3::ClusterLoadAssignment empty;
      empty.set_cluster_name(kUnroutableCluster);
      resources.push_back(Resource::FromMessage(kUnroutableCluster, cluster));
      resources.push_back(Resource::FromMessage(kUnroutableCluster, empty));
    }
    std::map<std::string, ObjectKey> listener_owner;
    std::vector<const GatewayObject*> services = index.OfKind(kind::kVirtualService);
    std::stable_partition(services.begin(), services.end(), [&](const GatewayObject* vs) {
      return IsIncumbent(domain_owners_, "", *vs);
    });
    for (const GatewayObject* vs : services) {
      const ServiceOutput& service = service_cache_.at(vs->key());
      bool any_listener = false;
      for (const auto& [domain, listener] : service.grpc_listeners) {
        auto [owner, fresh] = listener_owner.emplace(domain, vs->key());
        if (fresh) next_owners[{"", domain}] = vs->key();
        if (!fresh) {
          statuses[vs->key()].Warn(
              "spec.domains", absl::StrCat("gRPC clients of ", domain, " are served by ",
                                           owner->second.ToString()));
          continue;
        }
        resources.push_back(listener);
        any_listener = true;
      }
      if (any_listener) resources.push_back(service.grpc_routes);
    }
  }

  domain_owners_ = std::move(next_owners);

  // 6. Remember what was accepted, for when it breaks.
  for (const auto& [key, status] : statuses) {
    auto it = input.objects.find(key);
    if (it == input.objects.end() || status.state == StatusState::kRejected) continue;
    auto last = last_accepted_.find(key);
    if (last == last_accepted_.end() || last->second.content_digest != it->second.content_digest) {
      last_accepted_.insert_or_assign(key, it->second);
    }
  }
  for (auto it = last_accepted_.begin(); it != last_accepted_.end();) {
    it = (input.objects.contains(it->first) || input.invalid.contains(it->first))
             ? std::next(it)
             : last_accepted_.erase(it);
  }
  return output;
}

}  // namespace holdfast
