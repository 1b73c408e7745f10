#pragma once

#include "nlohmann/json.hpp"
#include "yaml-cpp/yaml.h"

namespace holdfast {

// Converts a YAML node to JSON the way a person reading the YAML would:
// unquoted true/false are booleans, unquoted null/~ is null, unquoted numbers
// are numbers, everything else (and anything quoted) is a string. JSON input
// (a subset of YAML) converts to itself.
nlohmann::json YamlToJson(const YAML::Node& node);

}  // namespace holdfast
