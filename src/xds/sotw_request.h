#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "envoy/config/core/v3/base.pb.h"
#include "envoy/service/discovery/v3/discovery.pb.h"

namespace holdfast {

// The fields of a DiscoveryRequest a SotW session uses, viewing the bytes
// they came from. A SotW ACK repeats every name the proxy subscribes to; at
// fleet scale, parsing those into a message (one string allocation per name,
// per ACK, per proxy) was most of the CPU a push cost, and an ACK whose names
// are unchanged needs none of them copied.
struct SotwRequest {
  absl::string_view version_info;
  absl::string_view type_url;
  absl::string_view response_nonce;
  std::vector<absl::string_view> resource_names;
  bool has_error_detail = false;
  int error_code = 0;
  std::string error_message;

  // Views `message`, which must outlive the result.
  static SotwRequest Of(const envoy::service::discovery::v3::DiscoveryRequest& message);
};

// Reads a serialized DiscoveryRequest into `request` (viewing `bytes`, which
// must outlive it) and its node, when it carries one, into `node`. Fails
// like protobuf parsing would: on malformed bytes, and on strings that are
// not UTF-8.
absl::Status ParseSotwRequest(absl::string_view bytes, SotwRequest* request,
                              std::optional<envoy::config::core::v3::Node>* node);

}  // namespace holdfast
