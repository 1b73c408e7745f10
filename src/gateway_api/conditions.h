#pragma once
// Gateway API status conditions as holdfast computes them, before they are
// written anywhere (status.h turns them into the objects' status JSON).

#include <map>
#include <memory>
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

// Statuses by object. Each status is shared, so that copying the map, and
// keeping a route's status from one conversion to the next, costs a
// pointer, not the status: a conversion of 10,000 HTTPRoutes spent half of
// a change's time copying and freeing them. Shared statuses are never
// changed: Mutable() copies a status others share before changing it.
class GatewayApiStatuses {
 public:
  using Shared = std::shared_ptr<const GatewayApiStatus>;
  using Map = std::map<ObjectKey, Shared>;

  bool contains(const ObjectKey& key) const { return statuses_.contains(key); }
  size_t size() const { return statuses_.size(); }
  bool empty() const { return statuses_.empty(); }
  // The status of `key`, which must be present.
  const GatewayApiStatus& at(const ObjectKey& key) const { return *statuses_.at(key); }
  // The status of `key`, or nullptr.
  const Shared* Find(const ObjectKey& key) const;
  // The status of `key`, to change in place: added (with its key) when
  // absent, copied first when shared. Changes through it end before the
  // map is copied.
  GatewayApiStatus& Mutable(const ObjectKey& key);
  // Sets the status of `status->key` to `status`, to share. Not const: a
  // status this map alone holds is changed in place.
  void Put(std::shared_ptr<GatewayApiStatus> status);

  Map::const_iterator begin() const { return statuses_.begin(); }
  Map::const_iterator end() const { return statuses_.end(); }

 private:
  Map statuses_;
};

}  // namespace holdfast::gateway_api
