#pragma once
// Which listeners of holdfast's Gateways are served, and their conditions
// (Accepted, Conflicted, ResolvedRefs, Programmed) by the Gateway API's
// rules: supported protocols and route kinds, conflicts inside a Gateway,
// ports held by older Gateways, TLS certificate references.

#include <string>
#include <vector>

#include "src/gateway_api/conditions.h"
#include "src/gateway_api/input.h"

namespace holdfast::gateway_api {

// A listener holdfast serves.
struct ServedListener {
  const Gateway* gateway;
  const Listener* listener;
  ListenerStatus* status;
  const SecretRef* certificate = nullptr;  // HTTPS: the Secret to terminate with
  std::string certificate_ns;
};

// Fills `statuses` for every Gateway in `gateways` (those of holdfast's
// classes, oldest first) and returns the listeners that are served.
std::vector<ServedListener> PlanListeners(const std::vector<const Gateway*>& gateways,
                                          const GatewayApiInput& input,
                                          GatewayApiStatuses* statuses);

}  // namespace holdfast::gateway_api
