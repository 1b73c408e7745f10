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

}  // namespace holdfast
