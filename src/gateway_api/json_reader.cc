#include "src/gateway_api/json_reader.h"

#include "absl/strings/str_cat.h"
#include "src/kube/json_fields.h"

namespace holdfast::gateway_api {

std::string JsonReader::PathOf(std::string_view field) const {
  return path_.empty() ? std::string(field) : absl::StrCat(path_, ".", std::string(field));
}

bool JsonReader::Has(std::string_view field) const { return !JsonField(node_, field).is_null(); }

void JsonReader::Error(std::string_view field, std::string message) {
  errors_->Add(field.empty() ? path_ : PathOf(field), std::move(message));
}

bool JsonReader::String(std::string_view field, std::string* out, bool required) {
  const nlohmann::json& value = JsonField(node_, field);
  if (value.is_string()) {
    *out = value.get<std::string>();
    return true;
  }
  if (!value.is_null()) {
    Error(field, "must be a string");
  } else if (required) {
    Error(field, "is required");
  }
  return false;
}

bool JsonReader::Uint(std::string_view field, uint32_t* out, uint32_t min, uint32_t max,
                      bool required) {
  const nlohmann::json& value = JsonField(node_, field);
  if (value.is_null()) {
    if (required) Error(field, "is required");
    return false;
  }
  if (!value.is_number_integer()) {
    Error(field, "must be an integer");
    return false;
  }
  const int64_t number = value.get<int64_t>();
  if (number < min || number > max) {
    Error(field, absl::StrCat("must be ", min, " to ", max));
    return false;
  }
  *out = static_cast<uint32_t>(number);
  return true;
}

void JsonReader::List(std::string_view field, const std::function<void(JsonReader&)>& each) {
  const nlohmann::json& value = JsonField(node_, field);
  if (value.is_null()) return;
  if (!value.is_array()) {
    Error(field, "must be a list");
    return;
  }
  for (size_t i = 0; i < value.size(); ++i) {
    JsonReader item(value[i], absl::StrCat(PathOf(field), "[", i, "]"), errors_);
    if (!value[i].is_object()) {
      item.Error("", "must be an object");
      continue;
    }
    each(item);
  }
}

void JsonReader::StringList(std::string_view field, std::vector<std::string>* out) {
  const nlohmann::json& value = JsonField(node_, field);
  if (value.is_null()) return;
  if (!value.is_array()) {
    Error(field, "must be a list");
    return;
  }
  for (size_t i = 0; i < value.size(); ++i) {
    if (value[i].is_string()) {
      out->push_back(value[i].get<std::string>());
    } else {
      errors_->Add(absl::StrCat(PathOf(field), "[", i, "]"), "must be a string");
    }
  }
}

bool JsonReader::Object(std::string_view field, const std::function<void(JsonReader&)>& read) {
  const nlohmann::json& value = JsonField(node_, field);
  if (value.is_null()) return false;
  if (!value.is_object()) {
    Error(field, "must be an object");
    return false;
  }
  JsonReader inner(value, PathOf(field), errors_);
  read(inner);
  return true;
}

}  // namespace holdfast::gateway_api
