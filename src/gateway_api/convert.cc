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

// One holdfast route in a virtual service, with what orders it. The spec
// is shared: a route attached to many hosts is converted once (and kept
// by the cache while the route is the same).
struct PlacedRoute {
  const Route* route;
  size_t rule;
  size_t match;
  std::shared_ptr<const json> spec;
  MatchPrecedence precedence;
};

// A holdfast Gateway: the served listeners of one Gateway on one port.
struct Port {
  const Gateway* gateway;
  uint32_t port;
  std::vector<const ServedListener*> tls;                 // its HTTPS listeners
  std::map<std::string, std::vector<PlacedRoute>> hosts;  // hostname -> routes
  std::set<ObjectKey> sources;                            // the Gateway and its routes
};
using Ports = std::map<std::pair<ObjectKey, uint32_t>, Port>;

ObjectKey KeyOf(const Gateway& gateway) {
  return {kGatewayKind, gateway.meta.ns, gateway.meta.name};
}

// The Gateway API's precedence: the match's, then the oldest route, its
// namespace and name, rule and match order.
bool Precedes(const PlacedRoute* a, const PlacedRoute* b) {
  const Meta& x = a->route->meta;
  const Meta& y = b->route->meta;
  return std::tie(a->precedence, x.creation_timestamp, x.ns, x.name, a->rule, a->match) <
         std::tie(b->precedence, y.creation_timestamp, y.ns, y.name, b->rule, b->match);
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
  return out;
}

// Sets the route's ResolvedRefs and, when rules were dropped,
// PartiallyInvalid or Accepted False on every parent.
void ApplyConverted(const ConvertedRoute& converted, GatewayApiStatus& status,
                    std::set<BackendService>& backends) {
  status.problems.insert(status.problems.end(), converted.problems.begin(),
                         converted.problems.end());
  backends.insert(converted.backends.begin(), converted.backends.end());
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

void PlaceRoute(const Route& route, const std::vector<ParentAttachment>& parents,
                const ConvertedRoute& converted, Ports& ports,
                std::map<ListenerStatus*, std::set<ObjectKey>>& attached) {
  for (const ParentAttachment& parent : parents) {
    if (!parent.accepted.status) continue;
    for (const Attachment& a : parent.attachments) {
      attached[a.listener->status].insert(route.key());
      Port& port = ports.at({KeyOf(*a.listener->gateway), a.listener->listener->port});
      port.sources.insert(route.key());
      for (const std::string& host : a.hostnames) {
        std::vector<PlacedRoute>& placed = port.hosts[host];
        for (size_t i = 0; i < converted.rules.size(); ++i) {
          for (size_t m = 0; m < converted.rules[i].size(); ++m) {
            // A route attached twice to one host (two listeners) is served once.
            bool dup = std::any_of(placed.begin(), placed.end(), [&](const PlacedRoute& p) {
              return p.route == &route && p.rule == i && p.match == m;
            });
            const RouteSpec& spec = converted.rules[i][m];
            if (!dup) placed.push_back({&route, i, m, spec.spec, spec.precedence});
          }
        }
      }
    }
  }
}

// The route's rules, converted now or as they were before.
const ConvertedRoute& RulesOf(const Route& route, const GatewayApiInput& input,
                              ConversionCache& cache, ConvertedRoute& fresh) {
  if (const ConvertedRoute* kept = cache.FindRoute(route)) return *kept;
  fresh = ConvertRules(route, input, cache.decoder());
  cache.KeepRoute(route, fresh);
  return fresh;
}

void ConvertRoute(const Route& route, const std::vector<const Gateway*>& gateways,
                  const std::vector<ServedListener>& served, const GatewayApiInput& input,
                  Ports& ports, std::set<BackendService>& backends,
                  std::map<ListenerStatus*, std::set<ObjectKey>>& attached,
                  GatewayApiStatuses& statuses, ConversionCache& cache) {
  std::vector<ParentAttachment> parents = AttachRoute(route, gateways, served, input);
  if (parents.empty()) return;  // not attached to a Gateway of holdfast's
  GatewayApiStatus& status = statuses[route.key()];
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
  if (!route.errors.empty()) return;
  ConvertedRoute fresh;
  const ConvertedRoute& converted = RulesOf(route, input, cache, fresh);
  ApplyConverted(converted, status, backends);
  for (size_t i = 0; i < parents.size(); ++i) {
    parents[i].accepted = *FindCondition(status.parents[i].conditions, "Accepted");
  }
  PlaceRoute(route, parents, converted, ports, attached);
}

// Adds a decoded object to the output, its errors to the statuses of the
// objects it was made from.
void Record(const ObjectKey& key, const std::optional<GatewayObject>& object,
            const std::vector<FieldError>& errors, const std::set<ObjectKey>& sources,
            Conversion& out) {
  for (const ObjectKey& source : sources) {
    out.made_from[key].push_back(source);
    for (const FieldError& e : errors) {
      out.statuses[source].problems.push_back(
          {e.path, absl::StrCat(key.ToString(), ": ", e.message), {}});
    }
  }
  if (object) out.objects.push_back(*object);
}

void Emit(const std::string& kind, const std::string& ns, const std::string& name, const json& spec,
          const std::set<ObjectKey>& sources, HoldfastObjectDecoder& decoder, Conversion& out) {
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
           {KeyOf(*port.gateway)}, decoder, out);
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

// The virtual service of one host: decoded now, or as it was before when
// it is made of the same routes.
const DecodedService& ServiceOf(const Port& port, const std::string& host, const std::string& name,
                                const std::vector<const PlacedRoute*>& sorted,
                                ConversionCache& cache, DecodedService& fresh) {
  const std::string& ns = port.gateway->meta.ns;
  for (const PlacedRoute* r : sorted) fresh.routes.push_back(r->spec);
  const std::string cache_key = absl::StrCat(ns, "/", name);
  if (const DecodedService* kept = cache.FindService(cache_key, fresh.routes)) return *kept;
  // Clients of a port other than 80 and 443 send it in the Host header,
  // which Envoy matches as it is; the Gateway API ignores the port.
  json domains = {host};
  if (host != "*") domains.push_back(absl::StrCat(host, ":", port.port));
  json spec = {{"domains", domains}, {"routes", json::array()}};
  for (const PlacedRoute* r : sorted) spec["routes"].push_back(*r->spec);
  FieldErrors errors;
  fresh.object = cache.decoder().Decode(kind::kVirtualService, ns, name, spec, &errors);
  fresh.errors = errors.errors();
  cache.KeepService(cache_key, fresh);
  return fresh;
}

// The port's holdfast Gateway: decoded now, or as before when it lists the
// same virtual services with the same TLS.
void EmitGateway(const Port& port, std::vector<std::string> services, const json& tls,
                 ConversionCache& cache, Conversion& out) {
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
  Record({kind::kGateway, ns, name}, emitted->object, emitted->errors, port.sources, out);
}

void EmitPort(const Port& port, const GatewayApiInput& input, ConversionCache& cache,
              Conversion& out) {
  const std::string& ns = port.gateway->meta.ns;
  std::vector<std::string> services;
  for (const auto& [host, routes] : port.hosts) {
    std::vector<const PlacedRoute*> sorted;
    for (const PlacedRoute& r : routes) sorted.push_back(&r);
    std::stable_sort(sorted.begin(), sorted.end(), Precedes);
    std::set<ObjectKey> sources;
    for (const PlacedRoute* r : sorted) sources.insert(r->route->key());
    std::string name = VirtualServiceName(port.gateway->meta.name, port.port, host);
    DecodedService fresh;
    const DecodedService& decoded = ServiceOf(port, host, name, sorted, cache, fresh);
    Record({kind::kVirtualService, ns, name}, decoded.object, decoded.errors, sources, out);
    services.push_back(std::move(name));
  }
  json tls;  // null: no TLS
  if (!port.tls.empty()) tls = TlsSpec(port, input, cache.decoder(), out);
  EmitGateway(port, std::move(services), tls, cache, out);
}

}  // namespace

