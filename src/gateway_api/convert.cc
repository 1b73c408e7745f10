#include "src/gateway_api/convert.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "src/gateway_api/attachment.h"
#include "src/gateway_api/conversion_cache.h"
#include "src/gateway_api/holdfast_objects.h"
#include "src/gateway_api/listeners.h"
#include "src/gateway_api/rules.h"
#include "src/gateway_api/synthesized_names.h"

namespace holdfast::gateway_api {
namespace {

using nlohmann::json;

// Creation order, then namespace and name: the Gateway API's tie-breaker.
template <typename T>
bool Older(const T* a, const T* b) {
  return std::tie(a->meta.creation_timestamp, a->meta.ns, a->meta.name) <
         std::tie(b->meta.creation_timestamp, b->meta.ns, b->meta.name);
}

// The match's part of the Gateway API's precedence: exact paths, then
// regular expressions (implementation-specific: holdfast puts them before
// prefixes), then the longest prefix; then a method, more headers, more
// query parameters.
MatchPrecedence PrecedenceOf(const json& route) {
  const json& match = route["match"];
  const int kind = match.contains("exact") ? 0 : match.contains("regex") ? 1 : 2;
  const size_t length = kind == 2 ? match["prefix"].get<std::string>().size() : 0;
  const size_t headers = match.contains("headers") ? match["headers"].size() : 0;
  const size_t queries = match.contains("queryParams") ? match["queryParams"].size() : 0;
  return {kind, -static_cast<int64_t>(length), !match.contains("methods"),
          -static_cast<int64_t>(headers), -static_cast<int64_t>(queries)};
}

// A holdfast Gateway: the served listeners of one Gateway on one port.
struct Port {
  const Gateway* gateway;
  uint32_t port;
  std::vector<const ServedListener*> tls;  // its HTTPS listeners
};
using Ports = std::map<PortKey, Port>;

ObjectKey KeyOf(const Gateway& gateway) {
  return {kGatewayKind, gateway.meta.ns, gateway.meta.name};
}

// What attaching a route reads: holdfast's Gateways (oldest first), their
// served listeners, and the input.
struct Served {
  const std::vector<const Gateway*>& gateways;
  const std::vector<ServedListener>& listeners;
  const GatewayApiInput& input;
};

// The Gateway API's precedence: the match's, then the oldest route, its
// namespace and name, rule and match order (and its kind, so that an
// HTTPRoute and a GRPCRoute of one name on one host order one way).
bool Precedes(const PlacedRoute* a, const PlacedRoute* b) {
  const Meta& x = a->route->meta;
  const Meta& y = b->route->meta;
  return std::tie(a->precedence, x.creation_timestamp, x.ns, x.name, a->rule, a->match,
                  a->route->kind) < std::tie(b->precedence, y.creation_timestamp, y.ns, y.name,
                                             b->rule, b->match, b->route->kind);
}

// The first error the decoder finds in `routes` as the routes of one
// virtual service; nullopt when they decode.
std::optional<FieldError> RoutesError(json routes, HoldfastObjectDecoder& decoder) {
  FieldErrors errors;
  json spec = {{"domains", {"check.invalid"}}, {"routes", std::move(routes)}};
  if (decoder.Decode(kind::kVirtualService, "check", "check", spec, &errors)) return std::nullopt;
  return errors.errors().front();
}

// The rule's routes pass the decoder one by one, so that one bad rule (an
// invalid regex) is dropped alone instead of failing its virtual service.
std::optional<FieldError> CheckRoutes(const RouteRule& rule, const std::vector<json>& routes,
                                      HoldfastObjectDecoder& decoder) {
  std::optional<FieldError> error = RoutesError(routes, decoder);
  if (!error) return std::nullopt;
  return FieldError{
      rule.path, absl::StrCat(error->message, " (as holdfast's ", error->path, ")"), {}};
}

// Whether the routes of every convertible rule pass the decoder together:
// the common case, checked with one decoding instead of one per rule.
bool AllRoutesDecode(const std::vector<ConvertedRule>& rules, HoldfastObjectDecoder& decoder) {
  json routes = json::array();
  for (const ConvertedRule& rule : rules) {
    if (rule.unsupported) continue;
    for (const json& route : rule.routes) routes.push_back(route);
  }
  return !RoutesError(std::move(routes), decoder).has_value();
}

// Converts the rules of `route`: the routes of each rule the decoder
// takes (the others dropped), and the conditions that follow.
ConvertedRoute ConvertRules(const Route& route, const GatewayApiInput& input,
                            HoldfastObjectDecoder& decoder) {
  ConvertedRoute out;
  out.resolved = {"ResolvedRefs", true, "ResolvedRefs", "references resolved"};
  std::vector<ConvertedRule> rules;
  for (const RouteRule& rule : route.rules) rules.push_back(ConvertRule(route, rule, input));
  const bool all_decode = AllRoutesDecode(rules, decoder);
  for (size_t i = 0; i < rules.size(); ++i) {
    ConvertedRule& converted = rules[i];
    if (!converted.unsupported && !all_decode)
      converted.unsupported = CheckRoutes(route.rules[i], converted.routes, decoder);
    out.services.insert(out.services.end(), converted.services_read.begin(),
                        converted.services_read.end());
    for (const BackendProblem& problem : converted.backend_problems) {
      out.problems.push_back(problem.error);
      if (out.resolved.status)
        out.resolved = {"ResolvedRefs", false, problem.reason, problem.error.message};
    }
    std::vector<RouteSpec>& specs = out.rules.emplace_back();
    if (converted.unsupported) {
      out.problems.push_back(*converted.unsupported);
      if (!out.dropped) out.dropped = converted.unsupported;
      continue;
    }
    out.backends.insert(out.backends.end(), converted.backends.begin(), converted.backends.end());
    for (json& spec : converted.routes) {
      const MatchPrecedence precedence = PrecedenceOf(spec);
      specs.push_back({std::make_shared<const json>(std::move(spec)), precedence});
    }
  }
  std::sort(out.services.begin(), out.services.end());
  out.services.erase(std::unique(out.services.begin(), out.services.end()), out.services.end());
  std::sort(out.backends.begin(), out.backends.end());
  out.backends.erase(std::unique(out.backends.begin(), out.backends.end()), out.backends.end());
  return out;
}

// Sets the route's ResolvedRefs and, when rules were dropped,
// PartiallyInvalid or Accepted False on every parent.
void ApplyConverted(const ConvertedRoute& converted, GatewayApiStatus& status) {
  status.problems.insert(status.problems.end(), converted.problems.begin(),
                         converted.problems.end());
  const bool served = std::any_of(converted.rules.begin(), converted.rules.end(),
                                  [](const auto& rule) { return !rule.empty(); });
  for (RouteParentStatus& parent : status.parents) {
    SetCondition(parent.conditions, converted.resolved);
    if (!converted.dropped) continue;
    const std::string message =
        absl::StrCat(converted.dropped->path, ": ", converted.dropped->message);
    if (served) {
      SetCondition(parent.conditions, {"PartiallyInvalid", true, "UnsupportedValue", message});
    } else {
      SetCondition(parent.conditions, {"Accepted", false, "UnsupportedValue", message});
    }
  }
}

// Where the route's accepted parents attach it: listeners, ports, and
// each (port, host) once (a route attached twice to one host, through two
// listeners, is served once).
void AddAttachments(const std::vector<ParentAttachment>& parents, const Served& served,
                    RoutePart& part) {
  std::set<size_t> listeners;
  std::set<PortKey> ports;
  std::set<std::pair<PortKey, std::string>> hosts;
  for (const ParentAttachment& parent : parents) {
    if (!parent.accepted.status) continue;
    for (const Attachment& a : parent.attachments) {
      listeners.insert(static_cast<size_t>(a.listener - served.listeners.data()));
      const PortKey port{KeyOf(*a.listener->gateway), a.listener->listener->port};
      ports.insert(port);
      for (const std::string& host : a.hostnames) {
        if (hosts.emplace(port, host).second) part.hosts.emplace_back(port, host);
      }
    }
  }
  part.listeners.assign(listeners.begin(), listeners.end());
  part.ports.assign(ports.begin(), ports.end());
}

// The route's part: its status, and when its parents accept it, its rules
// (converted now, or `before`) and where they are placed.
RoutePart MakeRoutePart(const std::shared_ptr<const Route>& shared, const Served& served,
                        std::shared_ptr<const ConvertedRoute> before,
                        HoldfastObjectDecoder& decoder) {
  const Route& route = *shared;
  RoutePart part{.route = shared};
  std::vector<ParentAttachment> parents =
      AttachRoute(route, served.gateways, served.listeners, served.input);
  if (parents.empty()) return part;  // not attached to a Gateway of holdfast's
  GatewayApiStatus& status = *(part.status = std::make_shared<GatewayApiStatus>());
  status.key = route.key();
  status.generation = route.meta.generation;
  status.problems = route.errors.errors();
  for (ParentAttachment& parent : parents) {
    if (!route.errors.empty()) {
      const FieldError& first = route.errors.errors().front();
      parent.accepted = {"Accepted", false, "UnsupportedValue",
                         absl::StrCat(first.path, ": ", first.message)};
    }
    status.parents.push_back({parent.parent->raw, {parent.accepted}});
  }
  if (!route.errors.empty()) return part;
  part.converted = before ? std::move(before)
                          : std::make_shared<const ConvertedRoute>(
                                ConvertRules(route, served.input, decoder));
  ApplyConverted(*part.converted, status);
  for (size_t i = 0; i < parents.size(); ++i) {
    parents[i].accepted = *FindCondition(status.parents[i].conditions, "Accepted");
  }
  AddAttachments(parents, served, part);
  return part;
}

// Adds a decoded object to the output, its errors to the statuses of the
// objects it was made from.
void Record(const ObjectKey& key, const std::optional<GatewayObject>& object,
            const std::vector<FieldError>& errors, const SourceKeys& sources, Conversion& out) {
  if (!sources.empty()) {
    SourceKeys& made_from = out.made_from[key];
    made_from = made_from.Plus(sources);  // one Secret may serve several ports
  }
  for (const ObjectKey& source : sources) {
    for (const FieldError& e : errors) {
      out.statuses.Mutable(source).problems.push_back(
          {e.path, absl::StrCat(key.ToString(), ": ", e.message), {}});
    }
  }
  if (object) out.objects.push_back(*object);
}

void Emit(const std::string& kind, const std::string& ns, const std::string& name, const json& spec,
          const SourceKeys& sources, HoldfastObjectDecoder& decoder, Conversion& out) {
  FieldErrors errors;
  std::optional<GatewayObject> object = decoder.Decode(kind, ns, name, spec, &errors);
  Record({kind, ns, name}, object, errors.errors(), sources, out);
}

// The holdfast Gateway's `tls`: one certificate when the port's listeners
// share it; else each listener's certificate for its hostname (SNI), and
// the one of the listener without a hostname for every other client.
json TlsSpec(const Port& port, const GatewayApiInput& input, HoldfastObjectDecoder& decoder,
             Conversion& out) {
  std::map<std::string, std::vector<std::string>> names_by_secret;  // "" : the default
  std::string fallback;
  for (const ServedListener* listener : port.tls) {
    const std::string name = SecretName(listener->certificate_ns, listener->certificate->name);
    if (!names_by_secret.contains(name)) {
      const TlsSecret& secret =
          input.secrets.at(ServiceKey{listener->certificate_ns, listener->certificate->name});
      Emit(kind::kSecret, port.gateway->meta.ns, name,
           {{"certificate", secret.certificate}, {"privateKey", secret.private_key}},
           SourceKeys({KeyOf(*port.gateway)}), decoder, out);
    }
    std::vector<std::string>& names = names_by_secret[name];
    if (listener->listener->hostname.empty()) {
      fallback = name;
    } else {
      names.push_back(listener->listener->hostname);
    }
  }
  if (names_by_secret.size() == 1) {
    return {{"secretRef", {{"name", names_by_secret.begin()->first}}}};
  }
  json tls = json::object();
  if (!fallback.empty()) tls["secretRef"] = {{"name", fallback}};
  for (const auto& [secret, names] : names_by_secret) {
    if (!names.empty()) {
      tls["certificates"].push_back({{"serverNames", names}, {"secretRef", {{"name", secret}}}});
    }
  }
  return tls;
}

// Makes the virtual service of a host whose routes changed: its sources,
// and its object decoded again unless made of the same specs as before.
void MakeService(const Port& port, const std::string& hostname, HostRoutes& host,
                 HoldfastObjectDecoder& decoder) {
  std::vector<const PlacedRoute*> sorted;
  for (const PlacedRoute& r : host.placed) sorted.push_back(&r);
  std::stable_sort(sorted.begin(), sorted.end(), Precedes);
  std::vector<ObjectKey> sources;
  std::vector<std::shared_ptr<const json>> specs;
  for (const PlacedRoute* r : sorted) {
    sources.push_back(r->route->key());
    specs.push_back(r->spec);
  }
  std::sort(sources.begin(), sources.end());
  sources.erase(std::unique(sources.begin(), sources.end()), sources.end());
  host.sources = SourceKeys(std::move(sources));
  host.changed = false;
  if (host.service && host.service->routes == specs) return;
  // Clients of a port other than 80 and 443 send it in the Host header,
  // which Envoy matches as it is; the Gateway API ignores the port.
  json domains = {hostname};
  if (hostname != "*") domains.push_back(absl::StrCat(hostname, ":", port.port));
  json spec = {{"domains", domains}, {"routes", json::array()}};
  for (const PlacedRoute* r : sorted) spec["routes"].push_back(*r->spec);
  host.service_name = VirtualServiceName(port.gateway->meta.name, port.port, hostname);
  FieldErrors errors;
  DecodedService& service = host.service.emplace();
  service.object = decoder.Decode(kind::kVirtualService, port.gateway->meta.ns, host.service_name,
                                  spec, &errors);
  service.errors = errors.errors();
  service.routes = std::move(specs);
}

// The port's holdfast Gateway: decoded now, or as before when it lists the
// same virtual services with the same TLS.
void EmitGateway(const Port& port, std::vector<std::string> services, const json& tls,
                 const SourceKeys& sources, ConversionCache& cache, Conversion& out) {
  const std::string& ns = port.gateway->meta.ns;
  EmittedGateway wanted{std::move(services), tls.is_null() ? "" : tls.dump()};
  const std::string name = GatewayName(port.gateway->meta.name, port.port);
  const std::string cache_key = absl::StrCat(ns, "/", name);
  const EmittedGateway* emitted = cache.FindGateway(cache_key, wanted);
  if (emitted == nullptr) {
    json listed = json::array();
    for (const std::string& service : wanted.services) listed.push_back({{"name", service}});
    json spec = {{"port", port.port}, {"virtualServices", listed}};
    if (listed.empty()) {
      // No route attached yet: the listener serves 404s. A Kubernetes label
      // key cannot contain ':', so this selects nothing.
      spec["virtualServiceSelector"] = {{"labels", {{"gateway-api:none", "none"}}}};
    }
    if (!tls.is_null()) spec["tls"] = tls;
    FieldErrors errors;
    wanted.object = cache.decoder().Decode(kind::kGateway, ns, name, spec, &errors);
    wanted.errors = errors.errors();
    emitted = &cache.KeepGateway(cache_key, std::move(wanted));
  }
  Record({kind::kGateway, ns, name}, emitted->object, emitted->errors, sources, out);
}

// Calls `each` with `gateway` and the `routes`, in key order, once each.
template <typename Each>
void ForEachSource(const ObjectKey& gateway, const std::set<ObjectKey>& routes, Each each) {
  const ObjectKey* pending = &gateway;
  for (const ObjectKey& route : routes) {
    if (pending != nullptr && !(route < *pending)) {
      if (*pending < route) each(*pending);  // else it is this route's key
      pending = nullptr;
    }
    each(route);
  }
  if (pending != nullptr) each(*pending);
}

// A port's Gateway is made from the Gateway and every route attached to
// the port: the list made before while it is the same (a walk), else anew.
SourceKeys PortSources(const ObjectKey& gateway, PortRoutes* routes) {
  if (routes == nullptr) return SourceKeys({gateway});
  const std::vector<ObjectKey>& before = routes->sources.keys();
  auto next = before.begin();
  bool same = true;
  ForEachSource(gateway, routes->routes, [&](const ObjectKey& key) {
    same = same && next != before.end() && *next++ == key;
  });
  if (same && next == before.end()) return routes->sources;
  std::vector<ObjectKey> keys;
  keys.reserve(routes->routes.size() + 1);
  ForEachSource(gateway, routes->routes, [&](const ObjectKey& key) { keys.push_back(key); });
  routes->sources = SourceKeys(std::move(keys));
  return routes->sources;
}

// The port's virtual services (made again where their routes changed),
// its Secrets and its Gateway.
void EmitPort(const PortKey& key, const Port& port, const GatewayApiInput& input,
              ConversionCache& cache, Conversion& out) {
  const std::string& ns = port.gateway->meta.ns;
  PortRoutes* routes = cache.placements().Port(key);
  const SourceKeys sources = PortSources(key.first, routes);
  std::vector<std::string> services;
  if (routes != nullptr) {
    for (auto& [hostname, host] : routes->hosts) {
      if (host.changed) MakeService(port, hostname, host, cache.decoder());
      Record({kind::kVirtualService, ns, host.service_name}, host.service->object,
             host.service->errors, host.sources, out);
      services.push_back(host.service_name);
    }
  }
  json tls;  // null: no TLS
  if (!port.tls.empty()) tls = TlsSpec(port, input, cache.decoder(), out);
  EmitGateway(port, std::move(services), tls, sources, cache, out);
}

// An Upstream per Service port some route uses.
void EmitUpstreams(ConversionCache& cache, Conversion& out) {
  for (const auto& entry : cache.placements().backends()) {
    const BackendService& backend = entry.first;  // captured: not a structured binding
    const std::string name = UpstreamName(backend.name, backend.port, backend.http2);
    const DecodedUpstream& upstream = cache.UpstreamOf(backend, [&] {
      json spec = {{"service", {{"name", backend.name}, {"port", backend.port}}}};
      if (backend.http2) spec["http2"] = true;
      FieldErrors errors;
      DecodedUpstream decoded;
      decoded.object = cache.decoder().Decode(kind::kUpstream, backend.ns, name, spec, &errors);
      decoded.errors = errors.errors();
      return decoded;
    });
    Record({kind::kUpstream, backend.ns, name}, upstream.object, upstream.errors, SourceKeys(),
           out);
  }
}

// The routes' statuses, and how many routes attach to each listener.
void AddRouteStatuses(const std::vector<ServedListener>& served, const RoutePlacements& placements,
                      Conversion& out) {
  placements.ForEachPart([&](const RoutePart& part) {
    if (part.status) out.statuses.Put(part.status);
  });
  for (const auto& [listener, routes] : placements.attached()) {
    served[listener].status->attached_routes = routes;
  }
}

}  // namespace

Conversion ConvertGatewayApi(const GatewayApiInput& input) {
  ConversionCache cache;
  return ConvertGatewayApi(input, cache);
}

Conversion ConvertGatewayApi(const GatewayApiInput& input, ConversionCache& cache) {
  const RoutePlacements::Changes changes = cache.Begin(input);
  Conversion out;
  std::set<std::string> classes;
  for (const GatewayClass& c : input.classes) {
    if (c.controller_name != kControllerName) continue;
    classes.insert(c.meta.name);
    const ObjectKey key{kGatewayClassKind, "", c.meta.name};
    GatewayApiStatus& status = out.statuses.Mutable(key);
    status.generation = c.meta.generation;
    status.conditions = {{"Accepted", true, "Accepted", "served by holdfast"}};
  }
  std::vector<const Gateway*> gateways;
  for (const Gateway& g : input.gateways) {
    if (classes.contains(g.class_name)) gateways.push_back(&g);
  }
  std::sort(gateways.begin(), gateways.end(), Older<Gateway>);
  const std::vector<ServedListener> listeners = PlanListeners(gateways, input, &out.statuses);
  Ports ports;
  for (const ServedListener& s : listeners) {
    Port& port = ports[{KeyOf(*s.gateway), s.listener->port}];
    port.gateway = s.gateway;
    port.port = s.listener->port;
    if (s.certificate != nullptr) port.tls.push_back(&s);
  }
  const Served served{gateways, listeners, input};
  cache.placements().Update(
      input.routes, changes,
      [&](const std::shared_ptr<const Route>& route, std::shared_ptr<const ConvertedRoute> before) {
        return MakeRoutePart(route, served, std::move(before), cache.decoder());
      });
  AddRouteStatuses(listeners, cache.placements(), out);
  for (const auto& [key, port] : ports) EmitPort(key, port, input, cache, out);
  EmitUpstreams(cache, out);
  cache.End();
  return out;
}

}  // namespace holdfast::gateway_api
