#pragma once
// Gateway API objects as the API server sends them, for unit tests.

#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "src/gateway_api/input.h"

namespace holdfast::gateway_api::testing {

using nlohmann::json;

// List parameters are vectors, not json: `{item}` as a json is the item
// itself for clang and a one-item array for GCC (the single-element
// list-initialization rule), and the clang ThreadSanitizer build runs these.

inline json Meta(const std::string& ns, const std::string& name, const std::string& created = "",
                 int64_t generation = 1) {
  json meta = {{"name", name}, {"generation", generation}};
  if (!ns.empty()) meta["namespace"] = ns;
  meta["creationTimestamp"] = created.empty() ? "2026-01-01T00:00:00Z" : created;
  return meta;
}

inline json ClassJson(const std::string& name, const std::string& controller = kControllerName) {
  return {{"apiVersion", "gateway.networking.k8s.io/v1"},
          {"kind", "GatewayClass"},
          {"metadata", Meta("", name)},
          {"spec", {{"controllerName", controller}}}};
}

inline json HttpListener(const std::string& name, int port, const std::string& hostname = "") {
  json l = {{"name", name}, {"port", port}, {"protocol", "HTTP"}};
  if (!hostname.empty()) l["hostname"] = hostname;
  return l;
}

inline json GatewayJson(const std::string& ns, const std::string& name, std::vector<json> listeners,
                        const std::string& created = "") {
  return {{"apiVersion", "gateway.networking.k8s.io/v1"},
          {"kind", "Gateway"},
          {"metadata", Meta(ns, name, created, 2)},
          {"spec", {{"gatewayClassName", "holdfast"}, {"listeners", json(std::move(listeners))}}}};
}

inline json Backend(const std::string& name, int port, int weight = 1, const std::string& ns = "") {
  json b = {{"name", name}, {"port", port}, {"weight", weight}};
  if (!ns.empty()) b["namespace"] = ns;
  return b;
}

inline json RouteJson(const std::string& kind, const std::string& ns, const std::string& name,
                      json hostnames, std::vector<json> rules, json parents = nullptr,
                      const std::string& created = "") {
  if (parents.is_null()) parents = json::array({{{"name", "gw"}, {"namespace", "infra"}}});
  json spec = {{"parentRefs", std::move(parents)}, {"rules", json(std::move(rules))}};
  if (!hostnames.is_null()) spec["hostnames"] = std::move(hostnames);
  return {{"apiVersion", "gateway.networking.k8s.io/v1"},
          {"kind", kind},
          {"metadata", Meta(ns, name, created, 3)},
          {"spec", std::move(spec)}};
}

inline json PrefixRule(const std::string& prefix, std::vector<json> backends) {
  return {{"matches", {{{"path", {{"type", "PathPrefix"}, {"value", prefix}}}}}},
          {"backendRefs", json(std::move(backends))}};
}

inline json GrantJson(const std::string& ns, const std::string& from_kind,
                      const std::string& from_ns, const std::string& to_kind) {
  return {{"apiVersion", "gateway.networking.k8s.io/v1beta1"},
          {"kind", "ReferenceGrant"},
          {"metadata", Meta(ns, "allow")},
          {"spec",
           {{"from", {{{"group", kGroup}, {"kind", from_kind}, {"namespace", from_ns}}}},
            {"to", {{{"group", ""}, {"kind", to_kind}}}}}}};
}

// A discovered Service with one port and one endpoint.
inline void AddService(GatewayApiInput& input, const std::string& ns, const std::string& name,
                       uint32_t port) {
  input.services[ServiceKey{ns, name}].ports.push_back(
      DiscoveredServicePort{"http", port, "", {{"192.0.2.1", 8080, "", false}}});
}

}  // namespace holdfast::gateway_api::testing
