#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "nlohmann/json.hpp"

namespace holdfast {

// One Envoy resource as served, for comparison: its version (a digest of
// its full content, secrets included) and its redacted JSON.
struct ServedResource {
  std::string version;
  nlohmann::json body;
};
// By (type URL, name).
using ServedResources = std::map<std::pair<std::string, std::string>, ServedResource>;

// Resources of one group out of a /debug/snapshot page (with resources).
// An unknown group is an empty set.
ServedResources ServedResourcesOf(const nlohmann::json& snapshot_page, const std::string& group);

struct ResourceChange {
  enum class Kind { kAdded, kChanged, kRemoved };
  Kind kind;
  std::string type_url;
  std::string name;
  // For kChanged: a unified line diff of the redacted JSON (empty when
  // only redacted fields differ).
  std::string diff;
};

// What serving `after` instead of `before` changes, by type then name.
std::vector<ResourceChange> DiffResources(const ServedResources& before,
                                          const ServedResources& after);
// "+ CDS shop/api", "~ RDS shop" with its diff indented, "- LDS old", then a
// count line.
std::string RenderChanges(const std::vector<ResourceChange>& changes);

// A unified diff of two texts by line ("-"/"+"/" " prefixes, hunks of
// `context` unchanged lines around each change, "@@" between hunks).
std::string LineDiff(const std::string& before, const std::string& after, int context = 3);

}  // namespace holdfast
