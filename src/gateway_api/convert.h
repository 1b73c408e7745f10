#pragma once
// The Gateway API as holdfast objects. Data flow:
//
//   GatewayApiInput (objects.h, input.h: parsed Gateway API objects,
//   namespace labels, TLS Secrets, discovered Services)
//     -> PlanListeners (listeners.h): which listeners are served
//     -> AttachRoute (attachment.h): which listeners each route attaches to
//     -> ConvertRule (rules.h): each rule as holdfast routes
//     -> holdfast objects (this file), decoded by the same decoder as files:
//          per Gateway and port        a Gateway   gateway-api:GW:PORT
//          per hostname on that port   a VirtualService with the rules of
//                                      every route attached there, ordered
//                                      by the Gateway API's precedence
//          per Service port            an Upstream (service: {name, port})
//          per TLS Secret              a Secret
//     -> TranslationInput, beside the holdfast.dev objects
//   and the conditions found on the way (conditions.h), which
//   status.h completes with the translation's outcome.

#include <map>
#include <vector>

#include "src/gateway_api/conditions.h"
#include "src/gateway_api/conversion_cache.h"
#include "src/gateway_api/input.h"
#include "src/gateway_api/source_keys.h"
#include "src/model/types.h"

namespace holdfast::gateway_api {

struct Conversion {
  // Holdfast objects, named by synthesized_names.h.
  std::vector<GatewayObject> objects;
  // Which Gateway API objects each of them was made from.
  MadeFrom made_from;
  // The statuses of the Gateway API objects holdfast owns, before
  // translation (Programmed is settled by status.h).
  GatewayApiStatuses statuses;
};

// Pure: the same input gives the same output. `cache` carries converted
// routes and decoded objects from one conversion to the next
// (conversion_cache.h); the output is the same as with a fresh one.
Conversion ConvertGatewayApi(const GatewayApiInput& input, ConversionCache& cache);
Conversion ConvertGatewayApi(const GatewayApiInput& input);

}  // namespace holdfast::gateway_api
