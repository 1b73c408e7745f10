#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "envoy/service/discovery/v3/discovery.pb.h"
#include "src/common/clock.h"
#include "src/snapshot/snapshot.h"
#include "src/xds/proxy_state.h"
#include "src/xds/response.h"
#include "src/xds/stream_limits.h"
#include "src/xds/subscription.h"
#include "src/xds/view_cache.h"
#include "src/xds/xds_stats.h"

namespace holdfast {

// The incremental (delta) xDS protocol for one stream, without transport.
// Not thread-safe; the stream serializes calls.
//
// The session tracks the version of every resource the client holds (seeded
// from initial_resource_versions on reconnect) and sends only resources whose
// version differs, plus removed_resources for names the client holds that no
// longer exist. Unsubscribed names are forgotten without a removal. NACKs are
// recorded against the response's nonce and never trigger a re-send; only a
// newer version of a resource is sent again. On ADS, removals of clusters
// wait until endpoints, listeners and routes are up to date.
//
// What the client holds is kept as "the view of snapshot S through
// subscription N" (two pointers) plus a few exceptions, not a map of every
// name: after each response the client holds exactly the current snapshot's
// view of what it asks for. The next change is then the shared
// ViewCache::Changed(S, new, N), computed once for every stream at S with N.
class DeltaSession {
 public:
  DeltaSession(std::string fixed_type_url, const Clock& clock, ProxyState* proxy, XdsStats* stats,
               ViewCache* views, StreamLimits limits = {});

  absl::Status OnRequest(const envoy::service::discovery::v3::DeltaDiscoveryRequest& request);
  void OnSnapshot(SnapshotPtr snapshot);
  std::optional<Response> NextResponse();

 private:
  struct TypeState {
    explicit TypeState(NameSetPool* pool) : subscription(pool) {}
    Subscription subscription;
    bool dirty = false;
    bool answered = false;  // any response sent for this type
    // The client holds the view of `base` through `base_selection` (nothing
    // while `base` is null), except for the names in `overrides`: the version
    // held there, or nullopt for nothing.
    SnapshotPtr base;
    Selection base_selection;
    // Instead of `base_selection`: the subscription as it is now. This holds
    // because every name (un)subscribed since `base` gets an override, and a
    // change of the wildcard fixes `base_selection` first. It lets a request
    // that changes a few names cost those names, not the whole subscription.
    bool base_follows_subscription = false;
    absl::flat_hash_map<std::string, std::optional<std::string>> overrides;
    // When the client last asked for something new (0 before).
    absl::Time asked_at = absl::InfinitePast();
    struct Sent {
      std::string version;    // system version
      absl::Time owed_since;  // the later of its snapshot's publication and asked_at
      HeldView view;          // what the client holds once it applied it (CSDS)
    };
    std::map<uint64_t, Sent> in_flight;  // by nonce
  };
  struct Diff {
    ResourceListPtr updated;
    std::vector<std::string> removed;
    bool empty() const { return updated->resources.empty() && removed.empty(); }
  };

  static constexpr size_t kMaxInFlight = 64;

  // Records the ACK or NACK a request carries, if any.
  void RecordReply(const std::string& type, TypeState& state,
                   const envoy::service::discovery::v3::DeltaDiscoveryRequest& request);
  void ChangeSubscription(const std::string& type, TypeState& state,
                          const envoy::service::discovery::v3::DeltaDiscoveryRequest& request,
                          bool first);
  // The settled subscription of `state`, as a key of the shared views.
  Selection SelectionOf(const TypeState& state) const;
  // Whether the client asked for `name` when it got `base`.
  bool SelectedAtBase(const TypeState& state, absl::string_view name) const;
  // The version of `name` the client holds, if any.
  std::optional<absl::string_view> Held(const std::string& type, const TypeState& state,
                                        const std::string& name) const;
  Diff Compute(const std::string& type, const TypeState& state) const;
  Diff ComputePerStream(const std::string& type, const TypeState& state) const;
  // The client holds `base` == the current snapshot: only overridden names
  // can differ.
  Diff ComputeOverrides(const std::string& type, const TypeState& state) const;
  static Diff Sorted(std::shared_ptr<ResourceList> updated, std::vector<std::string> removed);
  bool AnyPending(std::initializer_list<absl::string_view> types) const;
  // Records that the client holds the current snapshot's view of what it
  // asks for, plus the clusters in `still_held` whose removal was deferred.
  void Rebase(const std::string& type, TypeState& state,
              const std::vector<std::string>& still_held);

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
