#pragma once

#include <string>

#include "nlohmann/json.hpp"

namespace holdfast {

// `value` as a YAML document (block style, keys in JSON order; strings
// quoted where YAML would read them as another type).
std::string JsonToYaml(const nlohmann::json& value);

// Percent-encodes `value` for a URL query.
std::string UrlQueryEscape(const std::string& value);

}  // namespace holdfast
