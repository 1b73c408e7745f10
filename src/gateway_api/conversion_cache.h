#pragma once
// What one Gateway API conversion (convert.h) carries to the next, so that
// a change to one of 10,000 HTTPRoutes converts, attaches and places that
// route and decodes the virtual services of the hosts it is on, not all:
//   - each route's part (route_placements.h), while the route (its
//     resourceVersion) and the frame (everything else the conversion
//     reads but Services) are the same; its rules as converted while the
//     route, the ReferenceGrants and the ports of the Services its
//     backendRefs name are the same;
//   - each host's virtual service as decoded, while it is made of the same
//     converted routes in the same order;
//   - each port's Gateway as decoded, while it lists the same virtual
//     services with the same TLS; each backend's Upstream as decoded;
//   - the decoder's memory of texts (holdfast_objects.h), for the rest.
// The output is the same as with a fresh cache (test). Not thread-safe: one
// conversion at a time.

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "src/gateway_api/conditions.h"
#include "src/gateway_api/holdfast_objects.h"
#include "src/gateway_api/input.h"
#include "src/gateway_api/route_placements.h"
#include "src/gateway_api/rules.h"

namespace holdfast::gateway_api {

// A port's holdfast Gateway as the decoder made it, and what it was made
// of: the virtual services it lists, in order, and its TLS spec (as text).
struct EmittedGateway {
  std::vector<std::string> services;
  std::string tls;
  std::optional<GatewayObject> object;
  std::vector<FieldError> errors;
};

// An Upstream as the decoder made it.
struct DecodedUpstream {
  std::optional<GatewayObject> object;
  std::vector<FieldError> errors;
};

class ConversionCache {
 public:
  HoldfastObjectDecoder& decoder() { return decoder_; }
  RoutePlacements& placements() { return placements_; }
  size_t remembered_routes() const { return placements_.routes(); }

  // Begins a conversion of `input`: tells what changed since the last
  // besides the routes.
  RoutePlacements::Changes Begin(const GatewayApiInput& input);
  // Ends it: forgets what it did not use, so memory follows the objects.
  void End();

  // The Gateway `name` as decoded before from the same services and TLS as
  // `wanted` (its object and errors unused), or nullptr. Listing 10,000
  // virtual services as JSON and decoding it again cost a fifth of a change.
  const EmittedGateway* FindGateway(const std::string& name, const EmittedGateway& wanted);
  const EmittedGateway& KeepGateway(const std::string& name, EmittedGateway emitted);

  // The Upstream of `backend`, decoded by `decode` when not remembered.
  template <typename Decode>
  const DecodedUpstream& UpstreamOf(const BackendService& backend, Decode decode) {
    Entry<DecodedUpstream>& entry = upstreams_[backend];
    if (!entry.decoded) entry = {decode(), true, true};
    entry.used = true;
    return entry.value;
  }

 private:
  template <typename T>
  struct Entry {
    T value;
    bool used = true;
    bool decoded = false;
  };
  using ServicePorts = std::map<ServiceKey, std::vector<uint32_t>>;
  // What converting a route reads of the input besides the route, the
  // Services and the ReferenceGrants. Classes and Gateways are compared
  // without their resourceVersion: holdfast's own status writes give them
  // a new one, and placing every route again for that cost 0.2 s.
  struct Frame {
    std::vector<GatewayClass> classes;
    std::vector<Gateway> gateways;
    std::map<std::string, std::map<std::string, std::string>> namespace_labels;
    std::map<ServiceKey, TlsSecret> secrets;
    bool operator==(const Frame&) const = default;
  };
  static Frame FrameOf(const GatewayApiInput& input);
  static ServicePorts PortsOf(const GatewayApiInput& input);
  static std::set<ServiceKey> Changed(const ServicePorts& before, const ServicePorts& after);

  HoldfastObjectDecoder decoder_;
  ServicePorts service_ports_;
  // Read by listeners (certificates) and rules (backendRefs).
  std::optional<std::vector<ReferenceGrant>> grants_;
  std::optional<Frame> frame_;  // none before the first conversion
  RoutePlacements placements_;
  absl::flat_hash_map<std::string, Entry<EmittedGateway>> gateways_;
  std::map<BackendService, Entry<DecodedUpstream>> upstreams_;
};

}  // namespace holdfast::gateway_api
