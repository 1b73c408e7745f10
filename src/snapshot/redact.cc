#include "src/snapshot/redact.h"

#include <memory>

#include "absl/container/flat_hash_set.h"
#include "google/protobuf/descriptor.h"
#include "udpa/annotations/sensitive.pb.h"

namespace holdfast {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

bool RedactMessage(Message& message, bool secret);

bool IsSecretField(const FieldDescriptor* field) {
  static const auto* const unannotated = new absl::flat_hash_set<std::string>(
      UnannotatedSecretFields().begin(), UnannotatedSecretFields().end());
  return field->options().GetExtension(udpa::annotations::sensitive) ||
         unannotated->contains(field->full_name());
}

// An Any is bytes to reflection: look inside it by its type, when the type
// is one we know.
bool RedactAny(Message& any, bool secret) {
  const Reflection* reflection = any.GetReflection();
  const FieldDescriptor* type_url = any.GetDescriptor()->FindFieldByName("type_url");
  const FieldDescriptor* value = any.GetDescriptor()->FindFieldByName("value");
  std::string url = reflection->GetString(any, type_url);
  const Descriptor* type =
      google::protobuf::DescriptorPool::generated_pool()->FindMessageTypeByName(
          url.substr(url.rfind('/') + 1));
  std::unique_ptr<Message> payload;
  if (type != nullptr) {
    payload.reset(google::protobuf::MessageFactory::generated_factory()->GetPrototype(type)->New());
    if (!payload->ParseFromString(reflection->GetString(any, value))) payload.reset();
  }
  if (payload == nullptr) {
    // Unreadable: nothing can be shown of it, and nothing of a secret kept.
    if (!secret || !reflection->HasField(any, value)) return false;
    reflection->ClearField(&any, value);
    return true;
  }
  if (!RedactMessage(*payload, secret)) return false;
  reflection->SetString(&any, value, payload->SerializeAsString());
  return true;
}

bool RedactField(Message& message, const FieldDescriptor* field, bool secret) {
  const Reflection* reflection = message.GetReflection();
  if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
    bool changed = false;
    if (field->is_repeated()) {
      for (int i = 0; i < reflection->FieldSize(message, field); ++i) {
        changed |= RedactMessage(*reflection->MutableRepeatedMessage(&message, field, i), secret);
      }
    } else {
      changed = RedactMessage(*reflection->MutableMessage(&message, field), secret);
    }
    return changed;
  }
  if (!secret) return false;
  if (field->cpp_type() == FieldDescriptor::CPPTYPE_STRING) {
    if (field->is_repeated()) {
      for (int i = 0; i < reflection->FieldSize(message, field); ++i) {
        reflection->SetRepeatedString(&message, field, i, std::string(kRedacted));
      }
    } else {
      reflection->SetString(&message, field, std::string(kRedacted));
    }
  } else {
    reflection->ClearField(&message, field);
  }
  return true;
}

// A secret scalar in a google.protobuf.Value becomes the string kRedacted:
// a Value with no kind at all would not print as JSON.
bool RedactValue(Message& value) {
  const Reflection* reflection = value.GetReflection();
  const FieldDescriptor* kind =
      reflection->GetOneofFieldDescriptor(value, value.GetDescriptor()->FindOneofByName("kind"));
  if (kind == nullptr || kind->name() == "null_value") return false;
  if (kind->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
    return RedactMessage(*reflection->MutableMessage(&value, kind), /*secret=*/true);
  }
  reflection->SetString(&value, value.GetDescriptor()->FindFieldByName("string_value"),
                        std::string(kRedacted));
  return true;
}

// `secret`: whether an enclosing field is secret (then every field is).
bool RedactMessage(Message& message, bool secret) {
  const Descriptor* descriptor = message.GetDescriptor();
  if (descriptor->well_known_type() == Descriptor::WELLKNOWNTYPE_ANY) {
    return RedactAny(message, secret);
  }
  if (secret && descriptor->well_known_type() == Descriptor::WELLKNOWNTYPE_VALUE) {
    return RedactValue(message);
  }
  std::vector<const FieldDescriptor*> fields;
  message.GetReflection()->ListFields(message, &fields);
  bool changed = false;
  for (const FieldDescriptor* field : fields) {
    bool field_secret = secret || IsSecretField(field);
    // Keep map keys: they name entries (as in a Struct), and redacting them
    // would merge the entries.
    if (descriptor->options().map_entry() && field->number() == 1) field_secret = false;
    changed |= RedactField(message, field, field_secret);
  }
  return changed;
}

}  // namespace

const std::vector<std::string>& UnannotatedSecretFields() {
  static const auto* const fields = new std::vector<std::string>{
      "envoy.config.core.v3.GrpcService.GoogleGrpc.CallCredentials.access_token",
      "envoy.config.core.v3.GrpcService.GoogleGrpc.CallCredentials.google_refresh_token",
      "envoy.config.core.v3.GrpcService.GoogleGrpc.CallCredentials."
      "ServiceAccountJWTAccessCredentials.json_key",
      "envoy.config.core.v3.GrpcService.GoogleGrpc.CallCredentials.GoogleIAMCredentials."
      "authorization_token",
  };
  return *fields;
}

bool RedactSecrets(Message& message) { return RedactMessage(message, /*secret=*/false); }

}  // namespace holdfast
