// Fuzz target: the in-place reader of SotW DiscoveryRequests, which takes
// bytes straight from any client. It must never crash, and whenever both it
// and protobuf's own parser accept an input, both must read the same fields.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "google/protobuf/stubs/logging.h"
#include "google/protobuf/util/message_differencer.h"
#include "src/xds/sotw_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Protobuf logs every request it refuses to parse (invalid UTF-8), as in
  // delta_session_fuzz.cc: one line per refused input.
  static const bool quiet = (google::protobuf::SetLogHandler(nullptr), true);
  (void)quiet;
  absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  holdfast::SotwRequest request;
  std::optional<envoy::config::core::v3::Node> node;
  std::vector<absl::string_view> names;
  const bool ours = holdfast::ParseSotwRequest(bytes, &request, &node).ok() &&
                    holdfast::ReadResourceNames(request.names_wire, &names).ok();
  envoy::service::discovery::v3::DiscoveryRequest message;
  const bool theirs = message.ParseFromArray(data, static_cast<int>(size));
  if (!ours || !theirs) return 0;
  const holdfast::SotwRequest expected = holdfast::SotwRequest::Of(message);
  const std::vector<absl::string_view> expected_names(message.resource_names().begin(),
                                                      message.resource_names().end());
  const bool same_node = node.has_value() == message.has_node() &&
                         (!node.has_value() || google::protobuf::util::MessageDifferencer::Equals(
                                                   *node, message.node()));
  if (request.version_info != expected.version_info || request.type_url != expected.type_url ||
      request.response_nonce != expected.response_nonce || names != expected_names ||
      request.has_error_detail != expected.has_error_detail ||
      request.error_code != expected.error_code ||
      request.error_message != expected.error_message || !same_node) {
    std::abort();
  }
  return 0;
}
