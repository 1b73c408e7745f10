#include "src/source/json_message_reader.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "google/protobuf/descriptor.h"
#include "src/common/utf8.h"

namespace holdfast {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using Json = nlohmann::json;

// Far above what the document readers let through; only a guard.
constexpr int kMaxNesting = 128;
// protobuf's limit on a Duration's seconds (10,000 years).
constexpr int64_t kMaxDurationSeconds = 315'576'000'000;

std::optional<int64_t> SignedOf(const Json& value) {
  if (value.type() == Json::value_t::number_integer) return value.get<int64_t>();
  if (value.type() != Json::value_t::number_unsigned) return std::nullopt;
  const uint64_t v = value.get<uint64_t>();
  if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
  return static_cast<int64_t>(v);
}

std::optional<uint64_t> UnsignedOf(const Json& value) {
  if (value.type() != Json::value_t::number_unsigned) return std::nullopt;
  return value.get<uint64_t>();
}

// A double that prints and reads back as itself, as protobuf would read it.
std::optional<double> DoubleOf(const Json& value) {
  constexpr double kExactIntegers = 9007199254740992.0;  // 2^53
  if (value.is_number_float()) {
    const double v = value.get<double>();
    if (!std::isfinite(v)) return std::nullopt;
    return v;
  }
  if (std::optional<int64_t> v = SignedOf(value)) {
    if (std::abs(static_cast<double>(*v)) > kExactIntegers) return std::nullopt;
    return static_cast<double>(*v);
  }
  return std::nullopt;
}

// "-?digits(.1-9 digits)?s" into seconds and nanoseconds of the same sign.
bool ParseDuration(absl::string_view text, int64_t* seconds, int32_t* nanos) {
  if (!absl::ConsumeSuffix(&text, "s")) return false;
  const bool negative = absl::ConsumePrefix(&text, "-");
  absl::string_view whole = text, fraction;
  if (size_t dot = text.find('.'); dot != absl::string_view::npos) {
    whole = text.substr(0, dot);
    fraction = text.substr(dot + 1);
    if (fraction.empty() || fraction.size() > 9) return false;
  }
  auto all_digits = [](absl::string_view s) {
    for (char c : s) {
      if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
    }
    return true;
  };
  if (whole.empty() || whole.size() > 12 || !all_digits(whole) || !all_digits(fraction)) {
    return false;
  }
  int64_t s = 0;
  int32_t n = 0;
  if (!absl::SimpleAtoi(whole, &s) || s >= kMaxDurationSeconds) return false;
  if (!fraction.empty()) {
    if (!absl::SimpleAtoi(fraction, &n)) return false;
    for (size_t i = fraction.size(); i < 9; ++i) n *= 10;
  }
  *seconds = negative ? -s : s;
  *nanos = negative ? -n : n;
  return true;
}

bool ReadMessage(const Json& json, Message* message, int depth);

// Sets (or, for a list, adds) `field` of `message` from a JSON scalar.
bool ReadScalar(const Json& value, const FieldDescriptor* field, Message* message) {
  const Reflection* r = message->GetReflection();
  const bool add = field->is_repeated();
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32: {
      std::optional<int64_t> v = SignedOf(value);
      if (!v || *v < std::numeric_limits<int32_t>::min() ||
          *v > std::numeric_limits<int32_t>::max()) {
        return false;
      }
      add ? r->AddInt32(message, field, static_cast<int32_t>(*v))
          : r->SetInt32(message, field, static_cast<int32_t>(*v));
      return true;
    }
    case FieldDescriptor::CPPTYPE_INT64: {
      std::optional<int64_t> v = SignedOf(value);
      if (!v) return false;
      add ? r->AddInt64(message, field, *v) : r->SetInt64(message, field, *v);
      return true;
    }
    case FieldDescriptor::CPPTYPE_UINT32: {
      std::optional<uint64_t> v = UnsignedOf(value);
      if (!v || *v > std::numeric_limits<uint32_t>::max()) return false;
      add ? r->AddUInt32(message, field, static_cast<uint32_t>(*v))
          : r->SetUInt32(message, field, static_cast<uint32_t>(*v));
      return true;
    }
    case FieldDescriptor::CPPTYPE_UINT64: {
      std::optional<uint64_t> v = UnsignedOf(value);
      if (!v) return false;
      add ? r->AddUInt64(message, field, *v) : r->SetUInt64(message, field, *v);
      return true;
    }
    case FieldDescriptor::CPPTYPE_DOUBLE: {
      std::optional<double> v = DoubleOf(value);
      if (!v) return false;
      add ? r->AddDouble(message, field, *v) : r->SetDouble(message, field, *v);
      return true;
    }
    case FieldDescriptor::CPPTYPE_BOOL:
      if (!value.is_boolean()) return false;
      add ? r->AddBool(message, field, value.get<bool>())
          : r->SetBool(message, field, value.get<bool>());
      return true;
    case FieldDescriptor::CPPTYPE_STRING: {
      if (field->type() == FieldDescriptor::TYPE_BYTES || !value.is_string()) return false;
      const std::string& text = value.get_ref<const std::string&>();
      if (!IsValidUtf8(text)) return false;
      add ? r->AddString(message, field, text) : r->SetString(message, field, text);
      return true;
    }
    case FieldDescriptor::CPPTYPE_ENUM: {
      if (!value.is_string() || field->enum_type()->full_name() == "google.protobuf.NullValue") {
        return false;
      }
      const auto* v = field->enum_type()->FindValueByName(value.get_ref<const std::string&>());
      if (v == nullptr) return false;
      add ? r->AddEnum(message, field, v) : r->SetEnum(message, field, v);
      return true;
    }
    default:  // floats (read through a double, range-checked) and messages
      return false;
  }
}

