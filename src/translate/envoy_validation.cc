#include "src/translate/envoy_validation.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/node_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/any.pb.h"
#include "google/protobuf/descriptor.h"
#include "src/translate/registered_validators.h"

namespace holdfast {
namespace {

using google::protobuf::Any;
using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// Where a message sits in the resource being checked. Written out only for
// an error: most resources are valid, and most of their fields hold none.
struct FieldPath {
  const FieldPath* parent = nullptr;
  const FieldDescriptor* field = nullptr;  // null at the root
  int index = -1;                          // in a repeated field

  std::string ToString() const {
    if (field == nullptr) return "";
    std::string out = parent == nullptr ? "" : parent->ToString();
    absl::StrAppend(&out, out.empty() ? "" : ".", field->name());
    if (index >= 0) absl::StrAppend(&out, "[", index, "]");
    return out;
  }
};

// Whether a message of this type can hold an Any at any depth: the others
// are covered whole by the validator of the message around them. Computed
// once per type and thread (descriptors never change).
bool CanHoldAny(const Descriptor* type) {
  thread_local absl::flat_hash_map<const Descriptor*, bool> known;
  auto [entry, fresh] = known.try_emplace(type, false);
  if (!fresh) return entry->second;
  absl::flat_hash_set<const Descriptor*> seen = {type};
  std::vector<const Descriptor*> next = {type};
  bool found = false;
  while (!next.empty() && !found) {
    const Descriptor* message = next.back();
    next.pop_back();
    for (int i = 0; i < message->field_count() && !found; ++i) {
      const Descriptor* field_type = message->field(i)->message_type();
      if (field_type == nullptr || !seen.insert(field_type).second) continue;
      found = field_type == Any::descriptor();
      next.push_back(field_type);
    }
  }
  entry->second = found;  // no insertion into `known` since try_emplace
  return found;
}

// The fields of `type` that can hold an Any (an Any, or a message that can
// hold one at some depth), by field number as ListFields gives them: the
// only fields a walk looks into. Map fields are among them when their
// values can (typed_per_filter_config). Computed once per type and thread.
const std::vector<const FieldDescriptor*>& FieldsHoldingAny(const Descriptor* type) {
  // Node-based: a reference handed out stays valid as other types are added.
  thread_local absl::node_hash_map<const Descriptor*, std::vector<const FieldDescriptor*>> known;
  auto [entry, fresh] = known.try_emplace(type);
  if (!fresh) return entry->second;
  std::vector<const FieldDescriptor*>& fields = entry->second;
  for (int i = 0; i < type->field_count(); ++i) {
    const Descriptor* field_type = type->field(i)->message_type();
    if (field_type != nullptr && (field_type == Any::descriptor() || CanHoldAny(field_type))) {
      fields.push_back(type->field(i));
    }
  }
  std::sort(fields.begin(), fields.end(),
            [](const auto* a, const auto* b) { return a->number() < b->number(); });
  return fields;
}

// Checks `message` with its generated validator when `validate_self` (the
// validator already covers plain sub-messages), then descends to find Any
// fields, which validators treat as opaque.
absl::Status Walk(const Message& message, const FieldPath& path, bool validate_self);

// protoc-gen-validate reports a nested failure as a chain:
//   "AValidationError.Endpoints[0]: embedded message failed validation |
//    caused by BValidationError.PortValue: value must be ..."
// Turn it into "endpoints[0].port_value: value must be ...".
std::string PgvErrorToFieldPath(const std::string& error) {
  std::vector<std::string> fields;
  std::string reason = error;
  for (absl::string_view segment : absl::StrSplit(error, " | caused by ")) {
    size_t dot = segment.find("ValidationError.");
    size_t colon = segment.find(": ");
    if (dot == absl::string_view::npos || colon == absl::string_view::npos || colon < dot) {
      return error;  // not the shape we know: report it verbatim
    }
    absl::string_view camel = segment.substr(dot + 16, colon - dot - 16);
    std::string snake;
    for (size_t i = 0; i < camel.size(); ++i) {
      char c = camel[i];
      if (absl::ascii_isupper(c)) {
        if (i > 0 && camel[i - 1] != '[') snake.push_back('_');
        snake.push_back(absl::ascii_tolower(c));
      } else {
        snake.push_back(c);
      }
    }
    fields.push_back(std::move(snake));
    reason = std::string(segment.substr(colon + 2));
  }
  return absl::StrCat(absl::StrJoin(fields, "."), ": ", reason);
}

absl::Status CheckAny(const Any& any, const FieldPath& path) {
  std::string type_name = any.type_url().substr(any.type_url().rfind('/') + 1);
  const Descriptor* descriptor =
      google::protobuf::DescriptorPool::generated_pool()->FindMessageTypeByName(type_name);
  if (descriptor == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        path.ToString(), ": unknown type ", any.type_url(), " (holdfast cannot check it)"));
  }
  std::unique_ptr<Message> inner(
      google::protobuf::MessageFactory::generated_factory()->GetPrototype(descriptor)->New());
  if (!any.UnpackTo(inner.get())) {
    return absl::InvalidArgumentError(
        absl::StrCat(path.ToString(), ": cannot unpack ", any.type_url()));
  }
  return Walk(*inner, path, /*validate_self=*/true);
}

absl::Status CheckField(const Message& field_value, const FieldPath& path) {
  if (field_value.GetDescriptor() == Any::descriptor()) {
    Any any;
    any.CopyFrom(field_value);
    return CheckAny(any, path);
  }
  return Walk(field_value, path, /*validate_self=*/false);
}

absl::Status Walk(const Message& message, const FieldPath& path, bool validate_self) {
  if (validate_self) {
    std::string error;
    bool valid = false;
    try {
      valid = CheckRegisteredValidator(message, &error);
    } catch (const std::exception& e) {
      // The generated validators throw for rules they do not implement.
      valid = false;
      error = e.what();
    }
    if (!valid) {
      const std::string where = path.ToString();
      return absl::InvalidArgumentError(
          absl::StrCat(where, where.empty() ? "" : ".", PgvErrorToFieldPath(error)));
    }
  }

  // The validator checked this message's own rules and its plain
  // sub-messages; Any fields are opaque to it, so descend into them here.
  const Reflection* reflection = message.GetReflection();
  for (const FieldDescriptor* field : FieldsHoldingAny(message.GetDescriptor())) {
    if (field->is_repeated()) {
      for (int i = 0; i < reflection->FieldSize(message, field); ++i) {
        absl::Status status = CheckField(reflection->GetRepeatedMessage(message, field, i),
                                         FieldPath{&path, field, i});
        if (!status.ok()) return status;
      }
    } else if (reflection->HasField(message, field)) {
      absl::Status status =
          CheckField(reflection->GetMessage(message, field), FieldPath{&path, field});
      if (!status.ok()) return status;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateEnvoyResource(const Message& message) {
  return Walk(message, FieldPath(), /*validate_self=*/true);
}

}  // namespace holdfast
