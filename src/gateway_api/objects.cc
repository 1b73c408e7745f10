#include "src/gateway_api/objects.h"

#include <algorithm>

#include "src/gateway_api/json_reader.h"
#include "src/kube/json_fields.h"

namespace holdfast::gateway_api {
namespace {

constexpr uint32_t kMaxPort = 65535;

std::map<std::string, std::string> StringMap(const nlohmann::json& object) {
  std::map<std::string, std::string> out;
  if (!object.is_object()) return out;
  for (const auto& [key, value] : object.items()) {
    if (value.is_string()) out[key] = value.get<std::string>();
  }
  return out;
}

void ReadSelector(JsonReader& r, LabelSelector* selector) {
  selector->match_labels = StringMap(JsonField(r.node(), "matchLabels"));
  r.List("matchExpressions", [&](JsonReader& e) {
    LabelSelector::Expression expression;
    e.String("key", &expression.key, true);
    e.String("operator", &expression.op, true);
    e.StringList("values", &expression.values);
    if (expression.op != "In" && expression.op != "NotIn" && expression.op != "Exists" &&
        expression.op != "DoesNotExist") {
      e.Error("operator", "must be In, NotIn, Exists or DoesNotExist");
    }
    selector->match_expressions.push_back(std::move(expression));
  });
}

void ReadAllowedRoutes(JsonReader& r, Listener* listener) {
  r.Object("namespaces", [&](JsonReader& n) {
    std::string from = "Same";
    n.String("from", &from);
    if (from == "All") {
      listener->from = Listener::From::kAll;
    } else if (from == "Selector") {
      listener->from = Listener::From::kSelector;
      n.Object("selector", [&](JsonReader& s) { ReadSelector(s, &listener->selector); });
    } else if (from != "Same") {
      n.Error("from", "must be Same, All or Selector");
    }
  });
  r.List("kinds", [&](JsonReader& k) {
    GroupKind kind{kGroup, ""};
    k.String("group", &kind.group);
    k.String("kind", &kind.kind, true);
    listener->kinds.push_back(std::move(kind));
  });
}

Listener ReadListener(JsonReader& r) {
  Listener listener;
  listener.path = r.path();
  r.String("name", &listener.name, true);
  r.String("hostname", &listener.hostname);
  r.Uint("port", &listener.port, 1, kMaxPort, true);
  r.String("protocol", &listener.protocol, true);
  r.Object("tls", [&](JsonReader& t) {
    t.String("mode", &listener.tls_mode);
    t.List("certificateRefs", [&](JsonReader& c) {
      SecretRef ref;
      c.String("group", &ref.group);
      c.String("kind", &ref.kind);
      c.String("namespace", &ref.ns);
      c.String("name", &ref.name, true);
      listener.certificate_refs.push_back(std::move(ref));
    });
  });
  r.Object("allowedRoutes", [&](JsonReader& a) { ReadAllowedRoutes(a, &listener); });
  return listener;
}

ParentRef ReadParentRef(JsonReader& r) {
  ParentRef ref;
  ref.raw = r.node();
  r.String("group", &ref.group);
  r.String("kind", &ref.kind);
  r.String("namespace", &ref.ns);
  r.String("name", &ref.name, true);
  r.String("sectionName", &ref.section_name);
  r.Uint("port", &ref.port, 1, kMaxPort);
  return ref;
}

BackendRef ReadBackendRef(JsonReader& r) {
  BackendRef ref;
  ref.path = r.path();
  r.String("group", &ref.group);
  r.String("kind", &ref.kind);
  r.String("namespace", &ref.ns);
  r.String("name", &ref.name, true);
  r.Uint("port", &ref.port, 1, kMaxPort);
  r.Uint("weight", &ref.weight, 0, 1'000'000);
  return ref;
}

ValueMatch ReadValueMatch(JsonReader& r) {
  ValueMatch match;
  r.String("type", &match.type);
  r.String("name", &match.name, true);
  r.String("value", &match.value, true);
  if (match.type != "Exact" && match.type != "RegularExpression") {
    r.Error("type", "must be Exact or RegularExpression");
  }
  return match;
}

void ReadHeaderModifier(JsonReader& r, HeaderModifier* out) {
  for (auto [field, list] : {std::pair{"set", &out->set}, std::pair{"add", &out->add}}) {
    r.List(field, [&, list = list](JsonReader& h) {
      std::string name, value;
      h.String("name", &name, true);
      h.String("value", &value, true);
      list->emplace_back(std::move(name), std::move(value));
    });
  }
  r.StringList("remove", &out->remove);
}

void ReadPathModifier(JsonReader& r, std::optional<PathModifier>* out) {
  r.Object("path", [&](JsonReader& p) {
    PathModifier path;
    p.String("type", &path.type, true);
    if (path.type == "ReplaceFullPath") {
      p.String("replaceFullPath", &path.value, true);
    } else if (path.type == "ReplacePrefixMatch") {
      p.String("replacePrefixMatch", &path.value, true);
    } else {
      p.Error("type", "must be ReplaceFullPath or ReplacePrefixMatch");
    }
    *out = std::move(path);
  });
}

Filter ReadFilter(JsonReader& r) {
  Filter filter;
  filter.path_in_route = r.path();
  r.String("type", &filter.type, true);
  r.Object("requestHeaderModifier", [&](JsonReader& h) { ReadHeaderModifier(h, &filter.headers); });
  r.Object("responseHeaderModifier",
           [&](JsonReader& h) { ReadHeaderModifier(h, &filter.headers); });
  r.Object("requestRedirect", [&](JsonReader& d) {
    d.String("scheme", &filter.scheme);
    d.String("hostname", &filter.hostname);
    ReadPathModifier(d, &filter.path);
    d.Uint("port", &filter.port, 1, kMaxPort);
    d.Uint("statusCode", &filter.status_code, 300, 399);
  });
  r.Object("cors", [&](JsonReader& c) {
    Cors cors;
    c.StringList("allowOrigins", &cors.allow_origins);
    c.StringList("allowMethods", &cors.allow_methods);
    c.StringList("allowHeaders", &cors.allow_headers);
    c.StringList("exposeHeaders", &cors.expose_headers);
    const nlohmann::json& credentials = JsonField(c.node(), "allowCredentials");
    cors.allow_credentials = credentials.is_boolean() && credentials.get<bool>();
    c.Uint("maxAge", &cors.max_age, 1, 86400 * 365);
    filter.cors = std::move(cors);
  });
  r.Object("requestMirror", [&](JsonReader& m) {
    m.Object("backendRef", [&](JsonReader& b) { filter.mirror = ReadBackendRef(b); });
    if (!filter.mirror) m.Error("backendRef", "is required");
    if (m.Has("percent") && m.Has("fraction"))
      m.Error("fraction", "set only one of percent and fraction");
    m.Uint("percent", &filter.mirror_numerator, 0, 100);
    m.Object("fraction", [&](JsonReader& f) {
      f.Uint("numerator", &filter.mirror_numerator, 0, UINT32_MAX, true);
      f.Uint("denominator", &filter.mirror_denominator, 1, UINT32_MAX);
      if (filter.mirror_numerator > filter.mirror_denominator) {
        f.Error("numerator", "must not exceed denominator");
      }
    });
  });
  r.Object("urlRewrite", [&](JsonReader& u) {
    u.String("hostname", &filter.hostname);
    ReadPathModifier(u, &filter.path);
  });
  return filter;
}

RouteMatch ReadHttpMatch(JsonReader& r) {
  RouteMatch match;
  r.Object("path", [&](JsonReader& p) {
    p.String("type", &match.path.type);
    p.String("value", &match.path.value);
    if (match.path.type != "Exact" && match.path.type != "PathPrefix" &&
        match.path.type != "RegularExpression") {
      p.Error("type", "must be Exact, PathPrefix or RegularExpression");
    }
  });
  r.List("headers", [&](JsonReader& h) { match.headers.push_back(ReadValueMatch(h)); });
  r.List("queryParams", [&](JsonReader& q) { match.query_params.push_back(ReadValueMatch(q)); });
  r.String("method", &match.method);
  return match;
}

RouteMatch ReadGrpcMatch(JsonReader& r) {
  RouteMatch match;
  r.Object("method", [&](JsonReader& m) {
    m.String("type", &match.grpc_type);
    m.String("service", &match.grpc_service);
    m.String("method", &match.grpc_method);
    if (match.grpc_type != "Exact" && match.grpc_type != "RegularExpression") {
      m.Error("type", "must be Exact or RegularExpression");
    }
  });
  r.List("headers", [&](JsonReader& h) { match.headers.push_back(ReadValueMatch(h)); });
  return match;
}

RouteRule ReadRule(JsonReader& r, bool grpc) {
  RouteRule rule;
  rule.path = r.path();
  r.List("matches", [&](JsonReader& m) {
    rule.matches.push_back(grpc ? ReadGrpcMatch(m) : ReadHttpMatch(m));
  });
  if (rule.matches.empty()) rule.matches.emplace_back();
  r.List("filters", [&](JsonReader& f) { rule.filters.push_back(ReadFilter(f)); });
  r.List("backendRefs", [&](JsonReader& b) {
    rule.backends.push_back(ReadBackendRef(b));
    const nlohmann::json& filters = JsonField(b.node(), "filters");
    if (filters.is_array() && !filters.empty() && rule.unsupported_field.empty()) {
      rule.unsupported_field = b.PathOf("filters");
    }
  });
  for (const char* field : {"retry", "sessionPersistence"}) {
    if (r.Has(field) && rule.unsupported_field.empty()) rule.unsupported_field = r.PathOf(field);
  }
  r.Object("timeouts", [&](JsonReader& t) {
    std::string value;
    if (t.String("request", &value)) rule.request_timeout = value;
    if (t.String("backendRequest", &value)) rule.backend_request_timeout = value;
  });
  return rule;
}

}  // namespace

bool LabelSelector::Matches(const std::map<std::string, std::string>& labels) const {
  for (const auto& [key, value] : match_labels) {
    auto it = labels.find(key);
    if (it == labels.end() || it->second != value) return false;
  }
  for (const Expression& e : match_expressions) {
    auto it = labels.find(e.key);
    const bool in = it != labels.end() &&
                    std::find(e.values.begin(), e.values.end(), it->second) != e.values.end();
    if ((e.op == "In" && !in) || (e.op == "NotIn" && in) ||
        (e.op == "Exists" && it == labels.end()) ||
        (e.op == "DoesNotExist" && it != labels.end())) {
      return false;
    }
  }
  return true;
}

bool Route::grpc() const { return kind == kGrpcRouteKind; }

Meta ParseMeta(const nlohmann::json& object) {
  const nlohmann::json& meta = JsonField(object, "metadata");
  Meta out;
  out.ns = JsonString(meta, "namespace");
  out.name = JsonString(meta, "name");
  const nlohmann::json& generation = JsonField(meta, "generation");
  out.generation = generation.is_number_integer() ? generation.get<int64_t>() : 0;
  out.creation_timestamp = JsonString(meta, "creationTimestamp");
  out.labels = StringMap(JsonField(meta, "labels"));
  out.resource_version = JsonString(meta, "resourceVersion");
  return out;
}

GatewayClass ParseGatewayClass(const nlohmann::json& object) {
  return {ParseMeta(object), JsonString(JsonField(object, "spec"), "controllerName")};
}

Gateway ParseGateway(const nlohmann::json& object) {
  Gateway gateway;
  gateway.meta = ParseMeta(object);
  const nlohmann::json& spec = JsonField(object, "spec");
  JsonReader r(spec, "spec", &gateway.errors);
  r.String("gatewayClassName", &gateway.class_name, true);
  gateway.has_addresses =
      JsonField(spec, "addresses").is_array() && !JsonField(spec, "addresses").empty();
  r.List("listeners", [&](JsonReader& l) { gateway.listeners.push_back(ReadListener(l)); });
  return gateway;
}

Route ParseRoute(const nlohmann::json& object, bool grpc) {
  Route route;
  route.kind = grpc ? kGrpcRouteKind : kHttpRouteKind;
  route.meta = ParseMeta(object);
  const nlohmann::json& spec = JsonField(object, "spec");
  JsonReader r(spec, "spec", &route.errors);
  r.List("parentRefs", [&](JsonReader& p) { route.parents.push_back(ReadParentRef(p)); });
  r.StringList("hostnames", &route.hostnames);
  r.List("rules", [&](JsonReader& rule) { route.rules.push_back(ReadRule(rule, grpc)); });
  if (!JsonField(spec, "rules").is_array()) {
    // No rules: one rule that matches everything and has no backend.
    RouteRule everything;
    everything.matches.emplace_back();
    everything.path = "spec";
    route.rules.push_back(std::move(everything));
  }
  return route;
}

ReferenceGrant ParseReferenceGrant(const nlohmann::json& object) {
  ReferenceGrant grant;
  grant.meta = ParseMeta(object);
  const nlohmann::json& spec = JsonField(object, "spec");
  FieldErrors ignored;  // a malformed entry grants nothing
  JsonReader r(spec, "spec", &ignored);
  r.List("from", [&](JsonReader& f) {
    ReferenceGrant::From from;
    f.String("group", &from.group);
    f.String("kind", &from.kind);
    f.String("namespace", &from.ns);
    grant.from.push_back(std::move(from));
  });
  r.List("to", [&](JsonReader& t) {
    ReferenceGrant::To to;
    t.String("group", &to.group);
    t.String("kind", &to.kind);
    t.String("name", &to.name);
    grant.to.push_back(std::move(to));
  });
  return grant;
}

}  // namespace holdfast::gateway_api
