#pragma once
// The floor: an ADS server (state of the world and delta) on holdfast's gRPC
// library and transport settings that does the least a server can. Every
// resource is encoded once; a response is a small per-stream header (version,
// type, nonce) plus a body of encoded resources shared by every stream that
// is sent the same ones. No validation, no node state, no snapshots.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "bench/floor/fleet.h"
#include "grpcpp/generic/async_generic_service.h"
#include "grpcpp/server.h"

namespace xds_floor {

// Resource types, in ADS order.
enum Type { kClusters, kEndpoints, kListeners, kRoutes, kTypeCount };

struct Counters {
  std::atomic<int64_t> streams{0};  // open
  std::atomic<int64_t> requests{0};
  std::atomic<int64_t> acks{0};
  std::atomic<int64_t> nacks{0};
  std::atomic<int64_t> responses{0};
  std::atomic<int64_t> bytes_sent{0};
};

// A stream's endpoint subscription, by cluster index.
struct EndpointSubscription {
  std::vector<bool> names;
  std::vector<bool> owed;  // subscribed after its current state was sent
  int count = 0;
  bool any_owed = false;
  int64_t sent_seq = -1;    // every change up to this one has been sent
  uint64_t names_hash = 0;  // SotW: the last request's names, to skip re-reading them
};

using Body = std::shared_ptr<const std::string>;

// The resources, encoded. Clusters, listeners and routes never change;
// endpoint changes are numbered (seq), and each assignment remembers the
// change that last touched it.
class FleetState {
 public:
  explicit FleetState(const FleetParams& params);

  // Moves these clusters' assignments to generation `gen`: one new seq.
  absl::Status Change(int gen, const std::vector<int>& clusters);
  // Every resource of a type that never changes.
  const Body& StaticBody(Type type, bool delta) const { return static_[type][delta]; }
  // The assignments changed after `from` (-1: all) that `partial` subscribes
  // to or owes (nullptr: every cluster, nothing owed; that body is shared by
  // every stream asking with the same `from`), and the seq they are at.
  std::pair<int64_t, Body> EndpointsSince(int64_t from, const EndpointSubscription* partial,
                                          bool delta);
  int64_t seq() const { return seq_.load(); }
  int clusters() const { return params_.clusters; }
  // Cluster index of an assignment's name; -1 if it is not one of ours.
  int ClusterIndex(absl::string_view name) const;

 private:
  const FleetParams params_;
  Body static_[kTypeCount][2];
  absl::Mutex mu_;
  std::vector<holdfast::ResourcePtr> endpoints_ ABSL_GUARDED_BY(mu_);
  std::vector<int64_t> changed_at_ ABSL_GUARDED_BY(mu_);
  std::map<std::pair<int64_t, bool>, Body> shared_ ABSL_GUARDED_BY(mu_);  // at seq_
  std::atomic<int64_t> seq_{0};
};

class FloorServer {
 public:
  // Listens on `address` (host:port, port 0 picks one).
  static std::unique_ptr<FloorServer> Start(const FleetParams& params, const std::string& address);
  ~FloorServer();

  int port() const { return port_; }
  const Counters& counters() const { return counters_; }
  int64_t seq() const { return state_.seq(); }
  // Applies a change and wakes every stream that holds endpoints.
  absl::Status Change(int gen, const std::vector<int>& clusters);

 private:
  class Service;
  class Stream;
  explicit FloorServer(const FleetParams& params);

  FleetState state_;
  Counters counters_;
  absl::Mutex mu_;
  std::map<uint64_t, std::weak_ptr<Stream>> streams_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

}  // namespace xds_floor
