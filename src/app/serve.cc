#include "src/app/serve.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "grpc/support/log.h"
#include "src/admin/admin_server.h"
#include "src/common/log.h"
#include "src/common/memory_trim.h"
#include "src/common/random.h"
#include "src/election/etcd_election_backend.h"
#include "src/election/lease_elector.h"
#include "src/snapshot/last_known_good.h"
#include "src/source/config_directory.h"
#include "src/source/config_etcd.h"
#include "src/source/config_kube.h"
#include "src/source/xds_directory.h"
#include "src/status/status_writer.h"

namespace holdfast {
namespace {

// gRPC logs some failures on every attempt: a TLS handshake that fails, on
// every reconnect (every 2 s at most), for as long as it fails. holdfast
// reports those failures itself (/debug/store, once in its own log), so a
// gRPC error is logged as a warning when its call site has been quiet for
// kGrpcLogQuiet, and repeats before that only as debug messages.
constexpr absl::Duration kGrpcLogQuiet = absl::Minutes(1);

void LogGrpcMessage(gpr_log_func_args* args) {
  if (args->severity != GPR_LOG_SEVERITY_ERROR) {
    LogDebug("grpc: %s (%s:%d)", args->message, args->file, args->line);
    return;
  }
  static absl::Mutex* const mu = new absl::Mutex;
  static auto* const last_seen = new absl::flat_hash_map<std::pair<std::string, int>, absl::Time>;
  absl::Time now = absl::Now();
  bool repeat;
  {
    absl::MutexLock lock(mu);
    absl::Time& seen = (*last_seen)[{args->file, args->line}];
    repeat = now - seen < kGrpcLogQuiet;
    seen = now;
  }
  Logf(repeat ? LogLevel::kDebug : LogLevel::kWarning, "grpc: %s (%s:%d)", args->message,
       args->file, args->line);
}

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
    out.Sample("holdfast_snapshot_age_seconds", "Time since the served snapshot was built", "gauge",
               {{"group", group}}, absl::ToDoubleSeconds(clock.Now() - snapshot.created()));
    for (const std::string& type_url : snapshot.TypeUrls()) {
      out.Sample("holdfast_snapshot_resources", "Resources in the served snapshot", "gauge",
                 {{"group", group}, {"type_url", type_url}},
                 static_cast<double>(snapshot.Resources(type_url).size()));
    }
  }
}

std::string HostName() {
  char name[256] = {0};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "holdfast";
  return name;
}

// The pieces of an etcd deployment: the source every replica reads, the
// elector and the status writer that only the leader's writes get past.
struct EtcdDeployment {
  std::unique_ptr<EtcdClient> client;
  std::unique_ptr<EtcdElectionBackend> backend;
  std::unique_ptr<LeaseElector> elector;
  std::unique_ptr<StatusWriter> writer;
  std::unique_ptr<EtcdConfigSource> source;

  void Stop() {
    if (source) source->Stop();
    if (writer) writer->Stop();
    if (elector) {
      elector->Stop();
      elector->Resign();  // let another replica lead now, not after the lease
    }
  }
};

absl::StatusOr<std::unique_ptr<EtcdDeployment>> StartEtcd(
    const ServeOptions& options, const Clock& clock, Random& random, MetricsRegistry* metrics,
    std::function<void(SnapshotPtr)> publish) {
  auto deployment = std::make_unique<EtcdDeployment>();
  LeaseElector::Options election;
  election.prefix = options.etcd.prefix + "/election/";
  election.replica_id = options.replica_id.empty() ? HostName() : options.replica_id;
  for (auto [flag, text, out] :
       {std::tuple{"--lease-duration", &options.lease_duration, &election.lease_duration},
        std::tuple{"--renew-deadline", &options.renew_deadline, &election.renew_deadline},
        std::tuple{"--retry-period", &options.retry_period, &election.retry_period}}) {
    absl::StatusOr<absl::Duration> parsed = ParseFlagDuration(flag, *text);
    if (!parsed.ok()) return parsed.status();
    *out = *parsed;
  }
  if (absl::Status valid = LeaseElector::Validate(election); !valid.ok()) return valid;

  EtcdFlags flags = options.etcd;
  // A renewal that waits longer than half the renew deadline is worth less
  // than trying another member.
  absl::StatusOr<absl::Duration> timeout =
      ParseFlagDuration("--etcd-call-timeout", flags.call_timeout);
  if (!timeout.ok()) return timeout.status();
  const absl::Duration call_timeout = std::min(*timeout, election.renew_deadline / 2);
  flags.call_timeout = absl::FormatDuration(call_timeout);
  absl::StatusOr<std::unique_ptr<EtcdClient>> client = ConnectEtcd(flags);
  if (!client.ok()) return client.status();
  deployment->client = std::move(*client);
  deployment->backend = std::make_unique<EtcdElectionBackend>(deployment->client.get());
  deployment->elector =
      std::make_unique<LeaseElector>(election, deployment->backend.get(), clock, random, metrics);
  deployment->writer = std::make_unique<StatusWriter>(
      StatusWriter::Options{.prefix = options.etcd.prefix, .replica_id = election.replica_id},
      deployment->client.get(), deployment->elector.get(), random, metrics);

  EtcdConfigSource::Options source_options;
  source_options.prefix = options.etcd.prefix;
  source_options.translator.missing_upstream_status = options.missing_upstream_status;
  // A watch that hears nothing (not even progress) for two intervals and a
  // second is taken for dead: a blackholed store never closes it.
  source_options.watch.progress_interval = std::min(absl::Seconds(5), call_timeout);
  source_options.watch.stall_timeout =
      2 * source_options.watch.progress_interval + absl::Seconds(1);
  deployment->source = std::make_unique<EtcdConfigSource>(source_options, deployment->client.get(),
                                                          clock, metrics, std::move(publish));
  deployment->source->OnStatuses(
      [writer = deployment->writer.get()](const StatusMap& statuses) { writer->Update(statuses); });
  deployment->source->Start();
  deployment->elector->Start();
  deployment->writer->Start();
  LogInfo("etcd: replica %s reading %s/config/ from %s", election.replica_id, options.etcd.prefix,
          absl::StrJoin(options.etcd.endpoints, ","));
  return deployment;
}

