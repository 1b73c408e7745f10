#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "src/snapshot/resource.h"
#include "src/xds/view_cache.h"

namespace holdfast {

// One response a session decided to send, before encoding.
struct Response {
  std::string type_url;
  std::string version;  // version_info (SotW) or system_version_info (delta)
  std::string nonce;
  ResourceListPtr list;              // the resources, often shared with other streams
  std::vector<std::string> removed;  // delta only

  const std::vector<ResourcePtr>& resources() const { return list->resources; }
};

// Order in which an ADS stream sends types, so a proxy never sees a reference
// before its target: clusters, endpoints, listeners, routes, then the rest.
int AdsTypeRank(absl::string_view type_url);
// The types in `types` (type URL -> state with a `dirty` flag) that may owe
// a response, in AdsTypeRank order.
template <typename TypeStates>
std::vector<const std::string*> DirtyTypesInAdsOrder(const TypeStates& types) {
  std::vector<const std::string*> order;
  for (const auto& [type, state] : types) {
    if (state.dirty) order.push_back(&type);
  }
  std::stable_sort(order.begin(), order.end(), [](const std::string* a, const std::string* b) {
    return AdsTypeRank(*a) < AdsTypeRank(*b);
  });
  return order;
}
// Types whose SotW responses carry every resource (absence means deletion).
bool IsFullStateType(absl::string_view type_url);
// Types whose SotW responses carry only what changed since the last response
// on the stream: a client keeps what a response leaves out
// (xds_protocol.rst: only Listener and Cluster responses are full state).
// Limited to the two types a fleet holds many of, endpoints and routes.
bool IsIncrementalSotwType(absl::string_view type_url);

}  // namespace holdfast
