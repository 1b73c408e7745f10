// StreamProtocol implementations: parse requests, drive the session, encode.
#include "absl/strings/str_cat.h"
#include "envoy/service/discovery/v3/discovery.pb.h"
#include "src/common/token_bucket.h"
#include "src/xds/delta_session.h"
#include "src/xds/sotw_request.h"
#include "src/xds/sotw_session.h"
#include "src/xds/stream.h"

namespace holdfast {
namespace {

using envoy::config::core::v3::Node;
using envoy::service::discovery::v3::DeltaDiscoveryRequest;

// The request's bytes as one contiguous slice (usually they already are).
absl::Status ReadSlice(const grpc::ByteBuffer& raw, grpc::Slice* slice) {
  grpc::Status status = raw.TrySingleSlice(slice);
  if (!status.ok()) {
    status = raw.DumpToSingleSlice(slice);
    if (!status.ok()) return absl::InternalError(status.error_message());
  }
  return absl::OkStatus();
}

absl::string_view View(const grpc::Slice& slice) {
  return absl::string_view(reinterpret_cast<const char*>(slice.begin()), slice.size());
}

// Drives a session and encodes what it answers; subclasses read requests.
template <typename Session, auto Encode>
class Protocol : public StreamProtocol {
 public:
  Protocol(std::string fixed_type_url, ProxyState* proxy, const StreamContext& context)
      : session_(std::move(fixed_type_url), *context.clock, proxy, context.stats, context.views,
                 context.limits),
        requests_(*context.clock, context.limits.requests_per_second, context.limits.request_burst),
        limits_(context.limits),
        stats_(context.stats),
        bodies_(context.bodies),
        control_plane_id_(context.control_plane_id) {}

  void OnSnapshot(SnapshotPtr snapshot) override { session_.OnSnapshot(std::move(snapshot)); }

  std::optional<grpc::ByteBuffer> NextWrite() override {
    std::optional<Response> response = session_.NextResponse();
    if (!response.has_value()) return std::nullopt;
    size_t bytes = 0;
    grpc::ByteBuffer buffer = Encode(*response, *bodies_, control_plane_id_, &bytes);
    stats_->ResponseSent(response->type_url, response->resources().size(), bytes);
    return buffer;
  }

 protected:
  // Whether one more request may be read now.
  absl::Status Admit() {
    if (requests_.TryTake()) return absl::OkStatus();
    return absl::ResourceExhaustedError(absl::StrCat("more than ", limits_.requests_per_second,
                                                     " requests per second (burst ",
                                                     limits_.request_burst, ")"));
  }

  Session session_;

 private:
  TokenBucket requests_;
  const StreamLimits limits_;
  XdsStats* stats_;
  EncodedBodyCache* bodies_;
  std::string control_plane_id_;
};

// SotW requests are read in place (see SotwRequest).
class SotwProtocol : public Protocol<SotwSession, EncodeSotwResponse> {
 public:
  using Protocol::Protocol;

  absl::Status OnRequest(const grpc::ByteBuffer& raw, std::optional<Node>* node) override {
    if (absl::Status admitted = Admit(); !admitted.ok()) return admitted;
    grpc::Slice slice;
    if (absl::Status status = ReadSlice(raw, &slice); !status.ok()) return status;
    SotwRequest request;
    if (absl::Status status = ParseSotwRequest(View(slice), &request, node); !status.ok()) {
      return status;
    }
    return session_.OnRequest(request);
  }
};

class DeltaProtocol : public Protocol<DeltaSession, EncodeDeltaResponse> {
 public:
  using Protocol::Protocol;

  absl::Status OnRequest(const grpc::ByteBuffer& raw, std::optional<Node>* node) override {
    if (absl::Status admitted = Admit(); !admitted.ok()) return admitted;
    grpc::Slice slice;
    if (absl::Status status = ReadSlice(raw, &slice); !status.ok()) return status;
    DeltaDiscoveryRequest request;
    if (!request.ParseFromArray(slice.begin(), static_cast<int>(slice.size()))) {
      return absl::InvalidArgumentError(
          "could not parse envoy.service.discovery.v3.DeltaDiscoveryRequest");
    }
    if (request.has_node()) *node = request.node();
    return session_.OnRequest(request);
  }
};

}  // namespace

std::unique_ptr<StreamProtocol> MakeSotwProtocol(std::string fixed_type_url, ProxyState* proxy,
                                                 const StreamContext& context) {
  return std::make_unique<SotwProtocol>(std::move(fixed_type_url), proxy, context);
}

std::unique_ptr<StreamProtocol> MakeDeltaProtocol(std::string fixed_type_url, ProxyState* proxy,
                                                  const StreamContext& context) {
  return std::make_unique<DeltaProtocol>(std::move(fixed_type_url), proxy, context);
}

}  // namespace holdfast
