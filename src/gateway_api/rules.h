#pragma once
// One HTTPRoute or GRPCRoute rule as holdfast routes (the route format of
// docs/configuration.md, as JSON for the decoder): one route per match,
// the rule's filters as route options or a redirect, its backendRefs as
// weighted upstreams.

#include <optional>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "src/gateway_api/input.h"
#include "src/model/field_errors.h"

namespace holdfast::gateway_api {

// A Service port a route sends traffic to: becomes an Upstream.
struct BackendService {
  std::string ns;
  std::string name;
  uint32_t port = 0;
  bool http2 = false;
  auto operator<=>(const BackendService&) const = default;
};

// Why a backendRef cannot be used (ResolvedRefs False), or nothing.
struct BackendProblem {
  std::string reason;  // RefNotPermitted, BackendNotFound, InvalidKind
  FieldError error;
};

// The rule's routes, or why the rule cannot be served as written.
struct ConvertedRule {
  std::vector<nlohmann::json> routes;  // one per match, in match order
  std::vector<BackendService> backends;
  std::vector<BackendProblem> backend_problems;
  std::optional<FieldError> unsupported;  // the rule is dropped (PartiallyInvalid)
  // The Services whose ports the rule was converted with, found or not.
  std::vector<ServiceKey> services_read;
};

ConvertedRule ConvertRule(const Route& route, const RouteRule& rule, const GatewayApiInput& input);

}  // namespace holdfast::gateway_api
