#pragma once

#include <memory>
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
// per ACK, per proxy) was most of the CPU a push cost. So the names are not
// read here: `names_wire` keeps their bytes, a session compares those with
// the last ones it read, and only reads them (ReadResourceNames) when they
// differ.
struct SotwRequest {
  absl::string_view version_info;
  absl::string_view type_url;
  absl::string_view response_nonce;
  // From the first resource_names field to the end of the last, any other
  // fields between them included: equal bytes hold equal names. Empty when
  // the request names nothing.
  absl::string_view names_wire;
  bool has_error_detail = false;
  int error_code = 0;
  std::string error_message;

  // Views `message`, which must outlive the result; names_wire views a
  // serialization of its names that the result shares.
  static SotwRequest Of(const envoy::service::discovery::v3::DiscoveryRequest& message);

 private:
  std::shared_ptr<const std::string> owned_names_wire_;  // set by Of() only
};

// Reads a serialized DiscoveryRequest into `request` (viewing `bytes`, which
// must outlive it) and its node, when it carries one, into `node`. Fails
// like protobuf parsing would, on malformed bytes and on strings that are
// not UTF-8, except that the resource names' UTF-8 is checked by
// ReadResourceNames.
absl::Status ParseSotwRequest(absl::string_view bytes, SotwRequest* request,
                              std::optional<envoy::config::core::v3::Node>* node);

// The resource names in a request's `names_wire`, in order, viewing it.
// Fails, as protobuf would, on a name that is not UTF-8.
absl::Status ReadResourceNames(absl::string_view names_wire, std::vector<absl::string_view>* names);

}  // namespace holdfast
