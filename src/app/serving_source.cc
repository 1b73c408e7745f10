#include "src/app/serving_source.h"

#include "absl/strings/str_join.h"
#include "src/admin/admin_server.h"
#include "src/app/election_flags.h"
#include "src/app/kube_serving_source.h"
#include "src/common/log.h"
#include "src/election/etcd_election_backend.h"
#include "src/election/lease_elector.h"
#include "src/etcd/etcd_shared_document.h"
#include "src/source/directory_config_source.h"
#include "src/source/etcd_config_source.h"
#include "src/source/xds_directory.h"
#include "src/status/status_writer.h"

namespace holdfast {
namespace {

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

// Raw Envoy resources from a directory (--xds-dir).
class XdsDirectory : public ServingSource {
 public:
  XdsDirectory(const ServeOptions& options, const Clock& clock, MetricsRegistry* metrics,
               std::function<void(SnapshotPtr)> publish)
      : source_(XdsDirectorySource::Options{.directory = options.xds_dir}, clock, metrics,
                std::move(publish)) {
    if (absl::Status loaded = source_.Reload(); !loaded.ok()) {
      LogWarning("%s", loaded.message());  // the directory may appear later
    }
    source_.Start();
  }
  const ConfigSource* config_source() const override { return nullptr; }
  nlohmann::json StatusJson() const override { return RejectionsToJson(source_.rejections()); }
  void Stop() override { source_.Stop(); }

 private:
  XdsDirectorySource source_;
};

// Gateway objects from a directory (--config-dir), the embedded default.
class ConfigDirectory : public ServingSource {
 public:
  ConfigDirectory(const ServeOptions& options, const Clock& clock, MetricsRegistry* metrics,
                  std::function<void(SnapshotPtr)> publish)
      : source_(Options(options), clock, metrics, std::move(publish)) {
    if (absl::Status loaded = source_.Reload(); !loaded.ok()) {
      LogWarning("%s", loaded.message());  // the directory may appear later
    }
    source_.Start();
  }
  const ConfigSource* config_source() const override { return &source_; }
  nlohmann::json StatusJson() const override { return StatusesToJson(source_.statuses()); }
  void SetStatusOverlay(StatusMap overlay) override {
    source_.SetStatusOverlay(std::move(overlay));
  }
  void Stop() override { source_.Stop(); }

 private:
  static DirectoryConfigSource::Options Options(const ServeOptions& options) {
    DirectoryConfigSource::Options source_options;
    source_options.directory = options.config_dir;
    source_options.translator.missing_upstream_status = options.missing_upstream_status;
    return source_options;
  }

  DirectoryConfigSource source_;
};

// Gateway objects in etcd: the source every replica reads, and the elector
// and status writer that only the leader's writes get past. Members are
// declared in build order.
class Etcd : public ServingSource {
 public:
  static absl::StatusOr<std::unique_ptr<Etcd>> Start(const ServeOptions& options,
                                                     const Clock& clock, Random& random,
                                                     MetricsRegistry* metrics,
                                                     std::function<void(SnapshotPtr)> publish);

  const ConfigSource* config_source() const override { return source_.get(); }
  nlohmann::json StatusJson() const override { return StatusesToJson(source_->statuses()); }
  void SetStatusOverlay(StatusMap overlay) override {
    source_->SetStatusOverlay(std::move(overlay));
  }
  std::map<std::string, std::function<nlohmann::json()>> Pages() override {
    return {{"/debug/leader", [this] { return LeaderToJson(elector_->Current()); }}};
  }
  SharedDocument* rollout_document() override { return rollout_document_.get(); }
  std::string replica_id() const override { return replica_id_; }
  void Stop() override {
    source_->Stop();
    writer_->Stop();
    elector_->Stop();
    elector_->Resign();  // let another replica lead now, not after the lease
  }

