#pragma once

#include <string>

#include "src/cli/admin_client.h"
#include "src/cli/fleet_report.h"

namespace holdfast {

struct StatusOptions {
  AdminEndpoint admin;
  std::string output = "text";  // or "json"
};

// `holdfast status`: SummarizeReplica of the replica at options.admin.
// Exit code 0 when nothing needs attention, 1 when something does, 2 when
// the replica cannot be asked (usable in scripts and probes).
int RunStatus(const StatusOptions& options);

struct ProxiesOptions {
  AdminEndpoint admin;
  ProxyFilter filter;
  std::string output = "text";  // or "json"
};

// `holdfast proxies [--nacking|--stale] [NODE]`: one line per stream, or
// with NODE every stream of that node in detail. Exit code 1 when NODE is
// not connected to this replica, 2 when the replica cannot be asked.
int RunProxies(const ProxiesOptions& options);

struct DumpOptions {
  AdminEndpoint admin;
  std::string node;               // the resources this proxy was sent (CSDS)
  std::string group = "default";  // without node: this group's snapshot
  std::string type;               // listener|route|cluster|endpoint|secret, or a type URL
  std::string output = "yaml";    // or "json"
};

// `holdfast dump`: the Envoy resources a proxy was sent (--node, from
// /debug/client_status), or a group's current snapshot (from
// /debug/snapshot), secrets redacted, as YAML documents or a JSON list.
// Exit code 1 when the node is not connected or nothing matches, 2 when
// the replica cannot be asked.
int RunDump(const DumpOptions& options);

struct RolloutOptions {
  AdminEndpoint admin;
  std::string action = "status";  // status, promote or abort
  std::string output = "text";    // or "json"
  // A node group with a rollout of its own (serve --rollout-group); empty:
  // status of every rollout, promote or abort of the one for every other
  // group.
  std::string group;
};

// `holdfast rollout status|promote|abort`: a replica's staged rollout
// (/debug/rollout), or the operator's decision on it. Exit code: status 0
// unless held (1); promote and abort 0 when done, 1 when there was nothing
// to do; 2 when the replica cannot be asked or has no rollout.
int RunRollout(const RolloutOptions& options);

}  // namespace holdfast
