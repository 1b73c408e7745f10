#pragma once

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"

namespace holdfast {

// What a redacted string or bytes field holds.
inline constexpr absl::string_view kRedacted = "[redacted]";

// Removes secrets from `message` before it is shown (admin debug pages, the
// CLI's resource listing). A field is secret when the Envoy API marks it
// `(udpa.annotations.sensitive) = true` (TLS private keys, key passwords,
// PKCS#12 bundles, session ticket keys, generic secrets, private key
// provider configs) or is one of UnannotatedSecretFields(); everything
// inside a secret field is secret too. Secret strings and bytes become
// kRedacted (so the reader sees that a value was there), other secret
// scalars are cleared. The walk is by reflection over every field, and
// google.protobuf.Any payloads of a type in the generated pool are unpacked,
// redacted and packed again. An Any of an unknown type cannot be read (nor
// printed as JSON); under a secret field its payload is cleared. Map keys
// are kept. Returns whether anything was changed.
bool RedactSecrets(google::protobuf::Message& message);

// Full names of fields that carry credentials but have no `sensitive`
// annotation in the Envoy API (gRPC call credentials).
const std::vector<std::string>& UnannotatedSecretFields();

}  // namespace holdfast
