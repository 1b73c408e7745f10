#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "envoy/config/core/v3/base.pb.h"
#include "src/snapshot/snapshot.h"
#include "src/xds/view_cache.h"

namespace holdfast {

// A proxy's rejection of one response.
struct NackRecord {
  std::string version;  // the version_info the proxy rejected
  std::string nonce;
  int code = 0;       // error_detail.code as the proxy sent it
  std::string error;  // error_detail.message, verbatim
  absl::Time at;
};

// The resources a response brought a client to for one type: the view of
// `snapshot` through `selection`. Two pointers, resolved only when someone
// asks (CSDS). For a delta stream, names (un)subscribed since the latest
// snapshot show from the next one on.
struct HeldView {
  SnapshotPtr snapshot;  // null: nothing
  Selection selection;
};

// The resources of one type in a held view, by name, and the names it
// asked for that its snapshot lacks.
struct HeldResources {
  std::map<std::string, ResourcePtr> present;
  std::vector<std::string> missing;
};
HeldResources ResourcesOf(const HeldView& view, const std::string& type_url);

// Where one proxy stands for one resource type.
struct TypeProgress {
  std::string last_sent_version;
  absl::Time sent_at = absl::InfinitePast();
  HeldView sent;  // what the latest response brings the client to
  std::string acked_version;
  absl::Time acked_at = absl::InfinitePast();
  HeldView acked;                  // what the latest ACKed response brought it to
  std::optional<NackRecord> nack;  // the latest NACK, cleared by a later ACK
  uint64_t responses_sent = 0;
  uint64_t acks = 0;
  uint64_t nacks = 0;
};

// A copy of one stream's state, for the admin endpoint and the CLI.
struct ProxyView {
  uint64_t stream_id = 0;
  std::string node_id;
  // The node of its first request, without the lists of extensions and
  // build details Envoy sends (for CSDS node matching and answers).
  std::shared_ptr<const envoy::config::core::v3::Node> node;
  std::string cluster;
  std::string group;
  // The identity its client certificate proved (--xds-client-identity);
  // empty when identities are not checked.
  std::string identity;
  std::string user_agent;
  std::string peer;
  std::string stream_kind;  // "ads-sotw", "ads-delta", "lds-sotw", ...
  bool canary = false;      // gets a staged rollout's new snapshot first
  std::string rollout;      // a canary's rollout: its group's, "" for the fallback
  absl::Time connected_since;
  std::map<std::string, TypeProgress> types;
};

// Where a proxy stands over every type it was sent.
enum class ProxySync {
  kSynced,   // every response ACKed
  kPending,  // a response awaits its ACK (none NACKed)
  kNacking,  // its latest reply to some type is a NACK
};
ProxySync SyncOf(const ProxyView& proxy);
absl::string_view ProxySyncName(ProxySync sync);  // "synced", "pending", "nacking"

// State of one xDS stream, written by the stream and read by observers.
class ProxyState {
 public:
  ProxyState(uint64_t stream_id, std::string stream_kind, std::string peer,
             absl::Time connected_since);

  void SetNode(const envoy::config::core::v3::Node& node, std::string group);
  void SetIdentity(std::string identity);
  // A canary of staged rollout `rollout` (RolloutPolicies::RolloutOf).
  void SetCanary(std::string rollout = "");
  void ClearCanary();
  bool IsCanaryOf(absl::string_view rollout) const;
  void RecordSent(const std::string& type_url, const std::string& version, HeldView view,
                  absl::Time at);
  void RecordAck(const std::string& type_url, const std::string& version, HeldView view,
                 absl::Time at);
  void RecordNack(const std::string& type_url, NackRecord nack);
  ProxyView View() const;
  // SyncOf(View()) without copying the view.
  ProxySync Sync() const;

 private:
  mutable absl::Mutex mu_;
  ProxyView view_ ABSL_GUARDED_BY(mu_);
};

// A stream refused because its node.id is not its certificate's identity.
struct IdentityRefusalRecord {
  std::string peer;
  std::string claimed_node_id;
  std::string expected;  // what the certificate allows
  std::string reason;    // IdentityRefusalLabel
  std::string stream_kind;
  absl::Time at;
};

// The proxies connected to this replica, one entry per stream, and the
// latest identity refusals (bounded: a client retrying forever cannot grow
// it).
class ProxyRegistry {
 public:
  static constexpr size_t kMaxRefusals = 64;
  void Add(std::shared_ptr<ProxyState> proxy, uint64_t stream_id);
  void Remove(uint64_t stream_id);
  std::vector<ProxyView> List() const;
  // The canaries of staged rollout `rollout` only (copying no other view).
  std::vector<ProxyView> Canaries(absl::string_view rollout = "") const;
  size_t size() const;
  // How many proxies stand where (for metrics: no view is copied).
  std::map<ProxySync, size_t> CountBySync() const;

  // Keeps `refusal` among the latest. False when the latest ones already
  // hold a refusal of the same peer (connection), so callers log once per
  // connection rather than once per retried stream.
  bool RecordRefusal(IdentityRefusalRecord refusal);
  std::vector<IdentityRefusalRecord> Refusals() const;

 private:
  // The registered proxies, copied under the lock.
  std::vector<std::shared_ptr<ProxyState>> Proxies() const;

  mutable absl::Mutex mu_;
  std::map<uint64_t, std::shared_ptr<ProxyState>> proxies_ ABSL_GUARDED_BY(mu_);
  std::deque<IdentityRefusalRecord> refusals_ ABSL_GUARDED_BY(mu_);  // newest last
};

}  // namespace holdfast
