#include "src/translate/flattener.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace holdfast {
namespace {

namespace route_v3 = envoy::config::route::v3;

FlatRoute Synthesized(const Route& route, const std::string& ns, ObjectStatus* status,
                      uint32_t code, const std::string& body) {
  route_v3::Route r;
  if (!route.name.empty()) r.set_name(route.name);
  r.mutable_match()->set_prefix(PathPrefixOf(route).empty() ? "/" : PathPrefixOf(route));
  r.mutable_direct_response()->set_status(code);
  r.mutable_direct_response()->mutable_body()->set_inline_string(body);
  return {nullptr, ns, status, std::move(r)};
}

}  // namespace

std::string PathPrefixOf(const Route& route) {
  return route.match.path.kind == StringMatch::Kind::kPrefix ? route.match.path.value : "";
}

std::vector<FlatRoute> Flattener::Flatten(const GatewayObject& owner,
                                          const std::vector<Route>& routes) {
  std::vector<FlatRoute> out;
  std::vector<ObjectKey> stack = {owner.key()};
  Expand(owner, routes, "", stack, &out);
  return out;
}

std::vector<const GatewayObject*> Flattener::TablesOf(const GatewayObject& owner,
                                                      const Route& route, const Delegate& delegate,
                                                      ObjectStatus& status,
                                                      std::vector<FlatRoute>* out) {
  std::vector<const GatewayObject*> tables;
  for (size_t i = 0; i < delegate.route_tables.size(); ++i) {
    const ObjectRef& ref = delegate.route_tables[i];
    const GatewayObject* table = index_.Find(kind::kRouteTable, ref, owner.meta.ns);
    if (table == nullptr) {
      status.Warn(absl::StrCat(route.path, ".delegate.routeTables[", i, "]"),
                  absl::StrCat("route table ", ref.ns.empty() ? owner.meta.ns : ref.ns, "/",
                               ref.name, " not found; the route answers ", missing_status_),
                  route.location);
      out->push_back(
          Synthesized(route, owner.meta.ns, &status, missing_status_, "route table not found\n"));
      continue;
    }
    tables.push_back(table);
  }
  if (delegate.selector) {
    for (const GatewayObject* table :
         index_.Select(kind::kRouteTable, *delegate.selector, owner.meta.ns)) {
      tables.push_back(table);
    }
  }
  std::stable_sort(tables.begin(), tables.end(), [](const auto* a, const auto* b) {
    const int wa = std::get<RouteTableSpec>(*a->spec).weight;
    const int wb = std::get<RouteTableSpec>(*b->spec).weight;
    return wa != wb ? wa < wb : KeyLess(*a, *b);
  });
  tables.erase(std::unique(tables.begin(), tables.end()), tables.end());
  return tables;
}

void Flattener::Expand(const GatewayObject& owner, const std::vector<Route>& routes,
                       const std::string& parent_prefix, std::vector<ObjectKey>& stack,
                       std::vector<FlatRoute>* out) {
  ObjectStatus& status = statuses_[owner.key()];
  for (const Route& route : routes) {
    if (!parent_prefix.empty() && parent_prefix != "/" &&
        PathPrefixOf(route).rfind(parent_prefix, 0) != 0) {
      status.Warn(absl::StrCat(route.path, ".match"),
                  absl::StrCat("a delegated route must match a prefix under \"", parent_prefix,
                               "\"; route ignored"),
                  route.location);
      continue;
    }
    const auto* delegate = std::get_if<Delegate>(&route.action);
    if (delegate == nullptr) {
      out->push_back({&route, owner.meta.ns, &status, std::nullopt});
      continue;
    }
    for (const GatewayObject* table : TablesOf(owner, route, *delegate, status, out)) {
      if (std::find(stack.begin(), stack.end(), table->key()) != stack.end()) {
        std::vector<std::string> cycle;
        for (const ObjectKey& k : stack) cycle.push_back(k.ToString());
        cycle.push_back(table->key().ToString());
        status.Warn(absl::StrCat(route.path, ".delegate"),
                    absl::StrCat("delegation cycle: ", absl::StrJoin(cycle, " -> "),
                                 "; the route answers 508"),
                    route.location);
        out->push_back(Synthesized(route, owner.meta.ns, &status, 508, "delegation cycle\n"));
        continue;
      }
      stack.push_back(table->key());
      Expand(*table, std::get<RouteTableSpec>(*table->spec).routes, PathPrefixOf(route), stack,
             out);
      stack.pop_back();
    }
  }
}

}  // namespace holdfast
