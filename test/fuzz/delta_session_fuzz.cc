// Fuzz target: a delta xDS session driven by client requests. The bytes are a
// sequence of DeltaDiscoveryRequests (each a 2-byte length and the message),
// interleaved with snapshot changes and responses. Whatever a client sends,
// the session must not crash, must end the stream with a status instead of
// growing past its limits, and must only send resources of the snapshot.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>

#include "google/protobuf/stubs/logging.h"
#include "src/xds/delta_session.h"
#include "test/unit/test_resources.h"

namespace {

using envoy::service::discovery::v3::DeltaDiscoveryRequest;

constexpr holdfast::StreamLimits kLimits{.max_types = 4, .max_names_per_type = 64};

void CheckResponse(const holdfast::Response& response, const holdfast::Snapshot& snapshot) {
  const holdfast::ResourceMap& available = snapshot.Resources(response.type_url);
  for (const auto& resource : response.resources()) {
    if (!available.contains(resource->name())) std::abort();
  }
}

// The snapshot served after `port` changes from 80: immutable, so built once
// and shared by every input, as one snapshot is by every stream in
// production. Building it per input was over half of each execution.
holdfast::SnapshotPtr SnapshotForPort(int port) {
  static auto* const built = new std::map<int, holdfast::SnapshotPtr>();
  holdfast::SnapshotPtr& snapshot = (*built)[port];
  // Consecutive snapshots alternate versions "1" and "2", 80 being "1".
  if (snapshot == nullptr) snapshot = holdfast::testing::Chain(port % 2 ? "2" : "1", port);
  return snapshot;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Protobuf logs every request it refuses to parse (invalid UTF-8): a
  // gigabyte of log per million executions slowed the target several-fold.
  static const bool quiet = (google::protobuf::SetLogHandler(nullptr), true);
  (void)quiet;
  holdfast::SimulatedClock clock;
  holdfast::MetricsRegistry metrics;
  holdfast::XdsStats stats(&metrics);
  holdfast::ProxyState proxy(1, "ads-delta", "fuzz", absl::UnixEpoch());
  holdfast::ViewCache views;
  holdfast::DeltaSession session("", clock, &proxy, &stats, &views, kLimits);
  holdfast::SnapshotPtr snapshot = SnapshotForPort(80);
  session.OnSnapshot(snapshot);
  int port = 80;
  while (size >= 2) {
    const size_t length = std::min<size_t>((data[0] << 8 | data[1]) & 0x7fff, size - 2);
    const bool new_snapshot = data[0] & 0x80;
    DeltaDiscoveryRequest request;
    if (request.ParseFromArray(data + 2, static_cast<int>(length))) {
      if (!session.OnRequest(request).ok()) return 0;  // the stream would end here
    }
    data += 2 + length;
    size -= 2 + length;
    if (new_snapshot) {
      snapshot = SnapshotForPort(++port);
      session.OnSnapshot(snapshot);
    }
    for (int i = 0; i < 16; ++i) {
      std::optional<holdfast::Response> response = session.NextResponse();
      if (!response.has_value()) break;
      CheckResponse(*response, *snapshot);
    }
  }
  return 0;
}
