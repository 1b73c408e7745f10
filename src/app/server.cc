#include "src/app/server.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "src/app/etcd_flags.h"
#include "src/app/readiness.h"
#include "src/common/clock.h"
#include "src/common/log.h"

namespace holdfast {
namespace {

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

void CollectProxyMetrics(const ProxyRegistry& proxies, MetricWriter& out) {
  constexpr ProxySync kStates[] = {ProxySync::kSynced, ProxySync::kPending, ProxySync::kNacking};
  std::map<ProxySync, size_t> counts = proxies.CountBySync();
  for (ProxySync state : kStates) {
    out.Sample("holdfast_proxies",
               "Connected proxies by where they stand: synced (every response ACKed), pending "
               "(a response awaits its ACK), nacking (the latest reply to some type is a NACK)",
               "gauge", {{"state", std::string(ProxySyncName(state))}},
               static_cast<double>(counts[state]));
  }
}

nlohmann::json TlsStateJson(const TlsReloadState& state) {
  if (!state.enabled) return {{"enabled", false}};
  auto time = [](absl::Time t) {
    return t == absl::InfinitePast() ? std::string() : absl::FormatTime(t, absl::UTCTimeZone());
  };
  return {{"enabled", true},
          {"cert_file", state.files.cert_file},
          {"key_file", state.files.key_file},
          {"client_ca_file", state.files.client_ca_file},
          {"loaded_at", time(state.loaded_at)},
          {"reloads", state.reloads},
          {"failures", state.failures},
          {"error", state.error},
          {"error_since", state.error.empty() ? std::string() : time(state.error_since)}};
}

}  // namespace

absl::StatusOr<std::unique_ptr<Server>> Server::Start(const ServeOptions& options) {
  auto server = std::unique_ptr<Server>(new Server(options));
  if (absl::Status started = server->StartParts(); !started.ok()) return started;
  return server;
}

Server::Server(const ServeOptions& options)
    : options_(options),
      clock_(Clock::Real()),
      random_(Random::Real()),
      started_(clock_.Now()),
      stats_(&metrics_) {}

absl::Status Server::ParseGrouping() {
  absl::StatusOr<NodeGrouper> grouper =
      NodeGrouper::Parse(options_.node_group, cache_.default_group());
  if (!grouper.ok()) return grouper.status();
  grouper_.emplace(*std::move(grouper));
  absl::StatusOr<ClientIdentityPolicy> identity =
      ClientIdentityPolicy::Parse(options_.xds_client_identity);
  if (!identity.ok()) return identity.status();
  identity_.emplace(*std::move(identity));
  return CheckGroupingTrust(*grouper_, options_.node_group, *identity_,
                            options_.tls.enabled() && !options_.tls.client_ca_file.empty());
}

absl::Status Server::StartParts() {
  if (absl::Status grouping = ParseGrouping(); !grouping.ok()) return grouping;
  absl::StatusOr<absl::Duration> grace = ParseFlagDuration("--store-grace", options_.store_grace);
  if (!grace.ok()) return grace.status();
  absl::StatusOr<RolloutPolicies> rollout = ParseRolloutFlags(options_.rollout);
  if (!rollout.ok()) return rollout.status();
  if (absl::Status source = StartSource(*grace, *rollout); !source.ok()) return source;
  if (absl::Status xds = StartXds(); !xds.ok()) return xds;
  if (absl::Status admin = StartAdmin(); !admin.ok()) return admin;
  if (absl::Status webhook = StartWebhook(); !webhook.ok()) return webhook;
  StartHousekeeping();
  return absl::OkStatus();
}

absl::Status Server::StartSource(absl::Duration grace, const RolloutPolicies& rollout) {
  // The source's snapshots are staged; the rollouts decide what proxies see.
  last_good_ = std::make_unique<LastKnownGood>(
      LastKnownGood::Options{.state_dir = options_.state_dir, .grace = grace}, &staged_, clock_,
      &metrics_);
  last_good_->Start();

  absl::StatusOr<std::unique_ptr<ServingSource>> source = StartServingSource(
      options_, clock_, random_, &metrics_,
      [this](SnapshotPtr snapshot) { last_good_->PublishLive(std::move(snapshot)); });
  if (!source.ok()) return source.status();
  source_ = *std::move(source);
  StartRollouts(rollout);
  return absl::OkStatus();
}

void Server::StartRollouts(const RolloutPolicies& flags) {
  // A hold is reported on the objects behind what the canaries rejected.
  held_ = std::make_unique<HeldStatusUnion>(
      [source = source_.get()](StatusMap held) { source->SetStatusOverlay(std::move(held)); });
  // Started after the source, whose store the replicas share decisions
  // through; it takes what was staged meanwhile as its first offer.
  rollouts_ = std::make_unique<RolloutManager>(
      RolloutManager::Options{.flags = flags,
                              .state_dir = options_.state_dir,
                              .shared = source_->rollout_document(),
                              .replica_id = source_->replica_id()},
      &staged_, &cache_, &proxies_, &canaries_, clock_, &metrics_);
  rollouts_->OnHeldStatuses([held = held_.get()](const std::string& rollout, StatusMap statuses) {
    held->Set(rollout, std::move(statuses));
  });
  rollouts_->Start();
}

absl::StatusOr<XdsServerOptions> Server::XdsOptions() {
  XdsServerOptions xds_options;
  xds_options.listen_address = options_.xds_listen;
  xds_options.tls = options_.tls;
  // The state directory is writable where the root file system is not
  // (deploy/deployment.yaml).
  if (!options_.state_dir.empty()) xds_options.tls.staging_dir = options_.state_dir + "/xds-tls";
  xds_options.control_plane_id = options_.control_plane_id;
  xds_options.metrics = &metrics_;
  xds_options.max_streams_per_connection = options_.xds_max_streams_per_connection;
  xds_options.csds = options_.xds_csds;
  for (auto [flag, text, out] :
       {std::tuple{"--xds-handshake-timeout", &options_.xds_handshake_timeout,
                   &xds_options.handshake_timeout},
        std::tuple{"--xds-first-request-timeout", &options_.xds_first_request_timeout,
                   &xds_options.first_request_timeout}}) {
    absl::StatusOr<absl::Duration> parsed = ParseFlagDuration(flag, *text);
    if (!parsed.ok()) return parsed.status();
    *out = *parsed;
  }
  return xds_options;
}

absl::Status Server::StartXds() {
  absl::StatusOr<XdsServerOptions> xds_options = XdsOptions();
  if (!xds_options.ok()) return xds_options.status();
  StreamContext context{.cache = &cache_,
                        .proxies = &proxies_,
                        .stats = &stats_,
                        .bodies = &bodies_,
                        .views = &views_,
                        .grouper = &*grouper_,
                        .clock = &clock_,
                        .control_plane_id = options_.control_plane_id,
                        .limits = StreamLimits{},
                        .identity = &*identity_,
                        .canaries = &canaries_};
  absl::StatusOr<std::unique_ptr<XdsServer>> xds = XdsServer::Start(*xds_options, context);
  if (!xds.ok()) return xds.status();
  xds_ = *std::move(xds);
  LogInfo("xds server listening on port %d (%s)%s%s", xds_->port(), options_.xds_listen,
          options_.tls.enabled()
              ? (options_.tls.client_ca_file.empty() ? " with TLS" : " with mutual TLS")
              : "",
          identity_->enabled()
              ? absl::StrCat(", node ids bound to certificates (", identity_->spec(), ")")
              : "");
  return absl::OkStatus();
}

absl::Status Server::StartAdmin() {
  collector_ = metrics_.AddCollector([this](MetricWriter& out) {
    CollectSnapshotMetrics(cache_, clock_, out);
    CollectProxyMetrics(proxies_, out);
  });
  absl::StatusOr<std::unique_ptr<AdminServer>> admin =
      AdminServer::Start(options_.admin_listen, options_.admin_auth, MakeAdminSources());
  if (!admin.ok()) return admin.status();
  admin_ = *std::move(admin);
  LogInfo("admin server listening on port %d (%s)", admin_->port(), options_.admin_listen);
  return absl::OkStatus();
}

void Server::StartHousekeeping() {
  event_watch_ =
      std::make_unique<ReplicaEventWatch>(&events_, clock_, [this] { return Observe(); });
  event_watch_->Start();
  // After a publication or a stream coming or going, once quiet for 1 s
  // (every 30 s under constant change).
  trimmer_ = std::make_unique<MemoryTrimmer>(
      [this] {
        return cache_.Current(cache_.default_group()).sequence * 1'000'003 + proxies_.size();
      },
      absl::Seconds(1), absl::Seconds(30));
  trimmer_->Start();
  LogInfo("allocator: %s (freed memory returned to the kernel after 1 s of quiet)",
          AllocatorIsTcmalloc() ? "tcmalloc" : "the system's malloc");
}

absl::Status Server::StartWebhook() {
  if (options_.webhook_listen.empty()) return absl::OkStatus();
  if (options_.webhook_cert.empty() || options_.webhook_key.empty()) {
    return absl::InvalidArgumentError("--webhook-listen needs --webhook-cert and --webhook-key");
  }
  absl::StatusOr<std::unique_ptr<WebhookServer>> webhook =
      WebhookServer::Start({.listen_address = options_.webhook_listen,
                            .cert_file = options_.webhook_cert,
                            .key_file = options_.webhook_key},
                           &metrics_);
  if (!webhook.ok()) return webhook.status();
  webhook_ = *std::move(webhook);
  LogInfo("admission webhook listening on port %d (%s)", webhook_->port(), options_.webhook_listen);
  return absl::OkStatus();
}

AdminSources Server::MakeAdminSources() {
  std::map<std::string, std::function<nlohmann::json()>> pages = source_->Pages();
  if (auto leader = pages.find("/debug/leader"); leader != pages.end()) {
    leader_page_ = leader->second;
  }
  pages["/debug/tls"] = [this] { return TlsStateJson(xds_->TlsState()); };
  pages["/debug/events"] = [this] { return events_.ToJson(); };
  pages["/debug/replica"] = [this] { return ReplicaJson(); };
  pages["/debug/rollout"] = [this] { return rollouts_->ToJson(); };
  if (const ConfigSource* config = source_->config_source(); config != nullptr) {
    pages["/debug/store"] = [this, config] {
      return StoreJson(config->health(), last_good_->state(), clock_);
    };
  }
  // The rollout of groups without their own at /rollout/promote, a group's
  // at /rollout/promote/GROUP; rollouts come and go with the policies.
  std::map<std::string, std::function<nlohmann::json(const std::string&)>> actions = {
      {"/rollout/promote", [this](const std::string& group) { return rollouts_->Promote(group); }},
      {"/rollout/abort", [this](const std::string& group) { return rollouts_->Abort(group); }}};
  return AdminSources{
      .metrics = &metrics_,
      .cache = &cache_,
      .proxies = &proxies_,
      .clock = &clock_,
      .readiness =
          [this] {
            // A replica whose xDS port cannot accept must not get new proxies.
            if (XdsListenerStatus listener = xds_->ListenerStatus(); !listener.accepting) {
              return Readiness{false, listener.detail};
            }
            return ComputeReadiness(cache_, source_->config_source(), last_good_->state(), clock_);
          },
      .status = [this] { return source_->StatusJson(); },
      .pages = std::move(pages),
      .actions = std::move(actions),
  };
}

nlohmann::json Server::ReplicaJson() const {
  const char* source = options_.etcd.enabled()     ? "etcd"
                       : options_.kube.enabled()   ? "kubernetes"
                       : !options_.xds_dir.empty() ? "xds-directory"
                                                   : "directory";
  return {{"version", HOLDFAST_VERSION},
          {"started", FormatTimestamp(started_)},
          {"uptime_seconds", absl::ToDoubleSeconds(clock_.Now() - started_)},
          {"source", source},
          {"control_plane_id", options_.control_plane_id},
          {"xds_port", xds_->port()}};
}

ReplicaObservation Server::Observe() const {
  ReplicaObservation now;
  for (const auto& [group, published] : cache_.All()) {
    if (published.snapshot == nullptr) continue;
    now.groups[group] = {published.sequence, published.snapshot->version(),
                         published.snapshot->size(), published.snapshot->created()};
  }
  if (leader_page_) {
    nlohmann::json leader = leader_page_();
    now.leadership = ReplicaObservation::Leadership{leader.value("is_leader", false),
                                                    leader.value("leader", std::string()),
                                                    leader.value("term", int64_t{0})};
  }
  if (const ConfigSource* config = source_->config_source(); config != nullptr) {
    SourceHealth health = config->health();
    now.store = ReplicaObservation::Store{health.connected, health.last_error, health.access_error};
  }
  now.serving_persisted = last_good_->state().serving_persisted;
  return now;
}

void Server::Stop() {
  if (stopped_) return;
  stopped_ = true;
  if (event_watch_) event_watch_->Stop();
  if (trimmer_) trimmer_->Stop();
  if (webhook_) webhook_->Stop();
  if (admin_) admin_->Stop();
  if (source_) source_->Stop();
  if (last_good_) last_good_->Stop();
  if (rollouts_) rollouts_->Stop();
  if (xds_) xds_->Shutdown(absl::Seconds(1));
  if (collector_ >= 0) metrics_.RemoveCollector(collector_);
}

}  // namespace holdfast
