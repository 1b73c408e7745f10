#pragma once
// Which served listeners a route attaches to, per parentRef, by the
// Gateway API's rules: sectionName and port select listeners; the
// listener's allowedRoutes (namespaces From Same/All/Selector, kinds) must
// admit the route; hostnames are intersected with the listener's.

#include <string>
#include <vector>

#include "src/gateway_api/conditions.h"
#include "src/gateway_api/input.h"
#include "src/gateway_api/listeners.h"

namespace holdfast::gateway_api {

struct Attachment {
  const ServedListener* listener;
  std::vector<std::string> hostnames;  // the intersection; "*" for any host
};

// One parentRef that names a Gateway of holdfast's.
struct ParentAttachment {
  const ParentRef* parent;
  Condition accepted;  // Accepted (True) or why not
  std::vector<Attachment> attachments;
};

// The hostnames a route may serve on a listener: the route's hostnames
// intersected with the listener's (either empty means any). Empty result:
// no hostname in common.
std::vector<std::string> IntersectHostnames(const std::string& listener,
                                            const std::vector<std::string>& route);

// The parentRefs of `route` that name one of `gateways` (holdfast's), each
// with the listeners it attaches to. ParentRefs of other controllers'
// Gateways are left out: their status is not holdfast's to write.
std::vector<ParentAttachment> AttachRoute(const Route& route,
                                          const std::vector<const Gateway*>& gateways,
                                          const std::vector<ServedListener>& served,
                                          const GatewayApiInput& input);

}  // namespace holdfast::gateway_api
