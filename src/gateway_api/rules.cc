#include "src/gateway_api/rules.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "re2/re2.h"
#include "src/gateway_api/reference_grants.h"
#include "src/gateway_api/synthesized_names.h"

namespace holdfast::gateway_api {
namespace {

using nlohmann::json;

json StringMatchJson(const ValueMatch& match) {
  json out = {{"name", match.name}};
  out[match.type == "RegularExpression" ? "regex" : "exact"] = match.value;
  return out;
}

// Gateway API prefixes match whole path segments and ignore a trailing '/';
// holdfast's (Envoy's) prefixes match characters (docs/kubernetes.md).
std::string PrefixOf(const std::string& value) {
  if (value.size() > 1 && absl::EndsWith(value, "/")) return value.substr(0, value.size() - 1);
  return value.empty() ? "/" : value;
}

json HttpMatchJson(const RouteMatch& match) {
  json out = json::object();
  if (match.path.type == "Exact") {
    out["exact"] = match.path.value;
  } else if (match.path.type == "RegularExpression") {
    out["regex"] = match.path.value;
  } else {
    out["prefix"] = PrefixOf(match.path.value);
  }
  for (const ValueMatch& h : match.headers) out["headers"].push_back(StringMatchJson(h));
  for (const ValueMatch& q : match.query_params) out["queryParams"].push_back(StringMatchJson(q));
  if (!match.method.empty()) out["methods"] = {match.method};
  return out;
}

// gRPC calls are POSTs to /SERVICE/METHOD.
json GrpcMatchJson(const RouteMatch& match) {
  json out = json::object();
  const std::string& service = match.grpc_service;
  const std::string& method = match.grpc_method;
  if (match.grpc_type == "RegularExpression" && !(service.empty() && method.empty())) {
    out["regex"] = absl::StrCat("/", service.empty() ? "[^/]+" : service, "/",
                                method.empty() ? "[^/]+" : method);
  } else if (!service.empty() && !method.empty()) {
    out["exact"] = absl::StrCat("/", service, "/", method);
  } else if (!service.empty()) {
    out["prefix"] = absl::StrCat("/", service, "/");
  } else if (!method.empty()) {
    out["regex"] = absl::StrCat("/[^/]+/", method);
  } else {
    out["prefix"] = "/";
  }
  for (const ValueMatch& h : match.headers) out["headers"].push_back(StringMatchJson(h));
  return out;
}

json HeaderEditsJson(const HeaderModifier& modifier) {
  json out = json::object();
  for (const auto& [name, value] : modifier.set) out["set"][name] = value;
  for (const auto& [name, value] : modifier.add) out["add"][name] = value;
  if (!modifier.remove.empty()) out["remove"] = modifier.remove;
  return out;
}

// The Gateway API's origins ("*", or scheme://host[:port] where the host
// may start with "*.") as holdfast's exact origins and regexes.
json CorsJson(const Cors& cors) {
  json out = {{"allowCredentials", cors.allow_credentials},
              {"maxAge", absl::StrCat(cors.max_age, "s")}};
  for (const std::string& origin : cors.allow_origins) {
    if (origin.find('*') == std::string::npos) {
      out["allowOrigins"].push_back(origin);
      continue;
    }
    std::string regex = RE2::QuoteMeta(origin);
    absl::StrReplaceAll({{"\\*", "[^/]+"}}, &regex);
    if (origin == "*") regex = ".*";
    out["allowOriginRegexes"].push_back(regex);
  }
  for (const auto& [field, values] : {std::pair{"allowMethods", &cors.allow_methods},
                                      std::pair{"allowHeaders", &cors.allow_headers},
                                      std::pair{"exposeHeaders", &cors.expose_headers}}) {
    if (!values->empty()) out[field] = *values;
  }
  return out;
}

FieldError Unsupported(const std::string& path, const std::string& what) {
  return {path, absl::StrCat(what, " is not supported by holdfast; the rule is not served"), {}};
}

// Applies one filter to the route template; returns why it cannot be.
std::optional<FieldError> ApplyFilter(const Filter& filter, const RouteMatch& match, json& route) {
  const std::string& at = filter.path_in_route;
  if (filter.type == "RequestHeaderModifier") {
    route["options"]["requestHeaders"] = HeaderEditsJson(filter.headers);
  } else if (filter.type == "ResponseHeaderModifier") {
    route["options"]["responseHeaders"] = HeaderEditsJson(filter.headers);
  } else if (filter.type == "RequestRedirect") {
    json redirect = {{"code", filter.status_code}, {"https", filter.scheme == "https"}};
    if (filter.port != 0) redirect["port"] = filter.port;
    if (!filter.hostname.empty()) redirect["host"] = filter.hostname;
    if (filter.path) {
      redirect[filter.path->type == "ReplaceFullPath" ? "path" : "prefixRewrite"] =
          filter.path->value;
    }
    route["redirect"] = redirect;
  } else if (filter.type == "CORS" && filter.cors && !filter.cors->allow_origins.empty()) {
    route["options"]["cors"] = CorsJson(*filter.cors);
  } else if (filter.type == "RequestMirror") {
    // Resolved once per rule by AddMirrors.
  } else if (filter.type == "URLRewrite") {
    if (!filter.hostname.empty()) route["options"]["hostRewrite"] = filter.hostname;
    if (filter.path) {
      // A full-path replacement is a prefix rewrite only of an exact match.
      if (filter.path->type == "ReplaceFullPath" && match.path.type != "Exact") {
        return Unsupported(at + ".urlRewrite.path",
                           "ReplaceFullPath on a match other than an Exact path");
      }
      route["options"]["prefixRewrite"] = filter.path->value;
    }
  } else {
    return Unsupported(at + ".type", absl::StrCat("filter type ", filter.type));
  }
  return std::nullopt;
}

// The upstream a backendRef names, or why it cannot be used.
// Adds the Service looked up to `read`.
std::optional<BackendProblem> ResolveBackend(const Route& route, const BackendRef& ref,
                                             const GatewayApiInput& input, BackendService* out,
                                             std::vector<ServiceKey>* read) {
  const std::string ns = ref.ns.empty() ? route.meta.ns : ref.ns;
  const std::string id = absl::StrCat(ns, "/", ref.name);
  if (!ref.group.empty() || ref.kind != "Service") {
    return BackendProblem{
        "InvalidKind",
        {ref.path,
         absl::StrCat("kind ", ref.group, "/", ref.kind, " is not supported (core Service only)"),
         {}}};
  }
  if (!ReferenceGrants(input.grants)
           .Permits({kGroup, route.short_kind(), route.meta.ns}, {"", "Service", ns, ref.name})) {
    return BackendProblem{
        "RefNotPermitted",
        {ref.path + ".namespace",
         absl::StrCat("no ReferenceGrant in namespace ", ns, " allows ", route.short_kind(),
                      "s from ", route.meta.ns, " to reference Service ", ref.name),
         {}}};
  }
  read->push_back(ServiceKey{ns, ref.name});
  auto service = input.services.find(read->back());
  if (service == input.services.end()) {
    return BackendProblem{"BackendNotFound",
                          {ref.path + ".name", absl::StrCat("Service ", id, " not found"), {}}};
  }
  bool has_port = false;
  for (const DiscoveredServicePort& port : service->second.ports) has_port |= port.port == ref.port;
  if (!has_port) {
    return BackendProblem{
        "BackendNotFound",
        {ref.path + ".port", absl::StrCat("Service ", id, " has no port ", ref.port), {}}};
  }
  *out = BackendService{ns, ref.name, ref.port, route.grpc()};
  return std::nullopt;
}

// The rule's action: weighted upstreams (invalid ones answer as missing),
// or 500 when it has no backend at all.
void AddBackends(const Route& route, const RouteRule& rule, const GatewayApiInput& input,
                 json& action, ConvertedRule& out) {
  json upstreams = json::array();
  for (const BackendRef& ref : rule.backends) {
    BackendService service;
    if (auto problem = ResolveBackend(route, ref, input, &service, &out.services_read)) {
      out.backend_problems.push_back(*std::move(problem));
      upstreams.push_back({{"name", kInvalidBackend}, {"weight", ref.weight}});
      continue;
    }
    out.backends.push_back(service);
    upstreams.push_back({{"name", UpstreamName(service.name, service.port, service.http2)},
                         {"namespace", service.ns},
                         {"weight", ref.weight}});
  }
  uint64_t total = 0;
  for (const BackendRef& ref : rule.backends) total += ref.weight;
  if (total == 0) {
    action["directResponse"] = {{"status", 500}, {"body", "no backend"}};
  } else {
    action["upstreams"] = std::move(upstreams);
  }
}

// The rule's RequestMirror filters as holdfast mirrors; a mirror whose
// Service cannot be used is left out (and reported), the rule is served.
json AddMirrors(const Route& route, const RouteRule& rule, const GatewayApiInput& input,
                ConvertedRule& out) {
  json mirrors = json::array();
  for (const Filter& filter : rule.filters) {
    if (filter.type != "RequestMirror" || !filter.mirror) continue;
    BackendService service;
    if (auto problem = ResolveBackend(route, *filter.mirror, input, &service,
                                      &out.services_read)) {
      out.backend_problems.push_back(*std::move(problem));
      continue;
    }
    out.backends.push_back(service);
    json mirror = {{"upstream", UpstreamName(service.name, service.port, service.http2)},
                   {"namespace", service.ns}};
    if (filter.mirror_numerator != filter.mirror_denominator) {
      mirror["fraction"] = {{"numerator", filter.mirror_numerator},
                            {"denominator", filter.mirror_denominator}};
    }
    mirrors.push_back(std::move(mirror));
  }
  return mirrors;
}

}  // namespace

ConvertedRule ConvertRule(const Route& route, const RouteRule& rule, const GatewayApiInput& input) {
  ConvertedRule out;
  if (!rule.unsupported_field.empty()) {
    const std::string& field = rule.unsupported_field;
    out.unsupported = Unsupported(field, field.substr(field.rfind('.') + 1));
    return out;
  }
  json action = json::object();
  AddBackends(route, rule, input, action, out);
  const json mirrors = AddMirrors(route, rule, input, out);
  if (rule.request_timeout) action["options"]["timeout"] = *rule.request_timeout;
  if (rule.backend_request_timeout) {
    action["options"]["retries"] = {{"numRetries", 0},
                                    {"perTryTimeout", *rule.backend_request_timeout}};
  }
  for (size_t i = 0; i < rule.matches.size(); ++i) {
    const RouteMatch& match = rule.matches[i];
    json r = action;
    r["name"] = absl::StrCat(route.short_kind(), "/", route.meta.ns, "/", route.meta.name, "/",
                             rule.path, ".matches[", i, "]");
    r["match"] = route.grpc() ? GrpcMatchJson(match) : HttpMatchJson(match);
    for (const Filter& filter : rule.filters) {
      if (auto problem = ApplyFilter(filter, match, r)) {
        out.unsupported = std::move(problem);
        out.routes.clear();
        return out;
      }
    }
    if (r.contains("redirect")) {
      r.erase("upstreams");
      r.erase("directResponse");
    } else if (!mirrors.empty()) {
      r["options"]["mirrors"] = mirrors;
    }
    out.routes.push_back(std::move(r));
  }
  return out;
}

}  // namespace holdfast::gateway_api
