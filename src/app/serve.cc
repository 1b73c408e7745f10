#include "src/app/serve.h"

#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "src/admin/admin_server.h"
#include "src/common/log.h"
#include "src/source/config_directory.h"
#include "src/source/xds_directory.h"

namespace holdfast {
namespace {

absl::Status WritePortsFile(const std::string& path, int xds_port, int admin_port) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << nlohmann::json{{"xds", xds_port}, {"admin", admin_port}}.dump() << "\n";
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", tmp));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot rename ", tmp, ": ", ec.message()));
  return absl::OkStatus();
}

nlohmann::json RejectionsToJson(const std::vector<Rejection>& rejections) {
  nlohmann::json list = nlohmann::json::array();
  for (const Rejection& r : rejections) {
    list.push_back({{"file", r.file},
                    {"line", r.line},
                    {"type_url", r.type_url},
                    {"name", r.name},
                    {"error", r.message},
                    {"serving_last_good", r.serving_last_good}});
  }
  return {{"rejected", list}};
}

void CollectSnapshotMetrics(const SnapshotCache& cache, const Clock& clock, MetricWriter& out) {
  for (const auto& [group, published] : cache.All()) {
    const Snapshot& snapshot = *published.snapshot;
    out.Sample("holdfast_snapshot_info", "The snapshot served to a node group (value is 1)",
               "gauge", {{"group", group}, {"version", snapshot.version()}}, 1);
    out.Sample("holdfast_snapshot_age_seconds", "Time since the served snapshot was built",
               "gauge", {{"group", group}}, absl::ToDoubleSeconds(clock.Now() - snapshot.created()));
    for (const std::string& type_url : snapshot.TypeUrls()) {
      out.Sample("holdfast_snapshot_resources", "Resources in the served snapshot", "gauge",
                 {{"group", group}, {"type_url", type_url}},
                 static_cast<double>(snapshot.Resources(type_url).size()));
    }
  }
}

}  // namespace

int RunServe(const ServeOptions& options) {
  // Signals are taken synchronously by this thread; block them before any
  // other thread exists so none of those receives them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  Clock& clock = Clock::Real();
  MetricsRegistry metrics;
  SnapshotCache cache;
  ProxyRegistry proxies;
  XdsStats stats(&metrics);
  EncodedBodyCache bodies;
  absl::StatusOr<NodeGrouper> grouper = NodeGrouper::Parse(options.node_group, cache.default_group());
  if (!grouper.ok()) {
    LogError("%s", grouper.status().message());
    return 2;
  }
  if (options.xds_dir.empty() == options.config_dir.empty()) {
    LogError("pass exactly one of --config-dir DIR (gateway objects) or --xds-dir DIR (raw Envoy "
             "resources)");
    return 2;
  }

  auto publish = [&cache](SnapshotPtr snapshot) {
    cache.Set(cache.default_group(), std::move(snapshot));
  };
  std::unique_ptr<XdsDirectorySource> xds_source;
  std::unique_ptr<ConfigDirectorySource> config_source;
  std::function<nlohmann::json()> status_json;
  absl::Status loaded;
  if (!options.xds_dir.empty()) {
    xds_source = std::make_unique<XdsDirectorySource>(
        XdsDirectorySource::Options{.directory = options.xds_dir}, clock, &metrics, publish);
    loaded = xds_source->Reload();
    xds_source->Start();
    status_json = [&] { return RejectionsToJson(xds_source->rejections()); };
  } else {
    ConfigDirectorySource::Options source_options;
    source_options.directory = options.config_dir;
    source_options.translator.missing_upstream_status = options.missing_upstream_status;
    config_source = std::make_unique<ConfigDirectorySource>(source_options, clock, &metrics, publish);
    loaded = config_source->Reload();
    config_source->Start();
    status_json = [&] { return StatusesToJson(config_source->statuses()); };
  }
  if (!loaded.ok()) {
    // Not fatal: the directory may appear later; until then we are not ready.
    LogWarning("%s", loaded.message());
  }

  StreamContext context{&cache, &proxies, &stats, &bodies, &*grouper, &clock,
                        options.control_plane_id};
  XdsServerOptions xds_options;
  xds_options.listen_address = options.xds_listen;
  xds_options.tls = options.tls;
  xds_options.control_plane_id = options.control_plane_id;
  absl::StatusOr<std::unique_ptr<XdsServer>> xds = XdsServer::Start(xds_options, context);
  if (!xds.ok()) {
    LogError("%s", xds.status().message());
    return 1;
  }
  LogInfo("xds server listening on port %d (%s)%s", (*xds)->port(), options.xds_listen,
          options.tls.enabled()
              ? (options.tls.client_ca_file.empty() ? " with TLS" : " with mutual TLS")
              : "");

  int collector = metrics.AddCollector(
      [&](MetricWriter& out) { CollectSnapshotMetrics(cache, clock, out); });
  AdminSources admin_sources{
      .metrics = &metrics,
      .cache = &cache,
      .proxies = &proxies,
      .clock = &clock,
      .readiness =
          [&]() {
            Published current = cache.Current(cache.default_group());
            if (current.snapshot == nullptr) {
              return Readiness{false, "no complete snapshot yet"};
            }
            return Readiness{true, absl::StrCat("serving snapshot ", current.snapshot->version(),
                                                " (", current.snapshot->size(), " resources)")};
          },
      .status = status_json,
  };
  absl::StatusOr<std::unique_ptr<AdminServer>> admin =
      AdminServer::Start(options.admin_listen, admin_sources);
  if (!admin.ok()) {
    LogError("%s", admin.status().message());
    return 1;
  }
  LogInfo("admin server listening on port %d (%s)", (*admin)->port(), options.admin_listen);

  if (!options.ports_file.empty()) {
    if (absl::Status status = WritePortsFile(options.ports_file, (*xds)->port(), (*admin)->port());
        !status.ok()) {
      LogError("%s", status.message());
      return 1;
    }
  }

  int signal_number = 0;
  sigwait(&signals, &signal_number);
  LogInfo("received signal %d, shutting down", signal_number);
  (*admin)->Stop();
  if (xds_source) xds_source->Stop();
  if (config_source) config_source->Stop();
  (*xds)->Shutdown(absl::Seconds(1));
  metrics.RemoveCollector(collector);
  return 0;
}

}  // namespace holdfast
