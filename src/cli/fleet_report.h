#pragma once

#include <optional>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace holdfast {

// What a replica's admin endpoint says, page by page, as the fleet commands
// read it. A page the replica does not serve (no election: no
// /debug/leader) is null.
struct AdminPages {
  std::string admin_url;
  bool ready = false;
  std::string readiness;     // /readyz's line
  nlohmann::json leader;     // /debug/leader
  nlohmann::json store;      // /debug/store
  nlohmann::json status;     // /debug/status
  nlohmann::json proxies;    // /debug/proxies
  nlohmann::json snapshots;  // /debug/snapshot?resources=false
};

// `holdfast status`: one screen about a replica, as JSON (-o json) with the
// fields admin, ready, readiness, leader, store, snapshots, proxies
// (total and by state), objects (total and by status) and attention: one
// line per thing an operator should look at (not ready, store unreachable
// or refusing access, serving the persisted snapshot, each NACKing proxy
// with its error, each Rejected object with file:line and field path; at
// most kMaxAttention of each kind, then a count).
nlohmann::json SummarizeReplica(const AdminPages& pages);
std::string RenderSummary(const nlohmann::json& summary);
inline constexpr size_t kMaxAttention = 20;

// `holdfast proxies`: the streams of /debug/proxies, filtered.
struct ProxyFilter {
  bool nacking = false;  // only proxies whose latest reply of a type is a NACK
  bool stale = false;    // only proxies not synced (pending or nacking)
  std::string node;      // only this node id
};
std::vector<nlohmann::json> SelectProxies(const nlohmann::json& page, const ProxyFilter& filter);
// One line per stream: node, group, stream kind, state, connected since,
// and per type (LDS, RDS, CDS, EDS, ...) the ACKed version.
std::string RenderProxyTable(const std::vector<nlohmann::json>& proxies);
// Every type of every stream of one node: sent and ACKed versions, when,
// and the last NACK with the proxy's error.
std::string RenderProxyDetail(const std::vector<nlohmann::json>& streams);

// "type.googleapis.com/envoy.config.cluster.v3.Cluster" -> "CDS".
std::string ShortTypeName(const std::string& type_url);

}  // namespace holdfast
