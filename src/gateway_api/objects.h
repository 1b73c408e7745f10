#pragma once
// Gateway API (gateway.networking.k8s.io, standard channel) objects as
// holdfast reads them: the fields it uses, typed, with every problem found
// while reading them (field paths as in the object: "spec.rules[0]...").
// Parsing only reads; what the objects mean is attachment.h and convert.h.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "src/model/field_errors.h"
#include "src/model/object.h"

namespace holdfast::gateway_api {

inline constexpr char kGroup[] = "gateway.networking.k8s.io";
inline constexpr char kControllerName[] = "holdfast.dev/gateway-controller";
// Kinds as they appear in statuses (ObjectKey::kind): qualified by group so
// that they never collide with holdfast.dev's Gateway.
inline constexpr char kGatewayClassKind[] = "GatewayClass.gateway.networking.k8s.io";
inline constexpr char kGatewayKind[] = "Gateway.gateway.networking.k8s.io";
inline constexpr char kHttpRouteKind[] = "HTTPRoute.gateway.networking.k8s.io";
inline constexpr char kGrpcRouteKind[] = "GRPCRoute.gateway.networking.k8s.io";

struct Meta {
  std::string ns;
  std::string name;
  int64_t generation = 0;
  std::string creation_timestamp;  // RFC 3339: sorts by time
  std::map<std::string, std::string> labels;
  std::string resource_version;  // "" when not from an API server
  bool operator==(const Meta&) const = default;
};

struct GatewayClass {
  Meta meta;
  std::string controller_name;
  bool operator==(const GatewayClass&) const = default;
};

struct GroupKind {
  std::string group;
  std::string kind;
  bool operator==(const GroupKind&) const = default;
};

// A metav1.LabelSelector (matchLabels and matchExpressions).
struct LabelSelector {
  struct Expression {
    std::string key;
    std::string op;  // In, NotIn, Exists, DoesNotExist
    std::vector<std::string> values;
    bool operator==(const Expression&) const = default;
  };
  std::map<std::string, std::string> match_labels;
  std::vector<Expression> match_expressions;
  bool Matches(const std::map<std::string, std::string>& labels) const;
  bool operator==(const LabelSelector&) const = default;
};

struct SecretRef {
  std::string group;  // "" (core)
  std::string kind = "Secret";
  std::string ns;  // "" : the referrer's
  std::string name;
  bool operator==(const SecretRef&) const = default;
};

struct Listener {
  std::string name;
  std::string hostname;  // "" : any
  uint32_t port = 0;
  std::string protocol;
  std::string tls_mode = "Terminate";
  std::vector<SecretRef> certificate_refs;
  enum class From { kSame, kAll, kSelector };
  From from = From::kSame;
  LabelSelector selector;
  std::vector<GroupKind> kinds;  // empty: every kind the protocol allows
  std::string path;              // "spec.listeners[i]"
  bool operator==(const Listener&) const = default;
};

struct Gateway {
  Meta meta;
  std::string class_name;
  std::vector<Listener> listeners;
  bool has_addresses = false;  // spec.addresses: holdfast cannot assign them
  FieldErrors errors;
  bool operator==(const Gateway&) const = default;
};

struct ParentRef {
  std::string group = kGroup;
  std::string kind = "Gateway";
  std::string ns;  // "" : the route's
  std::string name;
  std::string section_name;
  uint32_t port = 0;   // 0: any
  nlohmann::json raw;  // as written, for status.parents[].parentRef
  bool operator==(const ParentRef&) const = default;
};

struct BackendRef {
  std::string group;  // "" (core)
  std::string kind = "Service";
  std::string ns;  // "" : the route's
  std::string name;
  uint32_t port = 0;
  uint32_t weight = 1;
  std::string path;  // field path in the route
  bool operator==(const BackendRef&) const = default;
};

// A string match of the Gateway API: type Exact or RegularExpression (or,
// for paths, PathPrefix).
struct ValueMatch {
  std::string type = "Exact";
  std::string name;  // header or query parameter name
  std::string value;
  bool operator==(const ValueMatch&) const = default;
};

struct HeaderModifier {
  std::vector<std::pair<std::string, std::string>> set;
  std::vector<std::pair<std::string, std::string>> add;
  std::vector<std::string> remove;
  bool operator==(const HeaderModifier&) const = default;
};

struct PathModifier {
  std::string type;  // ReplaceFullPath | ReplacePrefixMatch
  std::string value;
  bool operator==(const PathModifier&) const = default;
};

struct Cors {
  std::vector<std::string> allow_origins;  // "*" or scheme://host[:port], host may be *.domain
  std::vector<std::string> allow_methods;
  std::vector<std::string> allow_headers;
  std::vector<std::string> expose_headers;
  bool allow_credentials = false;
  uint32_t max_age = 5;  // seconds, the API's default
  bool operator==(const Cors&) const = default;
};

struct Filter {
  std::string type;
  std::optional<Cors> cors;
  HeaderModifier headers;  // Request/ResponseHeaderModifier
  // RequestRedirect
  std::string scheme;
  std::string hostname;              // also URLRewrite
  std::optional<PathModifier> path;  // also URLRewrite
  uint32_t port = 0;
  uint32_t status_code = 302;
  // RequestMirror: the Service, and the share of requests as a fraction.
  std::optional<BackendRef> mirror;
  uint32_t mirror_numerator = 100;
  uint32_t mirror_denominator = 100;
  std::string path_in_route;  // "spec.rules[i].filters[j]"
  bool operator==(const Filter&) const = default;
};

// One match of an HTTPRoute or GRPCRoute rule.
struct RouteMatch {
  ValueMatch path{"PathPrefix", "", "/"};  // HTTP
  std::vector<ValueMatch> headers;
  std::vector<ValueMatch> query_params;  // HTTP
  std::string method;                    // HTTP
  // gRPC: method match (type Exact or RegularExpression); empty: any.
  std::string grpc_type = "Exact";
  std::string grpc_service;
  std::string grpc_method;
  bool operator==(const RouteMatch&) const = default;
};

struct RouteRule {
  std::vector<RouteMatch> matches;  // empty: one match of everything
  std::vector<Filter> filters;
  std::vector<BackendRef> backends;
  std::optional<std::string> request_timeout;          // Gateway API duration
  std::optional<std::string> backend_request_timeout;  // Gateway API duration
  // The first field holdfast does not implement (retry, sessionPersistence,
  // a backendRef's filters), if any: the rule is then not served.
  std::string unsupported_field;
  std::string path;  // "spec.rules[i]"
  bool operator==(const RouteRule&) const = default;
};

// An HTTPRoute or a GRPCRoute.
struct Route {
  std::string kind;  // kHttpRouteKind or kGrpcRouteKind
  Meta meta;
  std::vector<ParentRef> parents;
  std::vector<std::string> hostnames;
  std::vector<RouteRule> rules;
  FieldErrors errors;
  bool grpc() const;
  ObjectKey key() const { return {kind, meta.ns, meta.name}; }
  std::string short_kind() const { return grpc() ? "GRPCRoute" : "HTTPRoute"; }
  bool operator==(const Route&) const = default;
};

struct ReferenceGrant {
  Meta meta;
  struct From {
    std::string group, kind, ns;
    bool operator==(const From&) const = default;
  };
  struct To {
    std::string group, kind, name;  // name "": every object of the kind
    bool operator==(const To&) const = default;
  };
  std::vector<From> from;
  std::vector<To> to;
  bool operator==(const ReferenceGrant&) const = default;
};

// Readers of API objects (as the API server sends them).
Meta ParseMeta(const nlohmann::json& object);
GatewayClass ParseGatewayClass(const nlohmann::json& object);
Gateway ParseGateway(const nlohmann::json& object);
Route ParseRoute(const nlohmann::json& object, bool grpc);
ReferenceGrant ParseReferenceGrant(const nlohmann::json& object);

}  // namespace holdfast::gateway_api
