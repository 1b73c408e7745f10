#include "src/app/kube_serving_source.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "src/admin/admin_server.h"
#include "src/app/election_flags.h"
#include "src/app/kube_flags.h"
#include "src/common/log.h"

namespace holdfast {
namespace {

// A DNS-1123 label, what namespaces and (more loosely) Lease names must be.
bool IsDnsLabel(const std::string& text) {
  if (text.empty() || text.size() > 63 || text.front() == '-' || text.back() == '-') return false;
  for (char c : text) {
    if (!absl::ascii_islower(c) && !absl::ascii_isdigit(c) && c != '-') return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<LeaseLocation> LeaseLocationFromFlags(const ServeOptions& options,
                                                     const KubeConfig& config) {
  LeaseLocation lease{.ns = options.lease_namespace, .name = options.lease_name};
  if (lease.ns.empty()) lease.ns = options.kube.in_cluster ? config.ns : "holdfast-system";
  for (auto [flag, value] :
       {std::pair{"--lease-namespace", lease.ns}, std::pair{"--lease-name", lease.name}}) {
    if (!IsDnsLabel(value)) {
      return absl::InvalidArgumentError(absl::StrCat(
          flag, " \"", value, "\" must be a DNS label (lower-case letters, digits and '-')"));
    }
  }
  return lease;
}

KubeClient::Options ElectionClientOptions(absl::Duration renew_deadline) {
  KubeClient::Options options;
  options.request_timeout = std::min(options.request_timeout, renew_deadline / 4);
  options.connect_timeout = std::min(options.connect_timeout, renew_deadline / 4);
  options.user_agent = "holdfast-leader-election";
  return options;
}

absl::StatusOr<std::unique_ptr<KubeServingSource>> KubeServingSource::Start(
    const ServeOptions& options, const Clock& clock, Random& random, MetricsRegistry* metrics,
    std::function<void(SnapshotPtr)> publish) {
  absl::StatusOr<KubeConfig> config = KubeConfigFromFlags(options.kube);
  if (!config.ok()) return config.status();
  absl::StatusOr<LeaseLocation> lease = LeaseLocationFromFlags(options, *config);
  if (!lease.ok()) return lease.status();
  absl::StatusOr<LeaseElector::Options> election = ElectionOptionsFromFlags(
      options, absl::StrCat("kubernetes/", lease->ns, "/", lease->name, "/"));
  if (!election.ok()) return election.status();
  if (absl::Status valid = CheckClientGoTimings(*election); !valid.ok()) return valid;

  auto kube = std::unique_ptr<KubeServingSource>(new KubeServingSource());
  kube->lease_ = absl::StrCat(lease->ns, "/", lease->name);
  absl::StatusOr<std::unique_ptr<KubeClient>> client =
      KubeClient::Create(*config, KubeClient::Options{}, clock);
  if (!client.ok()) return client.status();
  kube->client_ = *std::move(client);
  client = KubeClient::Create(*config, ElectionClientOptions(election->renew_deadline), clock);
  if (!client.ok()) return client.status();
  kube->election_client_ = *std::move(client);
  kube->lease_store_ =
      std::make_unique<KubeLeaseStore>(kube->election_client_.get(), lease->ns, lease->name);
  kube->backend_ =
      std::make_unique<KubeLeaseBackend>(election->replica_id, kube->lease_store_.get(), clock);
  kube->elector_ =
      std::make_unique<LeaseElector>(*election, kube->backend_.get(), clock, random, metrics);
  kube->writer_ = std::make_unique<KubeStatusWriter>(
      KubeStatusWriter::Options{.replica_id = election->replica_id,
                                .resources = HoldfastResources(),
                                .gateway_api_resources = GatewayApiStatusResources()},
      kube->client_.get(), kube->elector_.get(), kube->lease_store_.get(), clock, random, metrics);

  KubeConfigSource::Options source_options;
  source_options.namespaces = options.kube.watch_namespaces;
  source_options.translator.missing_upstream_status = options.missing_upstream_status;
  kube->source_ = std::make_unique<KubeConfigSource>(source_options, kube->client_.get(), clock,
                                                     random, metrics, std::move(publish));
  kube->source_->OnObjectStatuses(
      [writer = kube->writer_.get()](const StatusMap& statuses, const ObservedObjects& observed) {
        writer->Update(statuses, observed);
      });
  kube->source_->OnGatewayApiStatuses(
      [writer = kube->writer_.get()](const gateway_api::GatewayApiStatuses& statuses) {
        writer->UpdateGatewayApi(statuses);
      });
  // The rollout's decisions beside the Lease; calls as short as the
  // election's, so a rollout check never waits long on a slow API server.
  kube->replica_id_ = election->replica_id;
  kube->rollout_document_ = std::make_unique<KubeSharedDocument>(
      kube->election_client_.get(), lease->ns, "holdfast-rollout", "decisions");
  kube->source_->Start();
  kube->elector_->Start();
  kube->writer_->Start();
  LogInfo("kubernetes: replica %s reading holdfast.dev/v1 objects from %s (%s); Lease %s",
          election->replica_id, config->server, config->origin, kube->lease_);
  return kube;
}

nlohmann::json KubeServingSource::StatusJson() const { return StatusesToJson(source_->statuses()); }

std::map<std::string, std::function<nlohmann::json()>> KubeServingSource::Pages() {
  return {{"/debug/leader", [this] {
             nlohmann::json page = LeaderToJson(elector_->Current());
             page["lease"] = lease_;
             return page;
           }}};
}

void KubeServingSource::Stop() {
  source_->Stop();
  writer_->Stop();
  elector_->Stop();
  elector_->Resign();  // let another replica lead now, not after the lease
}

}  // namespace holdfast
