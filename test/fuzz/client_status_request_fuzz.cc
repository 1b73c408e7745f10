// Fuzz target: CSDS requests, which any client of the xDS port may send.
// The request's node matchers (string matchers, regexes, nested value
// matchers) are compiled and run against a few proxies. It must never
// crash, and an answer is either a response or INVALID_ARGUMENT naming a
// node_matchers field.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "absl/strings/match.h"
#include "google/protobuf/stubs/logging.h"
#include "src/xds/client_status.h"

namespace {

std::vector<holdfast::ProxyView> Proxies() {
  std::vector<holdfast::ProxyView> proxies;
  for (const char* id : {"shop-1", "shop-2", "billing-1"}) {
    auto node = std::make_shared<envoy::config::core::v3::Node>();
    node->set_id(id);
    auto& fields = *node->mutable_metadata()->mutable_fields();
    fields["zone"].set_string_value(id[0] == 's' ? "a" : "b");
    fields["canary"].set_bool_value(id[5] == '1');
    fields["weight"].set_number_value(3.5);
    auto* list = fields["tags"].mutable_list_value();
    list->add_values()->set_string_value("x");
    list->add_values()->set_null_value(google::protobuf::NULL_VALUE);
    (*fields["nested"].mutable_struct_value()->mutable_fields())["k"].set_string_value("v");
    holdfast::ProxyView view;
    view.node_id = id;
    view.node = std::move(node);
    proxies.push_back(std::move(view));
  }
  return proxies;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Protobuf logs every request it refuses to parse (invalid UTF-8), as in
  // delta_session_fuzz.cc: one line per refused input.
  static const bool quiet = (google::protobuf::SetLogHandler(nullptr), true);
  (void)quiet;
  static const std::vector<holdfast::ProxyView> proxies = Proxies();
  envoy::service::status::v3::ClientStatusRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  absl::StatusOr<envoy::service::status::v3::ClientStatusResponse> answer =
      holdfast::AnswerClientStatus(request, proxies);
  if (answer.ok()) {
    if (answer->config_size() > static_cast<int>(proxies.size())) std::abort();
    if (request.node_matchers_size() == 0 && answer->config_size() != 3) std::abort();
  } else if (answer.status().code() != absl::StatusCode::kInvalidArgument ||
             !absl::StartsWith(answer.status().message(), "node_matchers[")) {
    std::abort();
  }
  return 0;
}
