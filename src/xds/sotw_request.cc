#include "src/xds/sotw_request.h"

#include "absl/strings/str_cat.h"
#include "src/common/protowire.h"
#include "src/common/utf8.h"

namespace holdfast {
namespace {

// DiscoveryRequest field numbers.
constexpr int kVersionInfo = 1;
constexpr int kNode = 2;
constexpr int kResourceNames = 3;
constexpr int kTypeUrl = 4;
constexpr int kResponseNonce = 5;
constexpr int kErrorDetail = 6;
// google.rpc.Status field numbers.
constexpr int kStatusCode = 1;
constexpr int kStatusMessage = 2;

absl::Status Malformed(absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("could not parse envoy.service.discovery.v3.DiscoveryRequest: ", what));
}

}  // namespace

SotwRequest SotwRequest::Of(const envoy::service::discovery::v3::DiscoveryRequest& message) {
  SotwRequest request;
  request.version_info = message.version_info();
  request.type_url = message.type_url();
  request.response_nonce = message.response_nonce();
  if (!message.resource_names().empty()) {
    auto wire = std::make_shared<std::string>();
    for (const std::string& name : message.resource_names()) {
      AppendLengthDelimited(kResourceNames, name, wire.get());
    }
    request.names_wire = *wire;
    request.owned_names_wire_ = std::move(wire);
  }
  request.has_error_detail = message.has_error_detail();
  request.error_code = message.error_detail().code();
  request.error_message = message.error_detail().message();
  return request;
}

absl::Status ParseSotwRequest(absl::string_view bytes, SotwRequest* request,
                              std::optional<envoy::config::core::v3::Node>* node) {
  *request = SotwRequest();
  WireReader reader(bytes);
  const char* names_begin = nullptr;
  const char* names_end = nullptr;
  while (true) {
    const char* field_begin = reader.position();
    if (!reader.Next()) break;
    const int field = reader.field();
    const bool known = field >= kVersionInfo && field <= kErrorDetail;
    if (known && !reader.is_bytes()) return Malformed(absl::StrCat("field ", field));
    const absl::string_view value = reader.bytes();
    switch (field) {
      case kResourceNames:
        if (names_begin == nullptr) names_begin = field_begin;
        names_end = value.data() + value.size();
        break;
      case kVersionInfo:
      case kTypeUrl:
      case kResponseNonce:
        if (!IsValidUtf8(value)) return Malformed(absl::StrCat("field ", field, " is not UTF-8"));
        if (field == kVersionInfo) request->version_info = value;
        if (field == kTypeUrl) request->type_url = value;
        if (field == kResponseNonce) request->response_nonce = value;
        break;
      case kNode: {
        // A repeated embedded message is parsed into the same object, as
        // protobuf does (MergeFrom would differ: it skips empty strings).
        if (!node->has_value()) node->emplace();
        if (!(*node)->MergeFromString(std::string(value))) return Malformed("node");
        break;
      }
      case kErrorDetail: {
        request->has_error_detail = true;
        WireReader status(value);
        while (status.Next()) {
          if (status.field() == kStatusCode && status.wire_type() == 0) {
            request->error_code = static_cast<int32_t>(status.value());
          } else if (status.field() == kStatusMessage && status.is_bytes()) {
            if (!IsValidUtf8(status.bytes())) return Malformed("error_detail.message is not UTF-8");
            request->error_message = std::string(status.bytes());
          }
        }
        if (!status.ok()) return Malformed("error_detail");
        break;
      }
      default:
        break;  // unknown fields are skipped, as protobuf does
    }
  }
  if (!reader.ok()) return Malformed("bad wire format");
  if (names_begin != nullptr) {
    request->names_wire = absl::string_view(names_begin, names_end - names_begin);
  }
  return absl::OkStatus();
}

absl::Status ReadResourceNames(absl::string_view names_wire,
                               std::vector<absl::string_view>* names) {
  names->clear();
  WireReader reader(names_wire);
  while (reader.Next()) {
    if (reader.field() != kResourceNames) continue;  // read by ParseSotwRequest
    if (!IsValidUtf8(reader.bytes())) {
      return Malformed(absl::StrCat("field ", kResourceNames, " is not UTF-8"));
    }
    names->push_back(reader.bytes());
  }
  if (!reader.ok()) return Malformed("bad wire format");
  return absl::OkStatus();
}

}  // namespace holdfast
