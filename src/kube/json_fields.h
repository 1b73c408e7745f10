#pragma once
// Reading JSON from the API server without trusting its shape. nlohmann's
// value() throws when a field has another type, and const operator[] on a
// missing key is undefined behaviour; a reflector or watch thread that hit
// either would end the process. These return an empty value instead.

#include <string>
#include <string_view>

#include "nlohmann/json.hpp"

namespace holdfast {

// The field `key` of `object`, or null when `object` is not an object or
// has no such field.
inline const nlohmann::json& JsonField(const nlohmann::json& object, std::string_view key) {
  static const nlohmann::json kNull;
  if (!object.is_object()) return kNull;
  auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

// The string field `key` of `object`, or "" when absent or not a string.
inline std::string JsonString(const nlohmann::json& object, std::string_view key) {
  const nlohmann::json& field = JsonField(object, key);
  return field.is_string() ? field.get<std::string>() : std::string();
}

}  // namespace holdfast
