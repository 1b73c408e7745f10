#include "src/status/kube_status_writer.h"

#include "absl/strings/str_cat.h"
#include "src/common/backoff.h"
#include "src/common/log.h"
#include "src/gateway_api/status.h"
#include "src/kube/json_fields.h"
#include "src/status/status_writer.h"

namespace holdfast {
namespace {

// The Accepted condition of a state, as the CRDs document it.
nlohmann::json AcceptedCondition(const ObjectStatus& status, int64_t generation) {
  std::string reason = "Accepted";
  std::string message = "Served as written.";
  if (!status.reasons.empty()) {
    const FieldError& first = status.reasons.front();
    message = first.path.empty() ? first.message : absl::StrCat(first.path, ": ", first.message);
    if (status.reasons.size() > 1)
      absl::StrAppend(&message, " (and ", status.reasons.size() - 1, " more)");
    if (message.size() > 1024) message = message.substr(0, 1021) + "...";
  }
  if (status.state == StatusState::kWarning) reason = "AcceptedWithWarnings";
  if (status.state == StatusState::kRejected) {
    reason = "Rejected";
    if (status.serving_last_good)
      absl::StrAppend(&message, " Its last accepted version is served.");
  }
  return {{"type", "Accepted"},
          {"status", status.state == StatusState::kRejected ? "False" : "True"},
          {"reason", reason},
          {"message", message},
          {"observedGeneration", generation}};
}

// `status` without what changes between writers and over time.
nlohmann::json ComparablePart(nlohmann::json status) {
  if (!status.is_object()) return nlohmann::json::object();
  status.erase("writer");
  nlohmann::json& conditions = status["conditions"];
  if (conditions.is_array()) {
    for (nlohmann::json& condition : conditions) {
      if (condition.is_object()) condition.erase("lastTransitionTime");
    }
  } else {
    status.erase("conditions");
  }
  return status;
}

std::string Text(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

nlohmann::json KubeStatusContent(const ObjectKey& key, const ObjectStatus& status,
                                 const ObservedObject& observed) {
  // The same bounds as statuses in etcd: at most 20 reasons of 1 KiB.
  const nlohmann::json stored = StoredStatusJson(key, status);
  nlohmann::json reasons = nlohmann::json::array();
  for (const nlohmann::json& reason : stored["reasons"]) {
    reasons.push_back({{"field", reason["path"]}, {"message", reason["message"]}});
  }
  return {{"state", StatusStateName(status.state)},
          {"servingLastGood", status.serving_last_good},
          {"observedGeneration", observed.generation},
          {"reasons", reasons},
          {"conditions", nlohmann::json::array({AcceptedCondition(status, observed.generation)})}};
}

KubeStatusWriter::KubeStatusWriter(Options options, KubeApi* api, LeaseElector* elector,
                                   LeaseStore* lease, const Clock& clock, Random& random,
                                   MetricsRegistry* metrics)
    : options_(std::move(options)),
      api_(api),
      elector_(elector),
      lease_(lease),
      clock_(clock),
      random_(random),
      counters_(StatusCounters::Register(metrics)) {}

void KubeStatusWriter::Update(const StatusMap& statuses, const ObservedObjects& observed) {
  {
    absl::MutexLock lock(&mu_);
    statuses_ = statuses;
    observed_ = observed;
  }
  poller_.Wake();
}

void KubeStatusWriter::UpdateGatewayApi(const gateway_api::GatewayApiStatuses& statuses) {
  {
    absl::MutexLock lock(&mu_);
    gateway_api_ = statuses;
  }
  poller_.Wake();
}

void KubeStatusWriter::Start() {
  elector_->OnChange([this](const Leadership&) { poller_.Wake(); });
  // Statuses change only with an Update() or a leadership change, which
  // wake the poller; the periodic pass is a safety net, the backoff paces
  // retries of a pass that failed.
  auto backoff = std::make_shared<Backoff>(options_.min_backoff, options_.max_backoff, random_);
  poller_.StartAdaptive(absl::ZeroDuration(), [this, backoff] {
    if (Sync().ok()) {
      backoff->Reset();
      return absl::Minutes(1);
    }
    return backoff->Next();
  });
}

std::map<ObjectKey, KubeStatusWriter::Desired> KubeStatusWriter::DesiredStatuses() {
  std::map<std::string, const KubeResource*> by_kind;
  for (const KubeResource& resource : options_.resources) by_kind[resource.kind] = &resource;
  absl::MutexLock lock(&mu_);
  std::map<ObjectKey, Desired> desired;
  for (const auto& [key, status] : statuses_) {
    auto resource = by_kind.find(key.kind);
    auto observed = observed_.find(key);
    if (resource == by_kind.end() || observed == observed_.end()) continue;  // not an API object
    desired.emplace(key, Desired{resource->second, observed->second,
                                 KubeStatusContent(key, status, observed->second)});
  }
  return desired;
}

absl::Status KubeStatusWriter::Sync() {
  absl::MutexLock sync_lock(&sync_mu_);
  const Leadership leadership = elector_->Current();
  if (!leadership.is_leader || leadership.term != term_) {
    // Not leading, or a new term: what earlier terms (of any replica)
    // stored is read again.
    term_ = leadership.is_leader ? leadership.term : 0;
    known_.clear();
    known_gateway_api_.clear();
    if (!leadership.is_leader) return absl::OkStatus();
    LogInfo("status: leading term %d; converging the status of every object", leadership.term);
  }
  const std::map<ObjectKey, Desired> desired = DesiredStatuses();
  std::erase_if(known_, [&](const auto& entry) { return !desired.contains(entry.first); });
  absl::Status first_error;
  for (const auto& [key, want] : desired) {
    auto known = known_.find(key);
    if (known != known_.end() && known->second.first == want.observed.uid &&
        known->second.second == Text(want.content)) {
      continue;
    }
    // The clock may have ended the term since the pass began.
    const Leadership now = elector_->Current();
    if (!now.is_leader || now.term != leadership.term) break;
    absl::Status status = WriteOne(leadership, key, want);
    if (absl::IsFailedPrecondition(status)) return status;  // fenced: the term is over
    if (!status.ok() && first_error.ok()) first_error = status;
  }
  absl::Status gateway_api = SyncGatewayApi(leadership);
  return first_error.ok() ? gateway_api : first_error;
}

absl::Status KubeStatusWriter::SyncGatewayApi(const Leadership& leadership) {
  gateway_api::GatewayApiStatuses statuses;
  {
    absl::MutexLock lock(&mu_);
    statuses = gateway_api_;
  }
  std::erase_if(known_gateway_api_,
                [&](const auto& entry) { return !statuses.contains(entry.first); });
  absl::Status first_error;
  for (const auto& [key, status] : statuses) {
    auto resource = options_.gateway_api_resources.find(key.kind);
    if (resource == options_.gateway_api_resources.end()) continue;
    auto known = known_gateway_api_.find(key);
    if (known != known_gateway_api_.end()) {
      KnownGatewayApi& was = known->second;
      if (was.renders_to == status) continue;
      if (gateway_api::GatewayApiStatusJson(*status, was.stored, clock_.Now()) == was.stored) {
        was.renders_to = status;
        continue;
      }
    }
    const Leadership now = elector_->Current();
    if (!now.is_leader || now.term != leadership.term) break;
    absl::Status written = WriteGatewayApiOne(leadership, resource->second, status);
    if (absl::IsFailedPrecondition(written)) return written;
    if (!written.ok() && first_error.ok()) first_error = written;
  }
  return first_error;
}

absl::Status KubeStatusWriter::WriteGatewayApiOne(
    const Leadership& leadership, const KubeResource& resource,
    const gateway_api::GatewayApiStatuses::Shared& shared) {
  const gateway_api::GatewayApiStatus& status = *shared;
  absl::StatusOr<std::optional<nlohmann::json>> stored =
      PutStatus(leadership, resource, status.key,
                [&](const nlohmann::json& object) -> std::optional<nlohmann::json> {
                  // About an older generation: the next translation brings the right one.
                  if (ObserveObject(object).generation != status.generation) return std::nullopt;
                  nlohmann::json current = JsonField(object, "status");
                  if (!current.is_object()) current = nlohmann::json::object();
                  return gateway_api::GatewayApiStatusJson(status, current, clock_.Now());
                });
  if (!stored.ok()) return stored.status();
  if (stored->has_value()) known_gateway_api_[status.key] = {**stored, shared};
  return absl::OkStatus();
}

absl::Status KubeStatusWriter::WriteOne(const Leadership& leadership, const ObjectKey& key,
                                        const Desired& desired) {
  const std::string content = Text(desired.content);
  absl::StatusOr<std::optional<nlohmann::json>> stored =
      PutStatus(leadership, *desired.resource, key,
                [&](const nlohmann::json& object) -> std::optional<nlohmann::json> {
                  // Another object of the same name: its translation is still to come.
                  if (ObserveObject(object).uid != desired.observed.uid) return std::nullopt;
                  const nlohmann::json& current = JsonField(object, "status");
                  if (Text(ComparablePart(current)) == content) return current;
                  return StatusToWrite(leadership, object, desired.content);
                });
  if (!stored.ok()) return stored.status();
  if (stored->has_value()) known_[key] = {desired.observed.uid, content};
  return absl::OkStatus();
}

absl::StatusOr<std::optional<nlohmann::json>> KubeStatusWriter::PutStatus(
    const Leadership& leadership, const KubeResource& resource, const ObjectKey& key,
    const RenderStatus& render) {
  for (int attempt = 0;; ++attempt) {
    absl::StatusOr<nlohmann::json> stored = api_->Get(resource, key.ns, key.name);
    if (absl::IsNotFound(stored.status())) return std::nullopt;  // deleted meanwhile
    if (!stored.ok()) {
      counters_.errors->Increment();
      return stored.status();
    }
    std::optional<nlohmann::json> status = render(*stored);
    if (!status.has_value() || *status == JsonField(*stored, "status")) return status;
    nlohmann::json object = *std::move(stored);
    object["status"] = *status;
    // Held across the write, so that this replica releases the Lease only
    // after the write has landed (LeaseElector::TermGuard).
    std::optional<LeaseElector::TermGuard> guard = elector_->HoldTerm(leadership.term);
    if (!guard) {
      return absl::AbortedError(absl::StrCat("term ", leadership.term,
                                             " ended before the status of ", key.ToString(),
                                             " was written"));
    }
    // Bounded by the term: a write the API server cannot commit before our
    // renew deadline (its etcd down, say) is abandoned, not applied after
    // another replica has taken the Lease.
    absl::StatusOr<nlohmann::json> written =
        api_->UpdateStatus(resource, object, guard->TimeLeft());
    guard.reset();
    if (written.ok()) {
      counters_.writes->Increment();
      return status;
    }
    if (IsConflict(written.status()) && attempt + 1 < options_.max_conflicts) continue;
    // The fencing policy refuses with 403, or 422 when it cannot find the
    // Lease (a schema refusal is 422 too: the Lease then still names us).
    if (absl::IsPermissionDenied(written.status()) || absl::IsInvalidArgument(written.status())) {
      return FencedOr(leadership, written.status());
    }
    counters_.errors->Increment();
    LogWarning("status: cannot write the status of %s: %s", key.ToString(),
               written.status().message());
    return written.status();
  }
}

nlohmann::json KubeStatusWriter::StatusToWrite(const Leadership& leadership,
                                               const nlohmann::json& stored,
                                               const nlohmann::json& content) const {
  nlohmann::json status = content;
  const nlohmann::json& old_conditions = JsonField(JsonField(stored, "status"), "conditions");
  const std::string now = FormatKubeTime(clock_.Now());
  for (nlohmann::json& condition : status["conditions"]) {
    // A condition keeps its transition time while its status holds.
    condition["lastTransitionTime"] = now;
    if (!old_conditions.is_array()) continue;
    for (const nlohmann::json& old : old_conditions) {
      if (JsonString(old, "type") == condition["type"] &&
          JsonString(old, "status") == condition["status"] &&
          !JsonString(old, "lastTransitionTime").empty()) {
        condition["lastTransitionTime"] = JsonString(old, "lastTransitionTime");
      }
    }
  }
  status["writer"] = {{"replica", options_.replica_id}, {"term", leadership.term}};
  return status;
}

absl::Status KubeStatusWriter::FencedOr(const Leadership& leadership, absl::Status refused) {
  absl::StatusOr<LeaseStore::Versioned> lease = lease_->Get();
  const bool ended = absl::IsNotFound(lease.status()) ||
                     (lease.ok() && (lease->record.holder_identity != options_.replica_id ||
                                     lease->record.lease_transitions + 1 != leadership.term));
  if (!ended) {
    counters_.errors->Increment();
    LogWarning(
        "status: the API server refused a status write of term %d though the Lease is "
        "still ours (RBAC, or deploy/status-fencing.yaml bound to another Lease?): %s",
        leadership.term, refused.message());
    return refused;
  }
  counters_.fenced->Increment();
  LogWarning(
      "status: the API server refused a write of term %d (the Lease now names %s); "
      "stepping down",
      leadership.term,
      lease.ok() ? absl::StrCat(lease->record.holder_identity, ", term ",
                                lease->record.lease_transitions + 1)
                 : std::string("nobody: it is gone"));
  elector_->ReportFenced(leadership.term);
  term_ = 0;
  known_.clear();
  known_gateway_api_.clear();
  return absl::FailedPreconditionError(
      absl::StrCat("status write fenced: term ", leadership.term, " has ended"));
}

}  // namespace holdfast
