#pragma once
// Each route's part of a Gateway API conversion (convert.h), kept from one
// conversion to the next with the routes it placed on each host, so that a
// change to one of 10,000 HTTPRoutes attaches and places that route again
// and sorts and decodes only the hosts it was or is on. Walking every route
// and host on each change was most of a change's conversion (0.15 s).
//
// What a route makes depends on the route, on the ports of the Services
// its backendRefs name, and on the frame: everything else the conversion
// reads (classes, Gateways, ReferenceGrants, namespace labels, TLS
// Secrets). The conversion cache tells what changed. A route naming a
// changed Service is converted again; when the frame changed, every route
// is placed again, and the hosts keep their virtual services to reuse when
// made of the same specs.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "nlohmann/json.hpp"
#include "src/gateway_api/conditions.h"
#include "src/gateway_api/rules.h"
#include "src/gateway_api/source_keys.h"
#include "src/model/types.h"

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
  std::vector<BackendService> backends;  // distinct, sorted
  std::vector<ServiceKey> services;      // every Service looked up, sorted
};

// A holdfast Gateway: one Gateway of the Gateway API on one port.
using PortKey = std::pair<ObjectKey, uint32_t>;

// One match of a route's rule, placed on a host.
struct PlacedRoute {
  const Route* route;
  size_t rule;
  size_t match;
  std::shared_ptr<const nlohmann::json> spec;
  MatchPrecedence precedence;
};

// A virtual service as the decoder made it, and the route specs (in order)
// it was made of.
struct DecodedService {
  std::vector<std::shared_ptr<const nlohmann::json>> routes;
  std::optional<GatewayObject> object;
  std::vector<FieldError> errors;
};

// The routes placed on one hostname of a port, and its virtual service.
struct HostRoutes {
  int routes = 0;  // placed here, some perhaps with every rule dropped
  std::vector<PlacedRoute> placed;
  bool changed = true;  // placed since `service` and `sources` were made
  std::string service_name;
  SourceKeys sources;  // the routes placed here, in key order
  std::optional<DecodedService> service;
};

struct PortRoutes {
  std::map<std::string, HostRoutes> hosts;  // by hostname
  std::set<ObjectKey> routes;               // every route attached to the port
  // The port's Gateway and `routes`, in key order, as the conversion last
  // listed them (it makes them again only when they differ).
  SourceKeys sources;
};

// What one route adds to a conversion. `status` is null when no parentRef
// names a Gateway of holdfast's; once made, it is shared with conversions'
// outputs and never changed (GatewayApiStatuses copies before changing).
struct RoutePart {
  std::shared_ptr<const Route> route;
  std::shared_ptr<GatewayApiStatus> status;
  std::shared_ptr<const ConvertedRoute> converted;  // none when not converted
  std::vector<size_t> listeners;  // the served listeners it attaches to (indexes)
  std::vector<PortKey> ports;     // the ports it attaches to
  // Where it places its matches: each (port, host) once.
  std::vector<std::pair<PortKey, std::string>> hosts;
};

class RoutePlacements {
 public:
  // What changed since the last Update besides the routes.
  struct Changes {
    bool frame = true;
    bool grants = true;  // ReferenceGrants: every route's rules converted again
    std::set<ServiceKey> services;  // added, gone, or with other ports
  };
  // Makes the part of `route`. `before` is its rules as converted for the
  // same route version, or nullptr when they must be converted again.
  using MakePart = std::function<RoutePart(const std::shared_ptr<const Route>& route,
                                           std::shared_ptr<const ConvertedRoute> before)>;

  // Brings the parts to `routes`: the parts of routes gone or changed are
  // taken back, those of new or changed routes made by `make` and placed.
  // A route is unchanged when it is the same object or has the same
  // content (any resourceVersion); its rules are converted again when it
  // looked up a changed Service or the grants changed, and every part is
  // made again when the frame changed.
  void Update(const std::vector<std::shared_ptr<const Route>>& routes, const Changes& changes,
              const MakePart& make);

  size_t routes() const { return parts_.size(); }
  // How many parts were made, since the start.
  uint64_t parts_made() const { return parts_made_; }
  // Every part, in no particular order.
  template <typename F>
  void ForEachPart(F f) const {
    for (const auto& [key, entry] : parts_) f(entry.part);
  }
  // The routes on `port`, or nullptr when none attach to it. Hosts whose
  // `changed` is set need their service made again (by the caller).
  PortRoutes* Port(const PortKey& port);
  // How many routes attach to each served listener, by index.
  const std::map<size_t, int>& attached() const { return attached_; }
  // Each backend used, with how many routes use it.
  const std::map<BackendService, int>& backends() const { return backends_; }

 private:
  struct Entry {
    RoutePart part;
    uint64_t seen = 0;  // the last Update that found the route
  };
  static std::string KeyOf(const Route& route);
  static bool SameRoute(const Route& a, const Route& b);
  static bool ReadsAny(const RoutePart& part, const std::set<ServiceKey>& services);
  void Place(const RoutePart& part);
  void TakeBack(const RoutePart& part);
  void Rebase(RoutePart& part, const std::shared_ptr<const Route>& route);
  void DropEmptyHosts();

  absl::flat_hash_map<std::string, Entry> parts_;  // by kind/namespace/name
  std::map<PortKey, PortRoutes> ports_;
  std::map<size_t, int> attached_;
  std::map<BackendService, int> backends_;
  std::vector<std::pair<PortKey, std::string>> touched_;  // hosts changed in this Update
  uint64_t updates_ = 0;
  uint64_t parts_made_ = 0;
};

}  // namespace holdfast::gateway_api
