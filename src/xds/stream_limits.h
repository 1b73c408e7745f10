#pragma once

#include <cstddef>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace holdfast {

// What one xDS stream may ask of the server, so that no client can make the
// server spend unbounded memory or CPU on it. A stream that goes past a limit
// is ended with RESOURCE_EXHAUSTED (INVALID_ARGUMENT for a malformed type
// URL) naming the limit; other streams see no difference. Documented in
// docs/security.md.
struct StreamLimits {
  // Resource types one stream subscribes to (xDS defines nine).
  size_t max_types = 16;
  size_t max_type_url_bytes = 256;
  // Resource names one stream subscribes to, per type.
  size_t max_names_per_type = 100'000;
  // Requests (including ACKs) per second, sustained and at once.
  double requests_per_second = 100;
  double request_burst = 1'000;

  // Whether a stream already subscribed to `types_held` types may add `type`.
  absl::Status CheckNewType(absl::string_view type, size_t types_held) const {
    if (type.size() > max_type_url_bytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("type_url is ", type.size(), " bytes; the limit is ", max_type_url_bytes));
    }
    if (types_held >= max_types) {
      return absl::ResourceExhaustedError(
          absl::StrCat("a stream may subscribe to at most ", max_types, " resource types"));
    }
    return absl::OkStatus();
  }

  absl::Status CheckNames(size_t names) const {
    if (names <= max_names_per_type) return absl::OkStatus();
    return absl::ResourceExhaustedError(absl::StrCat("a stream may subscribe to at most ",
                                                     max_names_per_type, " names of one type"));
  }
};

}  // namespace holdfast
