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
#include "src/xds/subscription.h"
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
class DeltaSession {
 public:
  DeltaSession(std::string fixed_type_url, const Clock& clock, ProxyState* proxy,
               XdsStats* stats);

  absl::Status OnRequest(const envoy::service::discovery::v3::DeltaDiscoveryRequest& request);
  void OnSnapshot(SnapshotPtr snapshot);
  std::optional<Response> NextResponse();

 private:
  struct TypeState {
    Subscription subscription;
    bool dirty = false;
    bool answered = false;                          // any response sent for this type
    std::map<std::string, std::string> client_has;  // name -> version the client holds
    std::map<uint64_t, std::string> in_flight;      // nonce -> system version
  };
  struct Diff {
    std::vector<ResourcePtr> updated;
    std::vector<std::string> removed;
    bool empty() const { return updated.empty() && removed.empty(); }
  };

  static constexpr size_t kMaxInFlight = 64;

  Diff Compute(const std::string& type, const TypeState& state) const;
  bool AnyPending(std::initializer_list<absl::string_view> types) const;

  const std::string fixed_type_url_;
  const Clock& clock_;
  ProxyState* proxy_;
  XdsStats* stats_;
  SnapshotPtr snapshot_;
  std::map<std::string, TypeState> types_;
  uint64_t nonce_counter_ = 0;
};

}  // namespace holdfast
