#pragma once

#include <memory>
#include <string>

#include "absl/synchronization/mutex.h"
#include "grpcpp/support/byte_buffer.h"
#include "src/xds/response.h"

namespace holdfast {

// Shares encoded response bodies (the concatenated resources) between
// streams: every proxy of a group that is sent the same resources is sent
// the same bytes, encoded once. Entries live as long as some stream's write
// still holds them.
class EncodedBodyCache {
 public:
  // The body for `resources`, whose identity is `key` (ResourceList::digest,
  // a digest of their names and versions); `delta` selects the wire form.
  std::shared_ptr<const std::string> Get(const std::string& key, bool delta,
                                         const std::vector<ResourcePtr>& resources);

 private:
  absl::Mutex mu_;
  std::map<std::pair<std::string, bool>, std::weak_ptr<const std::string>> bodies_
      ABSL_GUARDED_BY(mu_);
  size_t sweep_at_ ABSL_GUARDED_BY(mu_) = 64;
};

// Encodes a DiscoveryResponse. Resource bytes are not copied: the buffer
// references the shared body.
grpc::ByteBuffer EncodeSotwResponse(const Response& response, EncodedBodyCache& bodies,
                                    const std::string& control_plane_id, size_t* size);
// Encodes a DeltaDiscoveryResponse the same way.
grpc::ByteBuffer EncodeDeltaResponse(const Response& response, EncodedBodyCache& bodies,
                                     const std::string& control_plane_id, size_t* size);

}  // namespace holdfast
