#include "src/gateway_api/route_placements.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace holdfast::gateway_api {

std::string RoutePlacements::KeyOf(const Route& route) {
  return absl::StrCat(route.kind, "/", route.meta.ns, "/", route.meta.name);
}

// The same route, whatever its resourceVersion: holdfast's own write of a
// route's status gives it a new one, and the route is then the same.
bool RoutePlacements::SameRoute(const Route& a, const Route& b) {
  if (&a == &b) return true;
  if (a.meta.resource_version == b.meta.resource_version) return a == b;
  Route other = b;  // rare: a route read again
  other.meta.resource_version = a.meta.resource_version;
  return a == other;
}

bool RoutePlacements::ReadsAny(const RoutePart& part, const std::set<ServiceKey>& services) {
  if (services.empty() || part.converted == nullptr) return false;
  return std::any_of(part.converted->services.begin(), part.converted->services.end(),
                     [&](const ServiceKey& key) { return services.contains(key); });
}

void RoutePlacements::Update(const std::vector<std::shared_ptr<const Route>>& routes,
                             const Changes& changes, const MakePart& make) {
  const uint64_t update = ++updates_;
  for (const std::shared_ptr<const Route>& route : routes) {
    auto [it, added] = parts_.try_emplace(KeyOf(*route));
    Entry& entry = it->second;
    if (entry.seen == update) continue;  // a twin: the first one counts
    entry.seen = update;
    std::shared_ptr<const ConvertedRoute> before;
    if (!added) {
      const bool rules_current = SameRoute(*entry.part.route, *route) && !changes.grants &&
                                 !ReadsAny(entry.part, changes.services);
      if (rules_current && !changes.frame) {
        if (entry.part.route != route) Rebase(entry.part, route);
        continue;
      }
      if (rules_current) before = entry.part.converted;
      TakeBack(entry.part);
    }
    entry.part = make(route, std::move(before));
    ++parts_made_;
    Place(entry.part);
  }
  for (auto it = parts_.begin(); it != parts_.end();) {
    if (it->second.seen == update) {
      ++it;
      continue;
    }
    TakeBack(it->second.part);
    parts_.erase(it++);
  }
  DropEmptyHosts();
}

void RoutePlacements::Place(const RoutePart& part) {
  static const ConvertedRoute kNone;
  const ConvertedRoute& converted = part.converted ? *part.converted : kNone;
  const auto& rules = converted.rules;
  const Route* route = part.route.get();
  for (const PortKey& port : part.ports) ports_[port].routes.insert(route->key());
  for (const auto& [port, hostname] : part.hosts) {
    HostRoutes& host = ports_[port].hosts[hostname];
    ++host.routes;
    for (size_t i = 0; i < rules.size(); ++i) {
      for (size_t m = 0; m < rules[i].size(); ++m) {
        host.placed.push_back({route, i, m, rules[i][m].spec, rules[i][m].precedence});
      }
    }
    host.changed = true;
    touched_.emplace_back(port, hostname);
  }
  for (size_t listener : part.listeners) ++attached_[listener];
  for (const BackendService& backend : converted.backends) ++backends_[backend];
}

// Holds the route read again in place of the equal one placed, so that the
// older object is freed (every route is read again after holdfast writes
// its status: holding both doubled the routes' memory).
void RoutePlacements::Rebase(RoutePart& part, const std::shared_ptr<const Route>& route) {
  for (const auto& [port, hostname] : part.hosts) {
    for (PlacedRoute& placed : ports_[port].hosts[hostname].placed) {
      if (placed.route == part.route.get()) placed.route = route.get();
    }
  }
  part.route = route;
}

void RoutePlacements::TakeBack(const RoutePart& part) {
  const Route* route = part.route.get();
  for (const PortKey& port : part.ports) ports_[port].routes.erase(route->key());
  for (const auto& [port, hostname] : part.hosts) {
    HostRoutes& host = ports_[port].hosts[hostname];
    --host.routes;
    std::erase_if(host.placed, [&](const PlacedRoute& p) { return p.route == route; });
    host.changed = true;
    touched_.emplace_back(port, hostname);
  }
  for (size_t listener : part.listeners) {
    if (--attached_[listener] == 0) attached_.erase(listener);
  }
  if (part.converted == nullptr) return;
  for (const BackendService& backend : part.converted->backends) {
    if (--backends_[backend] == 0) backends_.erase(backend);
  }
}

// A host no route is placed on serves no virtual service; a port no route
// attaches to keeps no entry.
void RoutePlacements::DropEmptyHosts() {
  for (const auto& [port, hostname] : touched_) {
    auto p = ports_.find(port);
    if (p == ports_.end()) continue;
    auto h = p->second.hosts.find(hostname);
    if (h != p->second.hosts.end() && h->second.routes == 0) p->second.hosts.erase(h);
    if (p->second.hosts.empty() && p->second.routes.empty()) ports_.erase(p);
  }
  touched_.clear();
}

PortRoutes* RoutePlacements::Port(const PortKey& port) {
  auto it = ports_.find(port);
  return it == ports_.end() ? nullptr : &it->second;
}

}  // namespace holdfast::gateway_api
