#pragma once
// Gateway API statuses, completed with the translation's outcome, in the
// two forms holdfast shows them: entries of /debug/status (StatusMap, with
// field paths) and the `status` JSON the API defines, for a status writer
// to PUT to each object's /status subresource.

#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "src/gateway_api/convert.h"
#include "src/translate/status.h"

namespace holdfast::gateway_api {

// Pure. A conversion's `statuses` with each Gateway's (and its listeners')
// Programmed condition set from what the translator made of the holdfast
// Gateways made from it (`made_from`, the conversion's). By value: a caller
// done with the conversion's statuses moves them in (a copy of 10,000
// was a few milliseconds of every change).
GatewayApiStatuses SettleStatuses(GatewayApiStatuses statuses,
                                  const MadeFrom& made_from,
                                  const StatusMap& translated);

// Pure. `translated` with the statuses of the holdfast objects made from
// Gateway API objects folded into those objects' own entries (so
// /debug/status names only objects users wrote), and an entry per Gateway
// API object: Rejected when not accepted, Warning when a reference or a
// part is not served, with every problem's field path.
StatusMap DebugStatuses(const GatewayApiStatuses& statuses, const Conversion& conversion,
                        StatusMap translated);

// Pure. The `status` to write to one object: `current` is the object's
// status as last read from the API server ({} if none). Conditions carry
// observedGeneration; lastTransitionTime is kept from `current` while a
// condition's status is unchanged, else `now`. Fields other controllers
// own are kept: a route's parents entries of other controllers, a
// Gateway's addresses.
nlohmann::json GatewayApiStatusJson(const GatewayApiStatus& status, const nlohmann::json& current,
                                    absl::Time now);

}  // namespace holdfast::gateway_api
