#pragma once

#include <optional>
#include <string>
#include <vector>

#include "envoy/config/route/v3/route_components.pb.h"
#include "src/model/types.h"
#include "src/translate/object_index.h"
#include "src/translate/status.h"

namespace holdfast {

// A route after delegation is expanded, with the object it belongs to.
struct FlatRoute {
  const Route* route = nullptr;
  std::string ns;
  ObjectStatus* status = nullptr;
  // Set instead of `route` for a delegation that could not be followed.
  std::optional<envoy::config::route::v3::Route> synthesized;
};

// Expands delegation: the routes of a virtual service with every delegating
// route replaced by the routes of the tables it delegates to, in order.
// Tables that are missing or form a cycle become a route answering
// `missing_status` or 508; problems are warnings in `statuses`.
class Flattener {
 public:
  Flattener(const ObjectIndex& index, StatusMap& statuses, uint32_t missing_status)
      : index_(index), statuses_(statuses), missing_status_(missing_status) {}

  std::vector<FlatRoute> Flatten(const GatewayObject& owner, const std::vector<Route>& routes);

 private:
  void Expand(const GatewayObject& owner, const std::vector<Route>& routes,
              const std::string& parent_prefix, std::vector<ObjectKey>& stack,
              std::vector<FlatRoute>* out);
  // The tables one delegating route names or selects, in delegation order;
  // missing ones are reported and become synthesized routes in `out`.
  std::vector<const GatewayObject*> TablesOf(const GatewayObject& owner, const Route& route,
                                             const Delegate& delegate, ObjectStatus& status,
                                             std::vector<FlatRoute>* out);

  const ObjectIndex& index_;
  StatusMap& statuses_;
  uint32_t missing_status_;
};

// A path prefix a route matches on, or "" for other matches.
std::string PathPrefixOf(const Route& route);

}  // namespace holdfast
