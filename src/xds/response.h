#pragma once

#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "src/snapshot/resource.h"

namespace holdfast {

// One response a session decided to send, before encoding.
struct Response {
  std::string type_url;
  std::string version;  // version_info (SotW) or system_version_info (delta)
  std::string nonce;
  std::vector<ResourcePtr> resources;
  std::vector<std::string> removed;  // delta only
};

// Order in which an ADS stream sends types, so a proxy never sees a reference
// before its target: clusters, endpoints, listeners, routes, then the rest.
int AdsTypeRank(absl::string_view type_url);
// Types whose SotW responses carry every resource (absence means deletion).
bool IsFullStateType(absl::string_view type_url);

}  // namespace holdfast
