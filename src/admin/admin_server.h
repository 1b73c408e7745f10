#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "src/admin/admin_options.h"
#include "src/admin/http_server.h"
#include "src/admin/token_file.h"
#include "src/common/clock.h"
#include "src/common/metrics.h"
#include "src/snapshot/snapshot_cache.h"
#include "src/translate/status.h"
#include "src/xds/client_status.h"
#include "src/xds/proxy_state.h"

namespace holdfast {

// Whether this replica should receive proxies, and why (or why not).
struct Readiness {
  bool ready = false;
  std::string reason;
};

// What the admin endpoint shows. Pointers must outlive the AdminServer.
struct AdminSources {
  MetricsRegistry* metrics = nullptr;
  const SnapshotCache* cache = nullptr;
  const ProxyRegistry* proxies = nullptr;
  const Clock* clock = nullptr;
  std::function<Readiness()> readiness;
  // JSON for /debug/status: what the config source rejected.
  std::function<nlohmann::json()> status;
  // More JSON pages by path (such as /debug/leader and /debug/store).
  std::map<std::string, std::function<nlohmann::json()>> pages;
  // Actions by path (such as /rollout/promote): POST only, with the header
  // X-Holdfast-Action (which a web page cannot send to another origin, so a
  // browser cannot be made to act for a page it visits), and the token
  // where one is required. They answer JSON. An action also answers the
  // paths below its own: POST /rollout/promote/edge calls the
  // /rollout/promote action with "edge" ("" for its own path).
  std::map<std::string, std::function<nlohmann::json(const std::string& below)>> actions;
};

// HTTP admin endpoint: /healthz, /readyz, /metrics (Prometheus text),
// /debug/snapshot, /debug/proxies, /debug/status (JSON), the extra pages,
// and the actions. Pages change nothing; only an action (POST) does. Debug
// pages never show secrets (see RedactSecrets).
class AdminServer {
 public:
  static absl::StatusOr<std::unique_ptr<AdminServer>> Start(const std::string& listen_address,
                                                            const AdminAuthOptions& auth,
                                                            AdminSources sources,
                                                            HttpServerOptions http = {});
  ~AdminServer();
  int port() const { return http_ != nullptr ? http_->port() : 0; }
  void Stop();

 private:
  struct FoundAction {
    const std::function<nlohmann::json(const std::string&)>* action = nullptr;
    std::string below;
  };
  // The action for `path`: its own, or the one it is below.
  FoundAction FindAction(const std::string& path) const;
  using Page = std::function<HttpResponse(const HttpRequest&)>;

  AdminServer() = default;
  void Route();
  HttpResponse Handle(const HttpRequest& request);
  HttpResponse Readyz(bool detail) const;
  void CollectHttpMetrics(MetricWriter& out) const;

  AdminSources sources_;
  std::unique_ptr<TokenFile> token_;  // null: no authentication (loopback only)
  std::map<std::string, Page> routes_;
  HttpResponse Act(const HttpRequest& request);
  std::unique_ptr<HttpServer> http_;
  int collector_ = 0;
};

// JSON renderings, shared with the CLI and tests.
nlohmann::json ProxiesToJson(const std::vector<ProxyView>& proxies);
// Proxies summarised for a fleet of any size: counts by group and state,
// and the first `limit` proxies not synced (NACKing first), each with the
// types that are not and since when.
nlohmann::json FleetToJson(const std::vector<ProxyView>& proxies, size_t limit);
nlohmann::json SnapshotsToJson(const SnapshotCache& cache, bool with_resources);
nlohmann::json ResourcesToJson(const Snapshot& snapshot);
nlohmann::json StatusesToJson(const StatusMap& statuses);
// A message as JSON (proto field names), its secrets redacted; null if it
// cannot be printed.
nlohmann::json RedactedMessageJson(const google::protobuf::Message& message);
// A CSDS answer about the proxies whose node id is `node` (all when empty);
// ResourceExhausted when it would be larger than about `max_bytes`.
absl::StatusOr<nlohmann::json> ClientStatusToJson(const std::vector<ProxyView>& proxies,
                                                  const std::string& node,
                                                  size_t max_bytes = kMaxClientStatusBytes);

}  // namespace holdfast
