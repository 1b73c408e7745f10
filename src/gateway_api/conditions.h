#pragma once
// Gateway API status conditions as holdfast computes them, before they are
// written anywhere (status.h turns them into the objects' status JSON).

#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "src/gateway_api/objects.h"

namespace holdfast::gateway_api {

struct Condition {
  std::string type;    // Accepted, ResolvedRefs, Programmed, Conflicted, PartiallyInvalid
  bool status = true;  // "True" / "False"
  std::string reason;  // a standard reason of the Gateway API
  std::string message;
  bool operator==(const Condition&) const = default;
};

// Sets (replaces) the condition of `condition.type` in `conditions`.
void SetCondition(std::vector<Condition>& conditions, Condition condition);
const Condition* FindCondition(const std::vector<Condition>& conditions, const std::string& type);

struct ListenerStatus {
  std::string name;
  std::vector<GroupKind> supported_kinds;
  std::vector<Condition> conditions;
  int attached_routes = 0;
};

// What holdfast made of one Gateway API object, per the conventions of the
// API: a GatewayClass or a Gateway has conditions (and a Gateway its
// listeners); a route has a status per parent it names that holdfast owns.
struct RouteParentStatus {
  nlohmann::json parent_ref;  // as the route wrote it
  std::vector<Condition> conditions;
};

struct GatewayApiStatus {
  ObjectKey key;  // kind: k*Kind of objects.h
  int64_t generation = 0;
  std::vector<Condition> conditions;       // GatewayClass, Gateway
  std::vector<ListenerStatus> listeners;   // Gateway
  std::vector<RouteParentStatus> parents;  // routes
  // Problems with field paths, for /debug/status and the log.
  std::vector<FieldError> problems;
};

using GatewayApiStatuses = std::map<ObjectKey, GatewayApiStatus>;

}  // namespace holdfast::gateway_api