bool IsWrapper(absl::string_view type) {
  return type == "google.protobuf.DoubleValue" || type == "google.protobuf.Int64Value" ||
         type == "google.protobuf.UInt64Value" || type == "google.protobuf.Int32Value" ||
         type == "google.protobuf.UInt32Value" || type == "google.protobuf.BoolValue" ||
         type == "google.protobuf.StringValue";
}

// A message-typed value: wrappers and Duration by their JSON forms, any
// other well-known type declined, the rest field by field.
bool ReadMessageValue(const Json& value, Message* message, int depth) {
  const Descriptor* type = message->GetDescriptor();
  const std::string& name = type->full_name();
  if (IsWrapper(name)) return ReadScalar(value, type->FindFieldByNumber(1), message);
  if (name == "google.protobuf.Duration") {
    int64_t seconds = 0;
    int32_t nanos = 0;
    if (!value.is_string() || !ParseDuration(value.get_ref<const std::string&>(), &seconds, &nanos))
      return false;
    message->GetReflection()->SetInt64(message, type->FindFieldByNumber(1), seconds);
    message->GetReflection()->SetInt32(message, type->FindFieldByNumber(2), nanos);
    return true;
  }
  if (name != "google.protobuf.Empty" && absl::StartsWith(name, "google.protobuf.")) return false;
  return ReadMessage(value, message, depth + 1);
}

bool ReadValue(const Json& value, const FieldDescriptor* field, Message* message, int depth) {
  if (value.is_null()) return false;
  if (field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) {
    return ReadScalar(value, field, message);
  }
  const Reflection* r = message->GetReflection();
  Message* child =
      field->is_repeated() ? r->AddMessage(message, field) : r->MutableMessage(message, field);
  return ReadMessageValue(value, child, depth);
}

const FieldDescriptor* FieldNamed(const Descriptor* type, const std::string& key) {
  if (const FieldDescriptor* field = type->FindFieldByName(key)) return field;
  for (int i = 0; i < type->field_count(); ++i) {
    if (type->field(i)->json_name() == key) return type->field(i);
  }
  return nullptr;
}

bool ReadMessage(const Json& json, Message* message, int depth) {
  if (!json.is_object() || depth > kMaxNesting) return false;
  const Descriptor* type = message->GetDescriptor();
  const Reflection* r = message->GetReflection();
  std::vector<const FieldDescriptor*> seen;
  for (const auto& [key, value] : json.items()) {
    const FieldDescriptor* field = FieldNamed(type, key);
    // A field named twice (by its name and its JSON name) or two members of
    // one oneof: protobuf's reader decides.
    if (field == nullptr || field->is_map() || absl::c_linear_search(seen, field)) return false;
    if (field->containing_oneof() != nullptr && r->HasOneof(*message, field->containing_oneof()))
      return false;
    seen.push_back(field);
    if (!field->is_repeated()) {
      if (!ReadValue(value, field, message, depth)) return false;
      continue;
    }
    if (!value.is_array()) return false;
    for (const Json& element : value) {
      if (!ReadValue(element, field, message, depth)) return false;
    }
  }
  return true;
}

}  // namespace

bool ReadJsonMessageExactly(const nlohmann::json& json, google::protobuf::Message* message) {
  return ReadMessage(json, message, 0);
}

}  // namespace holdfast
