#pragma once
// What one Gateway API conversion (convert.h) carries to the next, so that
// a change to one of 10,000 HTTPRoutes converts and decodes that route and
// the virtual services it is placed on, not all of them:
//   - each route's rules as converted, while the route (its resourceVersion)
//     and what its backendRefs resolve against (Services' ports,
//     ReferenceGrants) are the same;
//   - each virtual service as decoded, while it is made of the same
//     converted routes in the same order;
//   - each port's Gateway as decoded, while it lists the same virtual
//     services with the same TLS;
//   - the decoder's memory of texts (holdfast_objects.h), for the rest.
// The output is the same as with a fresh cache (test). Not thread-safe: one
// conversion at a time.

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "nlohmann/json.hpp"
#include "src/gateway_api/conditions.h"
#include "src/gateway_api/holdfast_objects.h"
#include "src/gateway_api/input.h"
#include "src/gateway_api/rules.h"

namespace holdfast::gateway_api {

// The match's part of the Gateway API's precedence (convert.cc).
using MatchPrecedence = std::tuple<int, int64_t, bool, int64_t, int64_t>;

// One match of a rule as a holdfast route, shared by every host the route
// is placed on and by later conversions.
struct RouteSpec {
  std::shared_ptr<const nlohmann::json> spec;
  MatchPrecedence precedence;
};

// A route's rules converted, and what that says about the route.
struct ConvertedRoute {
  std::vector<std::vector<RouteSpec>> rules;  // per rule (none when dropped), per match
  std::vector<FieldError> problems;
  Condition resolved;                 // ResolvedRefs
  std::optional<FieldError> dropped;  // the first rule dropped
  std::vector<BackendService> backends;
};

// A virtual service as the decoder made it, and the route specs (in order)
// it was made of.
struct DecodedService {
  std::vector<std::shared_ptr<const nlohmann::json>> routes;
  std::optional<GatewayObject> object;
  std::vector<FieldError> errors;
};

// A port's holdfast Gateway as the decoder made it, and what it was made
// of: the virtual services it lists, in order, and its TLS spec (as text).
struct EmittedGateway {
  std::vector<std::string> services;
  std::string tls;
  std::optional<GatewayObject> object;
  std::vector<FieldError> errors;
};

class ConversionCache {
 public:
  HoldfastObjectDecoder& decoder() { return decoder_; }

  // Begins a conversion of `input`: converted routes are forgotten when
  // what backendRefs resolve against changed.
  void Begin(const GatewayApiInput& input);
  // Ends it: forgets what it did not use, so memory follows the objects.
  void End();

  // `route` as converted before, or nullptr (valid until the next Keep).
  // Routes without a resourceVersion (not from an API server) are never
  // remembered.
  const ConvertedRoute* FindRoute(const Route& route);
  void KeepRoute(const Route& route, const ConvertedRoute& converted);

  // The virtual service `name` as decoded before from exactly `routes`
  // (the same specs, in order), or nullptr (valid until the next Keep).
  const DecodedService* FindService(
      const std::string& name, const std::vector<std::shared_ptr<const nlohmann::json>>& routes);
  void KeepService(const std::string& name, DecodedService decoded);

  // The Gateway `name` as decoded before from the same services and TLS as
  // `wanted` (its object and errors unused), or nullptr. Listing 10,000
  // virtual services as JSON and decoding it again cost a fifth of a change.
  const EmittedGateway* FindGateway(const std::string& name, const EmittedGateway& wanted);
  const EmittedGateway& KeepGateway(const std::string& name, EmittedGateway emitted);

  size_t remembered_routes() const { return routes_.size(); }

 private:
  template <typename T>
  struct Entry {
    T value;
    bool used = true;
  };
  // What ResolveBackend reads of the input besides the route.
  struct Backdrop {
    std::map<ServiceKey, std::vector<uint32_t>> service_ports;
    std::vector<ReferenceGrant> grants;
    bool operator==(const Backdrop&) const = default;
  };
  static std::string RouteKey(const Route& route);

  HoldfastObjectDecoder decoder_;
  Backdrop backdrop_;
  absl::flat_hash_map<std::string, Entry<ConvertedRoute>> routes_;
  absl::flat_hash_map<std::string, Entry<DecodedService>> services_;
  absl::flat_hash_map<std::string, Entry<EmittedGateway>> gateways_;
};

}  // namespace holdfast::gateway_api
