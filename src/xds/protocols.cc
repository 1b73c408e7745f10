// StreamProtocol implementations: parse requests, drive the session, encode.
#include "envoy/service/discovery/v3/discovery.pb.h"
#include "src/xds/delta_session.h"
#include "src/xds/sotw_session.h"
#include "src/xds/stream.h"

namespace holdfast {
namespace {

using envoy::config::core::v3::Node;
using envoy::service::discovery::v3::DeltaDiscoveryRequest;
using envoy::service::discovery::v3::DiscoveryRequest;

template <typename Request>
absl::Status Parse(const grpc::ByteBuffer& raw, Request* request) {
  grpc::Slice slice;
  grpc::Status status = raw.TrySingleSlice(&slice);
  if (!status.ok()) {
    status = raw.DumpToSingleSlice(&slice);
    if (!status.ok()) return absl::InternalError(status.error_message());
  }
  if (!request->ParseFromArray(slice.begin(), static_cast<int>(slice.size()))) {
    return absl::InvalidArgumentError(
        absl::StrCat("could not parse ", Request::descriptor()->full_name()));
  }
  return absl::OkStatus();
}

template <typename Session, typename Request, auto Encode>
class Protocol : public StreamProtocol {
 public:
  Protocol(std::string fixed_type_url, ProxyState* proxy, const StreamContext& context)
      : session_(std::move(fixed_type_url), *context.clock, proxy, context.stats, context.views),
        stats_(context.stats),
        bodies_(context.bodies),
        control_plane_id_(context.control_plane_id) {}

  absl::Status OnRequest(const grpc::ByteBuffer& raw, std::optional<Node>* node) override {
    Request request;
    if (absl::Status status = Parse(raw, &request); !status.ok()) return status;
    if (request.has_node()) *node = request.node();
    return session_.OnRequest(request);
  }

  void OnSnapshot(SnapshotPtr snapshot) override { session_.OnSnapshot(std::move(snapshot)); }

  std::optional<grpc::ByteBuffer> NextWrite() override {
    std::optional<Response> response = session_.NextResponse();
    if (!response.has_value()) return std::nullopt;
    size_t bytes = 0;
    grpc::ByteBuffer buffer = Encode(*response, *bodies_, control_plane_id_, &bytes);
    stats_->ResponseSent(response->type_url, response->resources().size(), bytes);
    return buffer;
  }

 private:
  Session session_;
  XdsStats* stats_;
  EncodedBodyCache* bodies_;
  std::string control_plane_id_;
};

}  // namespace

std::unique_ptr<StreamProtocol> MakeSotwProtocol(std::string fixed_type_url, ProxyState* proxy,
                                                 const StreamContext& context) {
  return std::make_unique<Protocol<SotwSession, DiscoveryRequest, EncodeSotwResponse>>(
      std::move(fixed_type_url), proxy, context);
}

std::unique_ptr<StreamProtocol> MakeDeltaProtocol(std::string fixed_type_url, ProxyState* proxy,
                                                  const StreamContext& context) {
  return std::make_unique<Protocol<DeltaSession, DeltaDiscoveryRequest, EncodeDeltaResponse>>(
      std::move(fixed_type_url), proxy, context);
}

}  // namespace holdfast
