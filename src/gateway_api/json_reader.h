#pragma once
// Reads the JSON of a Gateway API object leniently, recording every field
// of the wrong type (or missing when required) with its field path, the way
// the YAML decoder does for holdfast's own kinds. The API server checks the
// CRD schema first, so these errors are rare; they still must never throw.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "nlohmann/json.hpp"
#include "src/model/field_errors.h"

namespace holdfast::gateway_api {

class JsonReader {
 public:
  JsonReader(const nlohmann::json& node, std::string path, FieldErrors* errors)
      : node_(node), path_(std::move(path)), errors_(errors) {}

  const std::string& path() const { return path_; }
  const nlohmann::json& node() const { return node_; }
  std::string PathOf(std::string_view field) const;
  bool Has(std::string_view field) const;
  // Each returns false (leaving `out` alone) when absent or mistyped; a
  // mistyped field, or an absent required one, is recorded.
  bool String(std::string_view field, std::string* out, bool required = false);
  bool Uint(std::string_view field, uint32_t* out, uint32_t min, uint32_t max,
            bool required = false);
  // Calls `each` with a reader per item of the list `field`.
  void List(std::string_view field, const std::function<void(JsonReader&)>& each);
  void StringList(std::string_view field, std::vector<std::string>* out);
  // Calls `read` with a reader of the object `field`, if present.
  bool Object(std::string_view field, const std::function<void(JsonReader&)>& read);
  void Error(std::string_view field, std::string message);

 private:
  const nlohmann::json& node_;
  std::string path_;
  FieldErrors* errors_;
};

}  // namespace holdfast::gateway_api
