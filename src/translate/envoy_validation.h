#pragma once

#include "absl/status/status.h"
#include "google/protobuf/message.h"

namespace holdfast {

// Checks a resource against Envoy's own validation rules: the
// protoc-gen-validate annotations of the Envoy API, through the validators
// generated from them. Messages packed in google.protobuf.Any fields (filter
// configs, transport sockets, ...) are unpacked and checked too, the way
// Envoy checks them when it instantiates the extension; an Any of a type
// this build does not know is reported.
//
// On failure the status message starts with the field path of the offending
// field, e.g. "filter_chains[0].filters[0].typed_config.stat_prefix: ...".
absl::Status ValidateEnvoyResource(const google::protobuf::Message& message);

}  // namespace holdfast
