#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "envoy/config/core/v3/base.pb.h"
#include "grpcpp/generic/async_generic_service.h"
#include "grpcpp/support/byte_buffer.h"
#include "src/common/clock.h"
#include "src/snapshot/snapshot_cache.h"
#include "src/xds/canary_router.h"
#include "src/xds/client_identity.h"
#include "src/xds/encoded_body_cache.h"
#include "src/xds/first_request_deadlines.h"
#include "src/xds/node_grouper.h"
#include "src/xds/proxy_state.h"
#include "src/xds/stream_count.h"
#include "src/xds/stream_limits.h"
#include "src/xds/view_cache.h"
#include "src/xds/xds_stats.h"

namespace holdfast {

// One xDS protocol variant (SotW or delta) behind a byte-level interface, so
// the stream below handles transport only.
class StreamProtocol {
 public:
  virtual ~StreamProtocol() = default;
  // Parses and applies one request. Sets *node when the request carries one.
  virtual absl::Status OnRequest(const grpc::ByteBuffer& raw,
                                 std::optional<envoy::config::core::v3::Node>* node) = 0;
  virtual void OnSnapshot(SnapshotPtr snapshot) = 0;
  // The next encoded response, if one is owed.
  virtual std::optional<grpc::ByteBuffer> NextWrite() = 0;
};

// What every stream needs from the server, shared and outliving the streams.
struct StreamContext {
  SnapshotCache* cache;
  ProxyRegistry* proxies;
  XdsStats* stats;
  EncodedBodyCache* bodies;
  ViewCache* views;
  const NodeGrouper* grouper;
  const Clock* clock;
  std::string control_plane_id;
  StreamLimits limits;
  // Set by XdsServer. Streams must send a request by a deadline (nullptr:
  // no deadline).
  FirstRequestDeadlines* first_request = nullptr;
  // Set by XdsServer: streams of one listener generation not yet done.
  StreamCount* open_streams = nullptr;
  // Binds node.id to the client certificate (nullptr: not checked).
  const ClientIdentityPolicy* identity = nullptr;
  // Which rollout a node is a canary of (nullptr: no staged rollouts).
  // Canaries watch CanaryKey(rollout) in the cache instead of their group,
  // and move when the router's rule changes.
  CanaryRouter* canaries = nullptr;
};

// The cache key canaries watch during a staged rollout (src/rollout): of
// the rollout for groups without their own, and of group ROLLOUT's own.
inline constexpr absl::string_view kCanaryGroup = "holdfast:canary";
inline std::string CanaryKey(absl::string_view rollout) {
  return rollout.empty() ? std::string(kCanaryGroup) : absl::StrCat(kCanaryGroup, ":", rollout);
}

using ProtocolFactory = std::unique_ptr<StreamProtocol> (*)(std::string fixed_type_url,
                                                            ProxyState* proxy,
                                                            const StreamContext& context);
std::unique_ptr<StreamProtocol> MakeSotwProtocol(std::string fixed_type_url, ProxyState* proxy,
                                                 const StreamContext& context);
std::unique_ptr<StreamProtocol> MakeDeltaProtocol(std::string fixed_type_url, ProxyState* proxy,
                                                  const StreamContext& context);

// A bidirectional xDS stream on the gRPC callback API.
//
// At most one write is in flight. Snapshot changes that arrive meanwhile only
// mark the session dirty; when the write completes the session computes a
// response against the newest snapshot. A proxy that stops reading therefore
// holds one response and one snapshot reference, never a growing queue, and
// never slows the publisher or other streams.
//
// A stream counts as a connected proxy (ProxyRegistry, XdsStats) from its
// first request on: until then it is only a client that opened a stream,
// and it is ended if that request does not come in time.
class XdsStream : public grpc::ServerGenericBidiReactor,
                  public std::enable_shared_from_this<XdsStream> {
 public:
  // Creates a stream that owns itself until gRPC calls OnDone. `cert` is
  // the connection's verified client certificate, checked against the
  // first request's node when context.identity is enabled.
  static XdsStream* Start(const StreamContext& context, std::string kind,
                          ProtocolFactory make_protocol, std::string fixed_type_url,
                          std::string peer, PeerCertificate cert = {});

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnDone() override;

 private:
  XdsStream(const StreamContext& context, std::string kind, std::string peer, PeerCertificate cert);
  // Checks the first request's node against the certificate. On refusal
  // ends the stream (PERMISSION_DENIED) and returns false.
  bool CheckIdentityLocked(const envoy::config::core::v3::Node& node)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void JoinGroup(const envoy::config::core::v3::Node& node);
  // Watches what the proxy's place (its group, or a rollout's canaries)
  // sees, if that is not what it watches already.
  void WatchLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(watch_mu_);
  // The canary router's rule changed: move if the proxy's place did.
  void Rewatch();
  // Ends the stream if it has not sent a request yet; false if it has.
  bool EndWithoutFirstRequest();
  void OnPublished(const Published& published);
  void MaybeWriteLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FinishLocked(const grpc::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const StreamContext context_;
  const uint64_t id_;
  const std::string kind_;
  std::shared_ptr<ProxyState> proxy_;
  const PeerCertificate cert_;
  // Set by CheckIdentityLocked on the read path, read by JoinGroup there.
  std::optional<VerifiedIdentity> verified_;
  // Registered in context_.proxies and counted in context_.stats. Touched
  // only by OnReadDone and OnDone, which gRPC never runs concurrently.
  bool counted_ = false;
  std::shared_ptr<XdsStream> self_;  // released in OnDone

  absl::Mutex mu_;
  std::unique_ptr<StreamProtocol> protocol_ ABSL_GUARDED_BY(mu_);
  grpc::ByteBuffer read_buffer_;
  grpc::ByteBuffer write_buffer_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool requested_ ABSL_GUARDED_BY(mu_) = false;  // a request has arrived
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<grpc::Status> pending_finish_ ABSL_GUARDED_BY(mu_);
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t sequence_ ABSL_GUARDED_BY(mu_) = 0;
  bool joined_ = false;  // JoinGroup ran; read path only

  // Set by JoinGroup, changed by Rewatch (the canary router's thread).
  absl::Mutex watch_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  std::unique_ptr<SnapshotCache::WatchHandle> watch_ ABSL_GUARDED_BY(watch_mu_);
  std::string watched_ ABSL_GUARDED_BY(watch_mu_);  // the cache key
  std::optional<envoy::config::core::v3::Node> node_ ABSL_GUARDED_BY(watch_mu_);
  std::string group_ ABSL_GUARDED_BY(watch_mu_);
  std::unique_ptr<CanaryRouter::Subscription> canary_subscription_;  // read path, OnDone
};

}  // namespace holdfast
