#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace holdfast {

// A proxy's rejection of one response.
struct NackRecord {
  std::string version;  // the version_info the proxy rejected
  std::string nonce;
  int code = 0;         // error_detail.code as the proxy sent it
  std::string error;    // error_detail.message, verbatim
  absl::Time at;
};

// Where one proxy stands for one resource type.
struct TypeProgress {
  std::string last_sent_version;
  std::string acked_version;
  absl::Time acked_at = absl::InfinitePast();
  std::optional<NackRecord> nack;  // the latest NACK, cleared by a later ACK
  uint64_t responses_sent = 0;
  uint64_t acks = 0;
  uint64_t nacks = 0;
};

// A copy of one stream's state, for the admin endpoint and the CLI.
struct ProxyView {
  uint64_t stream_id = 0;
  std::string node_id;
  std::string cluster;
  std::string group;
  std::string user_agent;
  std::string peer;
  std::string stream_kind;  // "ads-sotw", "ads-delta", "lds-sotw", ...
  absl::Time connected_since;
  std::map<std::string, TypeProgress> types;
};

// State of one xDS stream, written by the stream and read by observers.
class ProxyState {
 public:
  ProxyState(uint64_t stream_id, std::string stream_kind, std::string peer,
             absl::Time connected_since);

  void SetNode(std::string node_id, std::string cluster, std::string group,
               std::string user_agent);
  void RecordSent(const std::string& type_url, const std::string& version);
  void RecordAck(const std::string& type_url, const std::string& version, absl::Time at);
  void RecordNack(const std::string& type_url, NackRecord nack);
  ProxyView View() const;

 private:
  mutable absl::Mutex mu_;
  ProxyView view_ ABSL_GUARDED_BY(mu_);
};

// The proxies connected to this replica, one entry per stream.
class ProxyRegistry {
 public:
  void Add(std::shared_ptr<ProxyState> proxy, uint64_t stream_id);
  void Remove(uint64_t stream_id);
  std::vector<ProxyView> List() const;
  size_t size() const;

 private:
  mutable absl::Mutex mu_;
  std::map<uint64_t, std::shared_ptr<ProxyState>> proxies_ ABSL_GUARDED_BY(mu_);
};

}  // namespace holdfast
