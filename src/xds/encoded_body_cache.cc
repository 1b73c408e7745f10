#include "src/xds/encoded_body_cache.h"

#include "envoy/config/core/v3/base.pb.h"
#include "grpcpp/support/slice.h"
#include "src/common/protowire.h"
#include "src/snapshot/snapshot.h"

namespace holdfast {
namespace {

std::string ControlPlaneBytes(const std::string& id) {
  envoy::config::core::v3::ControlPlane control_plane;
  control_plane.set_identifier(id);
  return control_plane.SerializeAsString();
}

grpc::ByteBuffer Assemble(std::string header, std::shared_ptr<const std::string> body,
                          size_t* size) {
  *size = header.size() + (body ? body->size() : 0);
  grpc::Slice slices[2] = {grpc::Slice(header)};
  size_t count = 1;
  if (body != nullptr && !body->empty()) {
    auto* owner = new std::shared_ptr<const std::string>(std::move(body));
    slices[1] = grpc::Slice(
        const_cast<char*>((*owner)->data()), (*owner)->size(),
        [](void* p) { delete static_cast<std::shared_ptr<const std::string>*>(p); }, owner);
    count = 2;
  }
  return grpc::ByteBuffer(slices, count);
}

}  // namespace

std::shared_ptr<const std::string> EncodedBodyCache::Get(
    const std::string& key, bool delta, const std::vector<ResourcePtr>& resources) {
  absl::MutexLock lock(&mu_);
  auto& slot = bodies_[{key, delta}];
  if (auto body = slot.lock()) return body;
  auto body = std::make_shared<std::string>();
  size_t total = 0;
  for (const ResourcePtr& r : resources) total += r->WireSize(delta);
  body->reserve(total);
  for (const ResourcePtr& r : resources) r->AppendWire(delta, body.get());
  slot = body;
  if (bodies_.size() >= sweep_at_) {
    std::erase_if(bodies_, [](const auto& entry) { return entry.second.expired(); });
    sweep_at_ = std::max<size_t>(64, bodies_.size() * 2);
  }
  return body;
}

grpc::ByteBuffer EncodeSotwResponse(const Response& response, EncodedBodyCache& bodies,
                                    const std::string& control_plane_id, size_t* size) {
  // DiscoveryResponse: version_info = 1, resources = 2, type_url = 4,
  // nonce = 5, control_plane = 6. Field order on the wire is free.
  std::string header;
  AppendLengthDelimited(1, response.version, &header);
  AppendLengthDelimited(4, response.type_url, &header);
  AppendLengthDelimited(5, response.nonce, &header);
  if (!control_plane_id.empty()) {
    AppendLengthDelimited(6, ControlPlaneBytes(control_plane_id), &header);
  }
  std::shared_ptr<const std::string> body;
  if (!response.resources().empty()) {
    body = bodies.Get(response.list->digest, /*delta=*/false, response.resources());
  }
  return Assemble(std::move(header), std::move(body), size);
}

grpc::ByteBuffer EncodeDeltaResponse(const Response& response, EncodedBodyCache& bodies,
                                     const std::string& control_plane_id, size_t* size) {
  // DeltaDiscoveryResponse: system_version_info = 1, resources = 2,
  // type_url = 4, nonce = 5, removed_resources = 6, control_plane = 7.
  std::string header;
  AppendLengthDelimited(1, response.version, &header);
  AppendLengthDelimited(4, response.type_url, &header);
  AppendLengthDelimited(5, response.nonce, &header);
  for (const std::string& name : response.removed) AppendLengthDelimited(6, name, &header);
  if (!control_plane_id.empty()) {
    AppendLengthDelimited(7, ControlPlaneBytes(control_plane_id), &header);
  }
  std::shared_ptr<const std::string> body;
  if (!response.resources().empty()) {
    body = bodies.Get(response.list->digest, /*delta=*/true, response.resources());
  }
  return Assemble(std::move(header), std::move(body), size);
}

}  // namespace holdfast
