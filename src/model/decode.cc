#include "src/model/decode.h"

#include <algorithm>
#include <array>
#include <functional>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "re2/re2.h"
#include "src/common/utf8.h"
#include "src/model/yaml_cursor.h"
#include "src/model/yaml_load.h"
#include "src/snapshot/resource.h"

namespace holdfast {
namespace {

constexpr char kApiVersion[] = "holdfast.dev/v1";

bool ValidName(const std::string& name) {
  if (name.empty() || name.size() > 253) return false;
  for (char c : name) {
    if (!(absl::ascii_islower(c) || absl::ascii_isdigit(c) || c == '-' || c == '.')) return false;
  }
  return absl::ascii_isalnum(name.front()) && absl::ascii_isalnum(name.back());
}

// A namespace is a DNS label, as in Kubernetes: resource names join it to
// object names with '/', so neither may contain one.
bool ValidNamespace(const std::string& ns) {
  if (ns.empty() || ns.size() > 63) return false;
  for (char c : ns) {
    if (!(absl::ascii_islower(c) || absl::ascii_isdigit(c) || c == '-')) return false;
  }
  return absl::ascii_isalnum(ns.front()) && absl::ascii_isalnum(ns.back());
}

// A host name with an optional port, or an Envoy wildcard: "*", a leading
// "*" ("*.example.com", "*-api.example.com") or a trailing one ("api.*").
// gRPC API listeners are named by domain, so a domain must never look like
// another resource's name (those always contain '/').
std::string DomainError(const std::string& domain) {
  if (domain.empty() || domain.size() > 253) return "must be 1 to 253 characters";
  if (domain == "*") return "";
  absl::string_view host = domain;
  if (host.front() == '*')
    host.remove_prefix(1);
  else if (host.back() == '*')
    host.remove_suffix(1);
  if (size_t colon = host.rfind(':'); colon != absl::string_view::npos) {
    absl::string_view port = host.substr(colon + 1);
    uint32_t value = 0;
    if (!absl::SimpleAtoi(port, &value) || value == 0 || value > 65535) {
      return "a port after ':' must be 1-65535";
    }
    host = host.substr(0, colon);
  }
  if (host.empty()) return "needs a host name besides the wildcard";
  for (char c : host) {
    if (!(absl::ascii_isalnum(c) || c == '-' || c == '.' || c == '_')) {
      return absl::StrCat("'", std::string(1, c),
                          "' is not allowed: use letters, digits, '-', '.', one leading or "
                          "trailing '*', and an optional :PORT");
    }
  }
  return "";
}

// RFC 9110 token characters (Envoy's strict header-name rule), with an
// optional leading ':' for pseudo-headers.
bool ValidHeaderName(const std::string& name) {
  if (name.empty() || name.size() > 16384) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (i == 0 && c == ':' && name.size() > 1) continue;
    if (absl::ascii_isalnum(c) ||
        absl::string_view("!#$%&'*+-.^_`|~").find(c) != absl::string_view::npos) {
      continue;
    }
    return false;
  }
  return true;
}

void CheckHeaderName(YamlCursor& c, const std::string& field, const std::string& name) {
  if (!ValidHeaderName(name)) {
    c.FieldError(field, absl::StrCat("\"", name, "\" is not a header name (letters, digits and ",
                                     "!#$%&'*+-.^_`|~)"));
  }
}

void CheckRegex(YamlCursor& c, const std::string& field, const std::string& pattern) {
  RE2 re(pattern, RE2::Quiet);
  if (!re.ok()) c.FieldError(field, absl::StrCat("invalid regex: ", re.error()));
}

ObjectRef DecodeRef(YamlCursor& c) {
  ObjectRef ref;
  c.String("name", &ref.name, /*required=*/true);
  c.String("namespace", &ref.ns);
  c.RejectUnknownFields();
  return ref;
}

std::vector<ObjectRef> DecodeRefs(YamlCursor& c, const std::string& field) {
  std::vector<ObjectRef> refs;
  c.List(field, [&](YamlCursor& item) { refs.push_back(DecodeRef(item)); });
  return refs;
}

Selector DecodeSelector(YamlCursor& c) {
  Selector selector;
  c.StringMap("labels", &selector.labels);
  std::vector<std::string> namespaces;
  c.StringList("namespaces", &namespaces);
  for (const std::string& ns : namespaces) {
    if (ns == "*") {
      selector.all_namespaces = true;
    } else {
      selector.namespaces.push_back(ns);
    }
  }
  c.RejectUnknownFields();
  return selector;
}

// Reads a string matcher whose kind is one of `kinds` (field names).
std::optional<StringMatch> DecodeStringMatch(YamlCursor& c, bool allow_present) {
  static const std::pair<const char*, StringMatch::Kind> kKinds[] = {
      {"exact", StringMatch::Kind::kExact},
      {"prefix", StringMatch::Kind::kPrefix},
      {"suffix", StringMatch::Kind::kSuffix},
      {"regex", StringMatch::Kind::kRegex},
      {"present", StringMatch::Kind::kPresent}};
  std::optional<StringMatch> match;
  std::vector<std::string> given;
  for (const auto& [field, kind] : kKinds) {
    if (!c.Has(field)) continue;
    given.push_back(field);
    if (kind == StringMatch::Kind::kPresent) {
      bool present = false;
      c.Bool(field, &present);
      if (!allow_present) c.FieldError(field, "not supported here");
      match = StringMatch{kind, ""};
      continue;
    }
    std::string value;
    c.String(field, &value);
    if (kind == StringMatch::Kind::kRegex) CheckRegex(c, field, value);
    match = StringMatch{kind, value};
  }
  if (given.size() > 1) {
    c.Error(absl::StrCat("set only one of exact, prefix, suffix, regex, present; got ",
                         absl::StrJoin(given, ", ")));
  }
  if (given.empty()) {
    c.Error(allow_present ? "set one of exact, prefix, suffix, regex, present"
                          : "set one of exact, prefix, suffix, regex");
  }
  return match;
}

HeaderEdits DecodeHeaderEdits(YamlCursor& c) {
  HeaderEdits edits;
  std::map<std::string, std::string> add, set;
  c.StringMap("add", &add);
  c.StringMap("set", &set);
  edits.add.assign(add.begin(), add.end());
  edits.set.assign(set.begin(), set.end());
  c.StringList("remove", &edits.remove);
  for (const auto& [name, value] : add) CheckHeaderName(c, absl::StrCat("add.", name), name);
  for (const auto& [name, value] : set) CheckHeaderName(c, absl::StrCat("set.", name), name);
  for (size_t i = 0; i < edits.remove.size(); ++i) {
    if (!ValidHeaderName(edits.remove[i])) {
      c.ItemError("remove", i, absl::StrCat("\"", edits.remove[i], "\" is not a header name"));
    }
  }
  c.RejectUnknownFields();
  return edits;
}

// `percent` (whole percent) or `fraction` (numerator/denominator), as parts
// per million; every request when neither is set.
uint32_t DecodeMirrorShare(YamlCursor& m) {
  if (m.Has("percent") && m.Has("fraction")) m.Error("set only one of percent and fraction");
  if (m.Has("percent")) {
    uint32_t percent = 100;
    m.Uint("percent", &percent, 0, 100);
    return percent * 10'000;
  }
  if (auto f = m.Map("fraction")) {
    uint32_t numerator = 0, denominator = 100;
    f->Uint("numerator", &numerator, 0, UINT32_MAX, true);
    f->Uint("denominator", &denominator, 1, UINT32_MAX);
    f->RejectUnknownFields();
    if (numerator > denominator) f->Error("numerator must not exceed denominator");
    return static_cast<uint32_t>(std::min<uint64_t>(
        1'000'000, (uint64_t{numerator} * 1'000'000 + denominator / 2) / denominator));
  }
  return 1'000'000;
}

constexpr size_t kMaxMirrors = 16;  // each is a copy of every request

std::vector<RequestMirror> DecodeMirrors(YamlCursor& c) {
  std::vector<RequestMirror> mirrors;
  c.List("mirrors", [&](YamlCursor& m) {
    RequestMirror mirror;
    m.String("upstream", &mirror.upstream.name, true);
    m.String("namespace", &mirror.upstream.ns);
    mirror.per_million = DecodeMirrorShare(m);
    m.RejectUnknownFields();
    mirrors.push_back(mirror);
  });
  if (mirrors.size() > kMaxMirrors) {
    c.FieldError("mirrors", absl::StrCat("at most ", kMaxMirrors, " mirrors per route"));
  }
  return mirrors;
}

RouteOptions DecodeOptions(YamlCursor& c) {
  RouteOptions options;
  c.String("prefixRewrite", &options.prefix_rewrite);
  c.String("hostRewrite", &options.host_rewrite);
  c.OptionalDuration("timeout", &options.timeout);
  if (auto r = c.Map("retries")) {
    RetryPolicy retries;
    r->String("retryOn", &retries.retry_on);
    r->Uint("numRetries", &retries.num_retries, 0, 100);
    r->OptionalDuration("perTryTimeout", &retries.per_try_timeout);
    r->RejectUnknownFields();
    options.retries = retries;
  }
  if (auto h = c.Map("requestHeaders")) options.request_headers = DecodeHeaderEdits(*h);
  if (auto h = c.Map("responseHeaders")) options.response_headers = DecodeHeaderEdits(*h);
  if (auto cc = c.Map("cors")) {
    CorsPolicy cors;
    std::vector<std::string> origins, origin_regexes;
    cc->StringList("allowOrigins", &origins);
    cc->StringList("allowOriginRegexes", &origin_regexes);
    for (const auto& o : origins) cors.allow_origins.push_back({StringMatch::Kind::kExact, o});
    for (const auto& o : origin_regexes) {
      CheckRegex(*cc, "allowOriginRegexes", o);
      cors.allow_origins.push_back({StringMatch::Kind::kRegex, o});
    }
    cc->StringList("allowMethods", &cors.allow_methods);
    cc->StringList("allowHeaders", &cors.allow_headers);
    cc->StringList("exposeHeaders", &cors.expose_headers);
    cc->OptionalDuration("maxAge", &cors.max_age);
    cc->Bool("allowCredentials", &cors.allow_credentials);
    cc->RejectUnknownFields();
    if (cors.allow_origins.empty()) cc->Error("allowOrigins or allowOriginRegexes is required");
    options.cors = cors;
  }
  options.mirrors = DecodeMirrors(c);
  c.RejectUnknownFields();
  return options;
}

RouteMatch DecodeRouteMatch(YamlCursor& m) {
  RouteMatch match;
  int path_kinds = m.Has("prefix") + m.Has("exact") + m.Has("regex");
  if (path_kinds > 1) m.Error("set only one of prefix, exact, regex");
  if (m.Has("exact")) {
    match.path = {StringMatch::Kind::kExact, ""};
    m.String("exact", &match.path.value);
  } else if (m.Has("regex")) {
    match.path = {StringMatch::Kind::kRegex, ""};
    m.String("regex", &match.path.value);
    CheckRegex(m, "regex", match.path.value);
  } else {
    m.String("prefix", &match.path.value);
  }
  if (match.path.kind != StringMatch::Kind::kRegex && !match.path.value.empty() &&
      match.path.value[0] != '/') {
    m.Error("path must start with /");
  }
  m.List("headers", [&](YamlCursor& h) {
    HeaderMatch header;
    if (h.String("name", &header.name, true) && !header.name.empty()) {
      CheckHeaderName(h, "name", header.name);
    }
    h.Bool("invert", &header.invert);
    if (auto string_match = DecodeStringMatch(h, true)) header.match = *string_match;
    h.RejectUnknownFields();
    match.headers.push_back(header);
  });
  m.List("queryParams", [&](YamlCursor& q) {
    QueryParamMatch param;
    q.String("name", &param.name, true);
    if (auto string_match = DecodeStringMatch(q, true)) param.match = *string_match;
    q.RejectUnknownFields();
    match.query_params.push_back(param);
  });
  m.StringList("methods", &match.methods);
  for (std::string& method : match.methods) method = absl::AsciiStrToUpper(method);
  m.RejectUnknownFields();
  return match;
}

// `upstreams:` of a route, at the route's cursor.
std::vector<WeightedUpstream> DecodeWeightedUpstreams(YamlCursor& c) {
  std::vector<WeightedUpstream> weighted;
  c.List("upstreams", [&](YamlCursor& u) {
    WeightedUpstream w;
    u.String("name", &w.upstream.name, true);
    u.String("namespace", &w.upstream.ns);
    u.Uint("weight", &w.weight, 0, 1'000'000);
    u.RejectUnknownFields();
    weighted.push_back(w);
  });
  uint64_t total = 0;
  for (const auto& w : weighted) total += w.weight;
  if (weighted.empty()) {
    c.FieldError("upstreams", "must list at least one upstream");
  } else if (total == 0) {
    c.FieldError("upstreams", "weights must not all be zero");
  }
  return weighted;
}

Redirect DecodeRedirect(YamlCursor& r) {
  Redirect redirect;
  r.String("host", &redirect.host);
  r.String("path", &redirect.path);
  r.String("prefixRewrite", &redirect.prefix_rewrite);
  r.Bool("https", &redirect.https);
  r.Uint("port", &redirect.port, 1, 65535);
  r.Uint("code", &redirect.code);
  if (redirect.code != 301 && redirect.code != 302 && redirect.code != 303 &&
      redirect.code != 307 && redirect.code != 308) {
    r.FieldError("code", "must be one of 301, 302, 303, 307, 308");
  }
  if (!redirect.path.empty() && !redirect.prefix_rewrite.empty()) {
    r.Error("set only one of path and prefixRewrite");
  }
  r.RejectUnknownFields();
  return redirect;
}

DirectResponse DecodeDirectResponse(YamlCursor& d) {
  DirectResponse direct;
  d.Uint("status", &direct.status, 200, 599, true);
  d.Text("body", &direct.body);
  d.RejectUnknownFields();
  return direct;
}

Delegate DecodeDelegate(YamlCursor& d) {
  Delegate delegate;
  delegate.route_tables = DecodeRefs(d, "routeTables");
  if (auto s = d.Map("selector")) delegate.selector = DecodeSelector(*s);
  if (delegate.route_tables.empty() && !delegate.selector) d.Error("set routeTables or selector");
  d.RejectUnknownFields();
  return delegate;
}

Route DecodeRoute(YamlCursor& c) {
  Route route;
  route.path = c.path();
  route.location = c.location();
  c.String("name", &route.name);
  if (auto m = c.Map("match")) route.match = DecodeRouteMatch(*m);
  // Exactly one action; each is decoded, so every error is reported.
  std::vector<std::string> actions;
  if (c.Has("upstream")) {
    actions.push_back("upstream");
    ObjectRef ref;
    c.String("upstream", &ref.name);
    route.action = ref;
  }
  if (c.Has("upstreams")) {
    actions.push_back("upstreams");
    route.action = DecodeWeightedUpstreams(c);
  }
  if (auto r = c.Map("redirect")) {
    actions.push_back("redirect");
    route.action = DecodeRedirect(*r);
  }
  if (auto d = c.Map("directResponse")) {
    actions.push_back("directResponse");
    route.action = DecodeDirectResponse(*d);
  }
  if (auto d = c.Map("delegate")) {
    actions.push_back("delegate");
    route.action = DecodeDelegate(*d);
  }
  if (actions.empty()) {
    c.Error("a route needs one action: upstream, upstreams, redirect, directResponse or delegate");
  } else if (actions.size() > 1) {
    c.Error(absl::StrCat("a route has exactly one action; got ", absl::StrJoin(actions, ", ")));
  }
  if (auto o = c.Map("options")) route.options = DecodeOptions(*o);
  c.RejectUnknownFields();
  return route;
}

std::vector<Route> DecodeRoutes(YamlCursor& spec) {
  std::vector<Route> routes;
  spec.List(
      "routes", [&](YamlCursor& r) { routes.push_back(DecodeRoute(r)); }, true);
  return routes;
}

// A port of a Service in the Upstream's namespace, by number or by name.
ServiceRef DecodeServiceRef(YamlCursor& c) {
  ServiceRef ref;
  if (c.String("name", &ref.name, true) && !ValidNamespace(ref.name)) {
    c.FieldError("name", "must be a Service name: lower case letters, digits and '-'");
  }
  c.Uint("port", &ref.port, 1, 65535);
  c.String("portName", &ref.port_name);
  if (c.Has("port") == c.Has("portName")) c.Error("set exactly one of port and portName");
  c.RejectUnknownFields();
  return ref;
}

std::vector<UpstreamHost> DecodeUpstreamHosts(YamlCursor& c, bool required) {
  std::vector<UpstreamHost> hosts;
  c.List(
      "hosts",
      [&](YamlCursor& h) {
        UpstreamHost host;
        h.String("address", &host.address, true);
        h.Uint("port", &host.port, 1, 65535, true);
        h.Uint("weight", &host.weight, 1, 128);
        h.RejectUnknownFields();
        hosts.push_back(host);
      },
      required);
  return hosts;
}

LoadBalancing DecodeLoadBalancing(YamlCursor& c) {
  std::string lb = "RoundRobin";
  c.String("loadBalancing", &lb);
  if (lb == "RoundRobin") return LoadBalancing::kRoundRobin;
  if (lb == "LeastRequest") return LoadBalancing::kLeastRequest;
  if (lb == "Random") return LoadBalancing::kRandom;
  if (lb == "RingHash") return LoadBalancing::kRingHash;
  c.FieldError("loadBalancing", "must be one of RoundRobin, LeastRequest, Random, RingHash");
  return LoadBalancing::kRoundRobin;
}

CircuitBreakers DecodeCircuitBreakers(YamlCursor& b) {
  CircuitBreakers cb;
  auto read = [&](const char* field, std::optional<uint32_t>* out) {
    uint32_t v = 0;
    if (b.Has(field) && b.Uint(field, &v, 1))
      *out = v;
    else
      b.Uint(field, &v);  // marks the field as known
  };
  read("maxConnections", &cb.max_connections);
  read("maxPendingRequests", &cb.max_pending_requests);
  read("maxRequests", &cb.max_requests);
  read("maxRetries", &cb.max_retries);
  b.RejectUnknownFields();
  return cb;
}

HealthCheck DecodeHealthCheck(YamlCursor& h) {
  HealthCheck hc;
  h.String("path", &hc.path);
  h.Duration("interval", &hc.interval);
  h.Duration("timeout", &hc.timeout);
  h.Uint("healthyThreshold", &hc.healthy_threshold, 1, 100);
  h.Uint("unhealthyThreshold", &hc.unhealthy_threshold, 1, 100);
  if (hc.interval <= absl::ZeroDuration()) h.FieldError("interval", "must be greater than zero");
  if (hc.timeout <= absl::ZeroDuration()) h.FieldError("timeout", "must be greater than zero");
  if (hc.path.empty() || hc.path[0] != '/') h.FieldError("path", "must start with /");
  h.RejectUnknownFields();
  return hc;
}

OutlierDetection DecodeOutlierDetection(YamlCursor& o) {
  OutlierDetection od;
  o.Uint("consecutive5xx", &od.consecutive_5xx, 1, 1000);
  o.Duration("interval", &od.interval);
  o.Duration("baseEjectionTime", &od.base_ejection_time);
  o.Uint("maxEjectionPercent", &od.max_ejection_percent, 0, 100);
  if (od.interval <= absl::ZeroDuration()) o.FieldError("interval", "must be greater than zero");
  o.RejectUnknownFields();
  return od;
}

UpstreamSpec DecodeUpstream(YamlCursor& c) {
  UpstreamSpec spec;
  const bool has_service = c.Has("service");
  if (has_service && c.Has("hosts")) c.FieldError("service", "set only one of hosts and service");
  if (auto s = c.Map("service")) spec.service = DecodeServiceRef(*s);
  spec.hosts = DecodeUpstreamHosts(c, /*required=*/!has_service);
  if (auto t = c.Map("tls")) {
    UpstreamTls tls;
    t->String("caFile", &tls.ca_file);
    t->String("sni", &tls.sni);
    t->RejectUnknownFields();
    spec.tls = tls;
  }
  c.Duration("connectTimeout", &spec.connect_timeout);
  if (spec.connect_timeout <= absl::ZeroDuration() && c.Has("connectTimeout")) {
    c.FieldError("connectTimeout", "must be greater than zero");
  }
  spec.load_balancing = DecodeLoadBalancing(c);
  if (bool http2 = false; c.Bool("http2", &http2) && c.Has("http2")) spec.http2 = http2;
  if (auto b = c.Map("circuitBreakers")) spec.circuit_breakers = DecodeCircuitBreakers(*b);
  if (auto h = c.Map("healthCheck")) spec.health_check = DecodeHealthCheck(*h);
  if (auto o = c.Map("outlierDetection")) spec.outlier_detection = DecodeOutlierDetection(*o);
  c.RejectUnknownFields();
  return spec;
}

// certFile and keyFile, or secretRef; `required` or none at all.
GatewayCertificate DecodeCertificate(YamlCursor& c, bool required) {
  GatewayCertificate out;
  c.String("certFile", &out.cert_file);
  c.String("keyFile", &out.key_file);
  if (auto s = c.Map("secretRef")) out.secret = DecodeRef(*s);
  const bool files = !out.cert_file.empty() || !out.key_file.empty();
  const bool secret = !out.secret.name.empty();
  if (files && secret) {
    c.Error("set either certFile and keyFile, or secretRef");
  } else if (files && (out.cert_file.empty() || out.key_file.empty())) {
    c.Error("set both certFile and keyFile");
  } else if (!files && !secret && required) {
    c.Error("set either certFile and keyFile, or secretRef");
  }
  return out;
}

// A TLS server name as Envoy matches it: a lower-case host name, or one
// with a leading "*." (any one or more labels).
std::string ServerNameError(const std::string& name) {
  if (name.empty() || name.size() > 253) return "must be 1 to 253 characters";
  absl::string_view host = name;
  if (absl::StartsWith(host, "*.")) host.remove_prefix(2);
  if (host.empty() || host.front() == '.' || host.back() == '.') return "is not a host name";
  for (char c : host) {
    if (!(absl::ascii_islower(c) || absl::ascii_isdigit(c) || c == '-' || c == '.')) {
      return absl::StrCat("'", std::string(1, c),
                          "' is not allowed: use lower-case letters, digits, '-', '.' and one "
                          "leading '*.'");
    }
  }
  return "";
}

GatewayTls DecodeGatewayTls(YamlCursor& t) {
  GatewayTls tls;
  std::set<std::string> seen;
  t.List("certificates", [&](YamlCursor& s) {
    SniCertificate sni;
    s.StringList("serverNames", &sni.server_names);
    if (sni.server_names.empty()) s.FieldError("serverNames", "must list at least one name");
    for (size_t i = 0; i < sni.server_names.size(); ++i) {
      const std::string& name = sni.server_names[i];
      if (std::string why = ServerNameError(name); !why.empty()) {
        s.ItemError("serverNames", i, absl::StrCat("\"", name, "\" ", why));
      } else if (!seen.insert(name).second) {
        s.ItemError("serverNames", i, absl::StrCat("\"", name, "\" is listed twice"));
      }
    }
    sni.certificate = DecodeCertificate(s, true);
    s.RejectUnknownFields();
    tls.sni.push_back(std::move(sni));
  });
  tls.certificate = DecodeCertificate(t, tls.sni.empty());
  t.RejectUnknownFields();
  return tls;
}

GatewaySpec DecodeGateway(YamlCursor& c) {
  GatewaySpec spec;
  c.String("bindAddress", &spec.bind_address);
  c.Uint("port", &spec.port, 1, 65535, true);
  if (auto t = c.Map("tls")) spec.tls = DecodeGatewayTls(*t);
  spec.virtual_services = DecodeRefs(c, "virtualServices");
  if (auto s = c.Map("virtualServiceSelector")) spec.virtual_service_selector = DecodeSelector(*s);
  if (spec.virtual_services.empty() && !spec.virtual_service_selector) {
    c.Error("set virtualServices or virtualServiceSelector");
  }
  c.RejectUnknownFields();
  return spec;
}

// Metadata the API server sets. A manifest read back from a cluster
// (`kubectl get -o yaml`) carries them; they say nothing about the gateway.
constexpr const char* kServerSetMetadata[] = {
    "uid",           "resourceVersion", "generation",        "creationTimestamp",
    "managedFields", "selfLink",        "deletionTimestamp", "deletionGracePeriodSeconds",
    "finalizers",    "ownerReferences", "generateName"};

ObjectMeta DecodeMetadata(YamlCursor& m) {
  ObjectMeta meta;
  m.String("name", &meta.name, true);
  m.String("namespace", &meta.ns);
  if (meta.ns.empty()) meta.ns = "default";
  if (!ValidNamespace(meta.ns)) {
    m.FieldError("namespace",
                 "must be at most 63 lowercase letters, digits or '-', starting "
                 "and ending with a letter or digit");
  }
  if (!meta.name.empty() && !ValidName(meta.name)) {
    m.FieldError("name",
                 "must be lowercase letters, digits, '-' or '.', starting and ending "
                 "with a letter or digit");
  }
  m.StringMap("labels", &meta.labels);
  std::map<std::string, std::string> annotations;
  m.StringMap("annotations", &annotations);
  for (const char* field : kServerSetMetadata) m.Ignore(field);
  m.RejectUnknownFields();
  return meta;
}

VirtualServiceSpec DecodeVirtualService(YamlCursor& spec) {
  VirtualServiceSpec vs;
  spec.StringList("domains", &vs.domains);
  if (vs.domains.empty()) spec.FieldError("domains", "must list at least one domain");
  for (size_t i = 0; i < vs.domains.size(); ++i) {
    if (std::string why = DomainError(vs.domains[i]); !why.empty()) {
      spec.ItemError("domains", i, absl::StrCat("\"", vs.domains[i], "\": ", why));
    }
  }
  vs.routes = DecodeRoutes(spec);
  spec.RejectUnknownFields();
  return vs;
}

RouteTableSpec DecodeRouteTable(YamlCursor& spec) {
  RouteTableSpec rt;
  spec.Int("weight", &rt.weight);
  rt.routes = DecodeRoutes(spec);
  spec.RejectUnknownFields();
  return rt;
}

SecretSpec DecodeSecret(YamlCursor& spec) {
  SecretSpec secret;
  spec.Text("certificate", &secret.certificate, true);
  spec.Text("privateKey", &secret.private_key, true);
  spec.RejectUnknownFields();
  return secret;
}

// Node group names are whatever --node-group makes of node fields or
// certificates; only what no group can be is refused.
RolloutPolicySpec DecodeRolloutPolicy(YamlCursor& spec) {
  RolloutPolicySpec policy;
  if (spec.Has("nodeGroup")) {
    std::string group;
    spec.String("nodeGroup", &group, true);
    if (group.empty()) spec.FieldError("nodeGroup", "must not be empty (omit it for every group)");
    policy.node_group = std::move(group);
  }
  if (auto canaries = spec.Map("canaries")) {
    canaries->Uint("percent", &policy.canary_percent, 0, 100);
    if (auto metadata = canaries->Map("nodeMetadata")) {
      metadata->String("key", &policy.metadata_key, true);
      metadata->String("value", &policy.metadata_value, true);
      metadata->RejectUnknownFields();
    }
    canaries->RejectUnknownFields();
  }
  if (spec.Duration("bake", &policy.bake) && policy.bake < absl::ZeroDuration()) {
    spec.FieldError("bake", "must not be negative");
  }
  if (spec.Duration("ackTimeout", &policy.ack_timeout) && policy.ack_timeout <= absl::ZeroDuration()) {
    spec.FieldError("ackTimeout", "must be more than 0s");
  }
  spec.RejectUnknownFields();
  return policy;
}

using ObjectSpec = decltype(GatewayObject::spec);

// The spec of a `kind_name` object; nullopt for an unknown kind (an error
// on `kind` then).
std::optional<ObjectSpec> DecodeSpec(const std::string& kind_name, YamlCursor& spec,
                                     YamlCursor& root) {
  if (kind_name == kind::kUpstream) return DecodeUpstream(spec);
  if (kind_name == kind::kVirtualService) return DecodeVirtualService(spec);
  if (kind_name == kind::kRouteTable) return DecodeRouteTable(spec);
  if (kind_name == kind::kGateway) return DecodeGateway(spec);
  if (kind_name == kind::kSecret) return DecodeSecret(spec);
  if (kind_name == kind::kRolloutPolicy) return DecodeRolloutPolicy(spec);
  if (!kind_name.empty()) {
    root.FieldError("kind",
                    "must be one of Gateway, VirtualService, RouteTable, Upstream, Secret, "
                    "RolloutPolicy");
  }
  return std::nullopt;
}

// `digest` gives the object's content digest, asked only of a valid one.
DecodedObject DecodeDocument(const DocNode& document, const std::string& file,
                             const std::function<std::string()>& digest) {
  DecodedObject decoded;
  decoded.location = {file, document.Line()};
  YamlCursor root(document, "", file, &decoded.errors);
  if (!root.IsMap()) return decoded;

  std::string api_version, kind_name;
  root.String("apiVersion", &api_version, true);
  root.String("kind", &kind_name, true);
  if (!api_version.empty() && api_version != kApiVersion) {
    root.FieldError("apiVersion", absl::StrCat("must be ", kApiVersion));
  }
  GatewayObject object;
  if (auto m = root.Map("metadata")) {
    object.meta = DecodeMetadata(*m);
  } else {
    root.FieldError("metadata", "required");
  }
  object.meta.location = decoded.location;
  if (!kind_name.empty() && !object.meta.name.empty()) {
    decoded.key = ObjectKey{kind_name, object.meta.ns, object.meta.name};
  }

  if (std::optional<YamlCursor> spec = root.Map("spec")) {
    if (std::optional<ObjectSpec> decoded_spec = DecodeSpec(kind_name, *spec, root)) {
      object.spec = *std::move(decoded_spec);
    }
  } else if (!root.Has("spec")) {
    root.FieldError("spec", "required");
  }
  root.Ignore("status");  // written by holdfast's leader, never read back
  root.RejectUnknownFields();
  if (decoded.errors.empty()) {
    object.content_digest = digest();
    decoded.object = std::move(object);
  }
  return decoded;
}

// A decoder that throws (yaml-cpp on a node of the wrong type) fails the
// object, never the process.
DecodedObject DecodeGuarded(const DocNode& document, const std::string& file,
                            const std::function<std::string()>& digest) {
  try {
    return DecodeDocument(document, file, digest);
  } catch (const std::exception& e) {
    DecodedObject failed;
    failed.location = {file, document.Line()};
    failed.errors.Add("", e.what(), failed.location);
    return failed;
  }
}

}  // namespace