Conversion ConvertGatewayApi(const GatewayApiInput& input) {
  ConversionCache cache;
  return ConvertGatewayApi(input, cache);
}

Conversion ConvertGatewayApi(const GatewayApiInput& input, ConversionCache& cache) {
  cache.Begin(input);
  Conversion out;
  std::set<std::string> classes;
  for (const GatewayClass& c : input.classes) {
    if (c.controller_name != kControllerName) continue;
    classes.insert(c.meta.name);
    const ObjectKey key{kGatewayClassKind, "", c.meta.name};
    GatewayApiStatus& status = out.statuses[key];
    status.key = key;
    status.generation = c.meta.generation;
    status.conditions = {{"Accepted", true, "Accepted", "served by holdfast"}};
  }
  std::vector<const Gateway*> gateways;
  for (const Gateway& g : input.gateways) {
    if (classes.contains(g.class_name)) gateways.push_back(&g);
  }
  std::sort(gateways.begin(), gateways.end(), Older<Gateway>);
  const std::vector<ServedListener> served = PlanListeners(gateways, input, &out.statuses);
  Ports ports;
  for (const ServedListener& s : served) {
    Port& port = ports[{KeyOf(*s.gateway), s.listener->port}];
    port.gateway = s.gateway;
    port.port = s.listener->port;
    port.sources.insert(KeyOf(*s.gateway));
    if (s.certificate != nullptr) port.tls.push_back(&s);
  }
  std::vector<const Route*> routes;
  for (const auto& r : input.routes) routes.push_back(r.get());
  std::sort(routes.begin(), routes.end(), Older<Route>);
  std::set<BackendService> backends;
  std::map<ListenerStatus*, std::set<ObjectKey>> attached;
  for (const Route* route : routes) {
    ConvertRoute(*route, gateways, served, input, ports, backends, attached, out.statuses, cache);
  }
  for (const auto& [listener, keys] : attached) {
    listener->attached_routes = static_cast<int>(keys.size());
  }
  for (const auto& [key, port] : ports) EmitPort(port, input, cache, out);
  for (const BackendService& b : backends) {
    json spec = {{"service", {{"name", b.name}, {"port", b.port}}}};
    if (b.http2) spec["http2"] = true;
    std::set<ObjectKey> sources;  // every route using it
    Emit(kind::kUpstream, b.ns, UpstreamName(b.name, b.port, b.http2), spec, sources,
         cache.decoder(), out);
  }
  cache.End();
  return out;
}

}  // namespace holdfast::gateway_api