 private:
  std::unique_ptr<EtcdClient> client_;
  std::unique_ptr<EtcdElectionBackend> backend_;
  std::unique_ptr<LeaseElector> elector_;
  std::unique_ptr<StatusWriter> writer_;
  std::unique_ptr<EtcdConfigSource> source_;
  std::unique_ptr<EtcdSharedDocument> rollout_document_;
  std::string replica_id_;
};

absl::StatusOr<std::unique_ptr<Etcd>> Etcd::Start(const ServeOptions& options, const Clock& clock,
                                                  Random& random, MetricsRegistry* metrics,
                                                  std::function<void(SnapshotPtr)> publish) {
  absl::StatusOr<LeaseElector::Options> election =
      ElectionOptionsFromFlags(options, options.etcd.prefix + "/election/");
  if (!election.ok()) return election.status();
  EtcdFlags flags = options.etcd;
  // A renewal that waits longer than half the renew deadline is worth less
  // than trying another member.
  absl::StatusOr<absl::Duration> timeout =
      ParseFlagDuration("--etcd-call-timeout", flags.call_timeout);
  if (!timeout.ok()) return timeout.status();
  const absl::Duration call_timeout = std::min(*timeout, election->renew_deadline / 2);
  flags.call_timeout = absl::FormatDuration(call_timeout);
  absl::StatusOr<std::unique_ptr<EtcdClient>> client = ConnectEtcd(flags);
  if (!client.ok()) return client.status();

  auto etcd = std::unique_ptr<Etcd>(new Etcd());
  etcd->client_ = std::move(*client);
  etcd->backend_ = std::make_unique<EtcdElectionBackend>(etcd->client_.get());
  etcd->elector_ =
      std::make_unique<LeaseElector>(*election, etcd->backend_.get(), clock, random, metrics);
  etcd->writer_ = std::make_unique<StatusWriter>(
      StatusWriter::Options{.prefix = options.etcd.prefix, .replica_id = election->replica_id},
      etcd->client_.get(), etcd->elector_.get(), random, metrics);

  EtcdConfigSource::Options source_options;
  source_options.prefix = options.etcd.prefix;
  source_options.translator.missing_upstream_status = options.missing_upstream_status;
  // A watch that hears nothing (not even progress) for two intervals and a
  // second is taken for dead: a blackholed store never closes it.
  source_options.watch.progress_interval = std::min(absl::Seconds(5), call_timeout);
  source_options.watch.stall_timeout =
      2 * source_options.watch.progress_interval + absl::Seconds(1);
  etcd->source_ = std::make_unique<EtcdConfigSource>(source_options, etcd->client_.get(), clock,
                                                     metrics, std::move(publish));
  etcd->source_->OnStatuses(
      [writer = etcd->writer_.get()](const StatusMap& statuses) { writer->Update(statuses); });
  etcd->replica_id_ = election->replica_id;
  etcd->rollout_document_ = std::make_unique<EtcdSharedDocument>(
      etcd->client_.get(), options.etcd.prefix + "/rollout/decisions");
  etcd->source_->Start();
  etcd->elector_->Start();
  etcd->writer_->Start();
  LogInfo("etcd: replica %s reading %s/config/ from %s", election->replica_id, options.etcd.prefix,
          absl::StrJoin(options.etcd.endpoints, ","));
  return etcd;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ServingSource>> StartServingSource(
    const ServeOptions& options, const Clock& clock, Random& random, MetricsRegistry* metrics,
    std::function<void(SnapshotPtr)> publish) {
  const int sources = !options.xds_dir.empty() + !options.config_dir.empty() +
                      options.etcd.enabled() + options.kube.enabled();
  if (sources != 1) {
    return absl::InvalidArgumentError(
        "pass exactly one of --config-dir DIR (gateway objects), --etcd-endpoints URL,... "
        "(gateway objects in etcd), --kubeconfig PATH | --in-cluster (gateway objects in "
        "Kubernetes) or --xds-dir DIR (raw Envoy resources)");
  }
  if (!options.xds_dir.empty()) {
    return std::make_unique<XdsDirectory>(options, clock, metrics, std::move(publish));
  }
  if (!options.config_dir.empty()) {
    return std::make_unique<ConfigDirectory>(options, clock, metrics, std::move(publish));
  }
  if (options.kube.enabled()) {
    absl::StatusOr<std::unique_ptr<KubeServingSource>> kube =
        KubeServingSource::Start(options, clock, random, metrics, std::move(publish));
    if (!kube.ok()) return kube.status();
    return std::unique_ptr<ServingSource>(std::move(*kube));
  }
  absl::StatusOr<std::unique_ptr<Etcd>> etcd =
      Etcd::Start(options, clock, random, metrics, std::move(publish));
  if (!etcd.ok()) return etcd.status();
  return std::unique_ptr<ServingSource>(std::move(*etcd));
}

}  // namespace holdfast