const std::string& GatewayObject::kind() const {
  // In the variant's order; built once: kind() is called for every
  // comparison of objects by key.
  static const auto* kinds = new std::array<std::string, 6>{
      kind::kUpstream, kind::kVirtualService, kind::kRouteTable,
      kind::kGateway,  kind::kSecret,         kind::kRolloutPolicy};
  static const auto* none = new std::string();
  return spec.index() < kinds->size() ? (*kinds)[spec.index()] : *none;
}

DecodedFile DecodeObjects(const std::string& contents, const std::string& file) {
  DecodedFile out;
  if (size_t bad = InvalidUtf8Offset(contents); bad != absl::string_view::npos) {
    int line = 1 + static_cast<int>(std::count(contents.begin(), contents.begin() + bad, '\n'));
    out.syntax_error =
        FieldError{"", absl::StrCat("not valid UTF-8 (byte ", bad, ")"), {file, line}};
    return out;
  }
  if (size_t nul = contents.find('\0'); nul != std::string::npos) {
    int line = 1 + static_cast<int>(std::count(contents.begin(), contents.begin() + nul, '\n'));
    out.syntax_error =
        FieldError{"", absl::StrCat("contains a NUL byte (byte ", nul, ")"), {file, line}};
    return out;
  }
  std::vector<YAML::Node> documents;
  try {
    documents = LoadAllDocuments(contents);
  } catch (const YAML::Exception& e) {
    out.syntax_error =
        FieldError{"", absl::StrCat("not valid YAML: ", e.msg), {file, e.mark.line + 1}};
    return out;
  }
  for (const YAML::Node& document : documents) {
    if (!document || document.IsNull()) continue;
    // A digest of the document's content: comments and layout do not
    // count.
    out.objects.push_back(DecodeGuarded(DocNode(document), file, [&document, &contents] {
      std::string form;
      // A document's tree has at most a node per byte, unless aliases
      // repeat parts of it; then it is written out, as yaml-cpp does.
      size_t budget = contents.size() + 1;
      if (AppendCanonicalForm(document, budget, form)) return ContentDigest(form);
      YAML::Emitter emitter;
      emitter << document;
      return ContentDigest(emitter.c_str());
    }));
  }
  return out;
}

DecodedObject DecodeJson(const nlohmann::json& document, const std::string& file,
                         const std::string& content_digest) {
  return DecodeGuarded(DocNode(document), file, [&content_digest] { return content_digest; });
}

}  // namespace holdfast
