#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "envoy/service/discovery/v3/discovery.pb.h"
#include "src/common/clock.h"
#include "src/snapshot/snapshot.h"
#include "src/xds/proxy_state.h"
#include "src/xds/response.h"
#include "src/xds/sotw_request.h"
#include "src/xds/stream_limits.h"
#include "src/xds/subscription.h"
#include "src/xds/view_cache.h"
#include "src/xds/xds_stats.h"

namespace holdfast {

// The state-of-the-world xDS protocol for one stream, without transport:
// requests and snapshots go in, responses to send come out. Not thread-safe;
// the stream serializes calls.
//
// Protocol rules it keeps (xds_protocol.rst): every response has a fresh
// nonce; a request whose nonce is not the latest for its type is stale and
// ignored; a request with error_detail NACKs the latest response, which is
// recorded and never re-sent (only a newer version is); a reconnecting
// client's version_info is not trusted, since this stream sent it nothing; a
// type is answered only when what the client should hold differs from what
// it was last sent. On ADS, types go out in make-before-break order and
// clusters that disappear are kept until listeners and routes have moved off
// them.
//
// Endpoints and route configurations are sent incrementally, as the protocol
// allows for every type but listeners and clusters: after the first answer a
// response carries only the resources that changed or were newly asked for,
// so a one-endpoint change costs every stream one small response instead of
// all its endpoints. A stream keeps only pointers (the snapshot it was brought
// up to, its interned name set, the list last sent); the lists themselves are
// computed once per distinct answer in the shared ViewCache.
class SotwSession {
 public:
  // `fixed_type_url` is the only type a per-type service (LDS, CDS, ...)
  // accepts; empty for ADS.
  SotwSession(std::string fixed_type_url, const Clock& clock, ProxyState* proxy, XdsStats* stats,
              ViewCache* views, StreamLimits limits = {});

  // Applies a request. An error ends the stream with that status.
  absl::Status OnRequest(const SotwRequest& request);
  absl::Status OnRequest(const envoy::service::discovery::v3::DiscoveryRequest& request) {
    return OnRequest(SotwRequest::Of(request));
  }
  // Switches to a newer snapshot.
  void OnSnapshot(SnapshotPtr snapshot);
  // The next response to send, if any is owed.
  std::optional<Response> NextResponse();

 private:
  struct TypeState {
    explicit TypeState(NameSetPool* pool) : subscription(pool) {}
    Subscription subscription;
    // Digest of the names part (SotwRequest::names_wire, size included) of
    // the last request read, once there was one.
    std::optional<uint64_t> names_digest;
    bool dirty = false;  // may owe a response
    // When the client last asked for something new (0 before), and since
    // when the latest response was owed: the later of its snapshot's
    // publication and that request. Its ACK measures the push.
    absl::Time asked_at = absl::InfinitePast();
    absl::Time sent_owed_since;
    std::string sent_version;
    std::string sent_nonce;
    // The client was last brought up to the view of `sent_snapshot` through
    // `sent_selection`; null before the first response.
    SnapshotPtr sent_snapshot;
    Selection sent_selection;
    ResourceListPtr sent;  // resources of the latest response
  };
  struct Desired {
    std::string version;
    ResourceListPtr list;
  };

  Selection SelectionOf(const TypeState& state) const;
  // What to send the client of `type` now; nullopt when nothing is owed.
  std::optional<Desired> Compute(const std::string& type, const TypeState& state) const;
  std::optional<Desired> ComputeIncremental(const std::string& type, const TypeState& state) const;
  bool AnyPending(std::initializer_list<absl::string_view> types) const;
  Response Emit(const std::string& type, TypeState& state, Desired desired);

  const std::string fixed_type_url_;
  const StreamLimits limits_;
  const Clock& clock_;
  ProxyState* proxy_;
  XdsStats* stats_;
  ViewCache* views_;
  SnapshotPtr snapshot_;
  std::map<std::string, TypeState> types_;
  uint64_t nonce_counter_ = 0;
};

}  // namespace holdfast