nlohmann::json LeaderToJson(const Leadership& leadership) {
  return {{"replica", leadership.replica_id},
          {"is_leader", leadership.is_leader},
          {"term", leadership.term},
          {"leader", leadership.leader_id},
          {"transitions", leadership.transitions}};
}

nlohmann::json HealthToJson(const SourceHealth& health, const Clock& clock) {
  return {
      {"connected", health.connected},
      {"revision", health.revision},
      {"synced", health.synced_once},
      {"last_error", health.last_error},
      {"access_error", health.access_error},
      {"last_contact_seconds", health.last_contact == absl::Time()
                                   ? -1.0
                                   : absl::ToDoubleSeconds(clock.Now() - health.last_contact)},
      {"unreachable_seconds",
       health.connected ? 0.0 : absl::ToDoubleSeconds(clock.Now() - health.disconnected_since)}};
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
  gpr_set_log_function(LogGrpcMessage);

  Clock& clock = Clock::Real();
  // Jitters the elector's and the status writer's retries.
  Random& random = Random::Real();
  MetricsRegistry metrics;
  SnapshotCache cache;
  ProxyRegistry proxies;
  XdsStats stats(&metrics);
  EncodedBodyCache bodies;
  ViewCache views;
  absl::StatusOr<NodeGrouper> grouper =
      NodeGrouper::Parse(options.node_group, cache.default_group());
  if (!grouper.ok()) {
    LogError("%s", grouper.status().message());
    return 2;
  }
  int sources = !options.xds_dir.empty() + !options.config_dir.empty() + options.etcd.enabled() +
                options.kube.enabled();
  if (sources != 1) {
    LogError(
        "pass exactly one of --config-dir DIR (gateway objects), --etcd-endpoints URL,... "
        "(gateway objects in etcd), --kubeconfig PATH | --in-cluster (gateway objects in "
        "Kubernetes) or --xds-dir DIR (raw Envoy resources)");
    return 2;
  }

  absl::StatusOr<absl::Duration> grace = ParseFlagDuration("--store-grace", options.store_grace);
  if (!grace.ok()) {
    LogError("%s", grace.status().message());
    return 2;
  }
  LastKnownGood last_good(LastKnownGood::Options{.state_dir = options.state_dir, .grace = *grace},
                          &cache, clock, &metrics);
  last_good.Start();
  auto publish = [&last_good](SnapshotPtr snapshot) { last_good.PublishLive(std::move(snapshot)); };
  std::unique_ptr<XdsDirectorySource> xds_source;
  std::unique_ptr<ConfigDirectorySource> directory_source;
  std::unique_ptr<EtcdDeployment> etcd;
  std::unique_ptr<KubeClient> kube_client;
  std::unique_ptr<KubeConfigSource> kube_source;
  ConfigSource* config_source = nullptr;
  std::function<nlohmann::json()> status_json;
  std::map<std::string, std::function<nlohmann::json()>> pages;
  absl::Status loaded;
  if (!options.xds_dir.empty()) {
    xds_source = std::make_unique<XdsDirectorySource>(
        XdsDirectorySource::Options{.directory = options.xds_dir}, clock, &metrics, publish);
    loaded = xds_source->Reload();
    xds_source->Start();
    status_json = [&] { return RejectionsToJson(xds_source->rejections()); };
  } else if (!options.config_dir.empty()) {
    ConfigDirectorySource::Options source_options;
    source_options.directory = options.config_dir;
    source_options.translator.missing_upstream_status = options.missing_upstream_status;
    directory_source =
        std::make_unique<ConfigDirectorySource>(source_options, clock, &metrics, publish);
    loaded = directory_source->Reload();
    directory_source->Start();
    config_source = directory_source.get();
  } else if (options.kube.enabled()) {
    absl::StatusOr<std::unique_ptr<KubeClient>> client = ConnectKube(options.kube, clock);
    if (!client.ok()) {
      LogError("%s", client.status().message());
      return 2;
    }
    kube_client = std::move(*client);
    KubeConfigSource::Options source_options;
    source_options.namespaces = options.kube.watch_namespaces;
    source_options.translator.missing_upstream_status = options.missing_upstream_status;
    kube_source = std::make_unique<KubeConfigSource>(source_options, kube_client.get(), clock,
                                                     random, &metrics, publish);
    kube_source->Start();
    config_source = kube_source.get();
    LogInfo("kubernetes: reading holdfast.dev/v1 objects from %s (%s)",
            kube_client->config().server, kube_client->config().origin);
  } else {
    absl::StatusOr<std::unique_ptr<EtcdDeployment>> started =
        StartEtcd(options, clock, random, &metrics, publish);
    if (!started.ok()) {
      LogError("%s", started.status().message());
      return 2;
    }
    etcd = std::move(*started);
    config_source = etcd->source.get();
    pages["/debug/leader"] = [&] { return LeaderToJson(etcd->elector->Current()); };
  }
  if (config_source != nullptr) {
    status_json = [config_source] { return StatusesToJson(config_source->statuses()); };
    pages["/debug/store"] = [config_source, &clock, &last_good] {
      nlohmann::json json = HealthToJson(config_source->health(), clock);
      LastKnownGood::State state = last_good.state();
      json["serving"] = state.serving_persisted ? "persisted"
                        : state.serving_live    ? "live"
                                                : "nothing";
      json["persisted_version"] = state.persisted ? state.persisted->version() : "";
      json["restore_error"] = state.restore_error;
      json["persist_error"] = state.persist_error;
      return json;
    };
  }
  if (!loaded.ok()) {
    // Not fatal: the directory may appear later; until then we are not ready.
    LogWarning("%s", loaded.message());
  }

  StreamContext context{&cache, &proxies,  &stats, &bodies,
                        &views, &*grouper, &clock, options.control_plane_id};
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

  int collector =
      metrics.AddCollector([&](MetricWriter& out) { CollectSnapshotMetrics(cache, clock, out); });
  AdminSources admin_sources{
      .metrics = &metrics,
      .cache = &cache,
      .proxies = &proxies,
      .clock = &clock,
      .readiness =
          [&]() {
            Published current = cache.Current(cache.default_group());
            std::string store;
            if (config_source != nullptr) {
              SourceHealth health = config_source->health();
              if (!health.connected) {
                store =
                    absl::StrCat("store unreachable for ",
                                 absl::FormatDuration(absl::Trunc(
                                     clock.Now() - health.disconnected_since, absl::Seconds(1))),
                                 ": ", health.last_error);
              } else if (!health.access_error.empty()) {
                store = absl::StrCat("store refuses access: ", health.access_error);
              }
            }
            LastKnownGood::State last = last_good.state();
            if (current.snapshot == nullptr) {
              std::string why = "no complete snapshot yet";
              if (!store.empty()) absl::StrAppend(&why, "; ", store);
              if (!last.restore_error.empty()) absl::StrAppend(&why, "; ", last.restore_error);
              return Readiness{false, why};
            }
            return Readiness{
                true,
                absl::StrCat("serving ", last.serving_persisted ? "persisted " : "", "snapshot ",
                             current.snapshot->version(), " from ",
                             absl::FormatTime("%Y-%m-%d %H:%M:%S", current.snapshot->created(),
                                              absl::UTCTimeZone()),
                             " (", current.snapshot->size(), " resources)",
                             store.empty() ? "" : ", ", store)};
          },
      .status = status_json,
      .pages = pages,
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

  // After a publication or a stream coming or going, once quiet for 1 s
  // (every 30 s under constant change).
  MemoryTrimmer trimmer(
      [&cache, &proxies] {
        return cache.Current(cache.default_group()).sequence * 1'000'003 + proxies.size();
      },
      absl::Seconds(1), absl::Seconds(30));
  trimmer.Start();

  int signal_number = 0;
  sigwait(&signals, &signal_number);
  LogInfo("received signal %d, shutting down", signal_number);
  trimmer.Stop();
  (*admin)->Stop();
  if (xds_source) xds_source->Stop();
  if (directory_source) directory_source->Stop();
  if (etcd) etcd->Stop();
  if (kube_source) kube_source->Stop();
  last_good.Stop();
  (*xds)->Shutdown(absl::Seconds(1));
  metrics.RemoveCollector(collector);
  return 0;
}

}  // namespace holdfast
