#pragma once

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "yaml-cpp/yaml.h"

namespace holdfast {

// Converts a YAML node to JSON the way a person reading the YAML would:
// unquoted true/false are booleans, unquoted null/~ is null, unquoted numbers
// are numbers, everything else (and anything quoted) is a string. JSON input
// (a subset of YAML) converts to itself. Nesting deeper than `max_depth`
// (including aliases that refer to themselves) is an error, and so is a
// document that expands past `max_expansion`, where a node counts one and a
// scalar also its length (aliases are copied, so a small file can otherwise
// expand exponentially).
absl::StatusOr<nlohmann::json> YamlToJson(const YAML::Node& node, int max_depth = 64,
                                          int64_t max_expansion = 1'000'000);
// The same with an expansion budget shared by several calls (one file's documents).
absl::StatusOr<nlohmann::json> YamlToJson(const YAML::Node& node, int max_depth,
                                          int64_t* expansion_budget);

}  // namespace holdfast
