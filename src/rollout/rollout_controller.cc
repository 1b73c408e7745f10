#include "src/rollout/rollout_controller.h"

#include <filesystem>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "src/common/log.h"
#include "src/rollout/canary_report.h"
#include "src/rollout/held_objects.h"
#include "src/snapshot/snapshot_file.h"
#include "src/xds/stream.h"

namespace holdfast {
namespace {

std::string Version(const SnapshotPtr& snapshot) {
  return snapshot == nullptr ? "" : snapshot->version();
}

// Group names come from node metadata or certificates: keep file names to
// safe characters.
std::string FileSafe(absl::string_view name) {
  std::string safe;
  for (unsigned char c : name) {
    if (absl::ascii_isalnum(c) || c == '-' || c == '_' || c == '.') {
      safe.push_back(static_cast<char>(c));
    } else {
      absl::StrAppend(&safe, "%", absl::Hex(c, absl::kZeroPad2));
    }
  }
  return safe;
}

MetricLabels GroupLabels(const std::string& group) {
  if (group.empty()) return {};
  return {{"group", group}};
}

}  // namespace

RolloutController::RolloutController(Options options, SnapshotCache* staged, SnapshotCache* serving,
                                     const ProxyRegistry* proxies, const Clock& clock,
                                     MetricsRegistry* metrics)
    : options_(std::move(options)),
      name_(options_.group.empty() ? "rollout" : absl::StrCat("rollout of group ", options_.group)),
      staged_(staged),
      serving_(serving),
      proxies_(proxies),
      clock_(clock),
      promotions_(metrics->GetCounter("holdfast_rollout_promotions_total",
                                      "Snapshots promoted from the canaries to every proxy",
                                      GroupLabels(options_.group))),
      holds_(metrics->GetCounter("holdfast_rollout_holds_total",
                                 "Rollouts held: a canary NACKed, or did not ACK in time",
                                 GroupLabels(options_.group))),
      baking_(metrics->GetGauge("holdfast_rollout_baking",
                                "1 while a new snapshot is served to the canaries only",
                                GroupLabels(options_.group))),
      held_(metrics->GetGauge("holdfast_rollout_held",
                              "1 while a rollout is held: canaries and the rest on the stable "
                              "snapshot",
                              GroupLabels(options_.group))),
      canaries_(metrics->GetGauge("holdfast_rollout_canaries", "Canary streams connected",
                                  GroupLabels(options_.group))),
      rollout_(options_.policy),
      own_document_(options_.shared == nullptr ? std::make_unique<InMemorySharedDocument>()
                                               : nullptr),
      ledger_(options_.shared != nullptr ? options_.shared : own_document_.get()) {}

RolloutController::~RolloutController() { Stop(); }

std::string RolloutController::StablePath() const {
  if (options_.state_dir.empty()) return "";
  if (options_.group.empty()) return options_.state_dir + "/rollout-stable.snapshot";
  return absl::StrCat(options_.state_dir, "/rollout-stable-", FileSafe(options_.group),
                      ".snapshot");
}

std::string RolloutController::StableKey() const {
  return options_.group.empty() ? serving_->default_group() : options_.group;
}

void RolloutController::Start() {
  if (const std::string path = StablePath();
      options_.restore_stable && !path.empty() && std::filesystem::exists(path)) {
    absl::StatusOr<SnapshotPtr> stable = ReadSnapshotFile(path);
    if (stable.ok()) {
      absl::MutexLock lock(&mu_);
      rollout_.Offer(*stable, clock_.Now());
      LogInfo("%s: restored the stable snapshot %s", name_, (*stable)->version());
    } else {
      LogWarning("%s: %s", name_, stable.status().message());
    }
  }
  if (options_.initial_stable != nullptr) {
    absl::MutexLock lock(&mu_);
    if (rollout_.stable() == nullptr) rollout_.Offer(options_.initial_stable, clock_.Now());
  }
  watch_ = staged_->Watch(staged_->default_group(),
                          [this](const Published& published) { Offer(published.snapshot); });
  Offer(staged_->Current(staged_->default_group()).snapshot);
  poller_.Start(options_.check_interval, [this] { Check(); });
}

void RolloutController::Stop() {
  poller_.Stop();
  watch_.reset();
}

void RolloutController::SetPolicy(RolloutPolicy policy) {
  absl::MutexLock lock(&mu_);
  if (policy == rollout_.policy()) return;
  LogInfo("%s: policy changed (%s)", name_, policy.Origin());
  rollout_.SetPolicy(std::move(policy));
}

void RolloutController::Retire() {
  Stop();
  {
    absl::MutexLock lock(&mu_);
    retired_ = true;
  }
  if (const std::string path = StablePath(); !path.empty()) {
    std::error_code ignored;
    std::filesystem::remove(path, ignored);
  }
}

void RolloutController::Offer(SnapshotPtr snapshot) {
  if (snapshot == nullptr) return;
  absl::MutexLock lock(&mu_);
  rollout_.Offer(std::move(snapshot), clock_.Now());
  ApplyLocked();
}

void RolloutController::Check() {
  const std::vector<ProxyView> canaries = proxies_->Canaries(options_.group);
  canaries_->Set(static_cast<double>(canaries.size()));
  LedgerCall call;
  {
    absl::MutexLock lock(&mu_);
    if (rollout_.stage() == Rollout::Stage::kBaking) {
      last_report_ = ReportCanaries(canaries, rollout_.candidate());
    }
    call = NextLedgerCall(clock_.Now());
  }
  if (!call.record && call.find.empty()) return;
  // The store is asked without the lock: it may take a call timeout.
  absl::StatusOr<std::optional<RolloutDecision>> standing =
      call.record ? absl::StatusOr<std::optional<RolloutDecision>>(
                        ledger_.Record(*call.record, call.overrule))
                  : ledger_.Find(call.find, options_.group);
  absl::MutexLock lock(&mu_);
  Follow(call, standing, clock_.Now());
  ApplyLocked();
}

RolloutDecision RolloutController::Stamped(RolloutDecision decision) const {
  decision.replica = options_.replica_id;
  decision.group = options_.group;
  decision.at = FormatTimestamp(clock_.Now());
  return decision;
}

RolloutController::LedgerCall RolloutController::NextLedgerCall(absl::Time now) {
  // Applied here while the store did not answer: shared first, even if a
  // newer candidate came meanwhile (the others may still be on that one).
  if (unrecorded_) return {.record = unrecorded_->decision, .overrule = unrecorded_->overrule};
  if (rollout_.stage() == Rollout::Stage::kBaking) {
    if (std::optional<RolloutDecision> verdict = rollout_.Judge(last_report_, now)) {
      return {.record = Stamped(*std::move(verdict))};
    }
  }
  if (rollout_.stage() == Rollout::Stage::kIdle || now < next_ledger_read_) return {};
  next_ledger_read_ = now + options_.ledger_interval;
  return {.find = rollout_.candidate()->version()};
}

void RolloutController::Follow(const LedgerCall& call,
                               const absl::StatusOr<std::optional<RolloutDecision>>& standing,
                               absl::Time now) {
  if (standing.ok()) {
    if (!ledger_error_.empty()) LogInfo("%s: %s answers again", name_, ledger_.Describe());
    ledger_error_.clear();
    if (call.record && unrecorded_ && unrecorded_->decision.candidate == call.record->candidate) {
      unrecorded_.reset();
    }
    if (standing->has_value()) rollout_.Apply(**standing, now);
    return;
  }
  if (ledger_error_.empty()) {
    LogWarning("%s: cannot share decisions through %s: %s", name_, ledger_.Describe(),
               standing.status().message());
  }
  ledger_error_ = std::string(standing.status().message());
  // A hold applies here at once, shared or not, and is recorded later; a
  // promotion waits for the ledger.
  if (call.record && call.record->action == RolloutDecision::Action::kHold &&
      rollout_.Apply(*call.record, now)) {
    unrecorded_ = Unrecorded{*call.record, call.overrule};
  }
}

void RolloutController::ApplyLocked() {
  if (retired_) return;  // its cache keys are gone; an operator's late call must not bring them back
  const bool stable_changed = rollout_.stable() != published_stable_;
  if (stable_changed) {
    published_stable_ = rollout_.stable();
    serving_->Set(StableKey(), published_stable_);
    if (const std::string path = StablePath(); !path.empty()) {
      absl::Status written = WriteSnapshotFile(*published_stable_, path);
      persist_error_ = written.ok() ? "" : std::string(written.message());
      if (!written.ok()) LogWarning("%s: %s", name_, written.message());
    }
  }
  if (rollout_.canary_view() != published_canary_) {
    published_canary_ = rollout_.canary_view();
    serving_->Set(CanaryKey(options_.group), published_canary_);
  }
  ReportHeldObjects();
  const Rollout::Stage stage = rollout_.stage();
  baking_->Set(stage == Rollout::Stage::kBaking);
  held_->Set(stage == Rollout::Stage::kHeld);
  const bool new_candidate =
      stage == Rollout::Stage::kBaking && rollout_.candidate() != logged_candidate_;
  if (stage == published_stage_ && !new_candidate) return;
  const Rollout::Stage before = published_stage_;
  published_stage_ = stage;
  switch (stage) {
    case Rollout::Stage::kBaking:
      logged_candidate_ = rollout_.candidate();
      LogInfo("%s: snapshot %s offered to the canaries first, every other proxy stays on %s%s",
              name_, Version(rollout_.candidate()), Version(rollout_.stable()),
              rollout_.reason().empty() ? "" : absl::StrCat(" (", rollout_.reason(), ")"));
      break;
    case Rollout::Stage::kHeld:
      holds_->Increment();
      LogWarning("%s: held, every proxy stays on %s: %s", name_, Version(rollout_.stable()),
                 rollout_.reason());
      break;
    case Rollout::Stage::kIdle:
      if (before != Rollout::Stage::kIdle && stable_changed) {
        promotions_->Increment();
        LogInfo("%s: snapshot %s promoted to every proxy: %s", name_, Version(rollout_.stable()),
                rollout_.reason());
      } else if (before != Rollout::Stage::kIdle) {
        LogInfo("%s: %s", name_, rollout_.reason());
      }
      break;
  }
}

void RolloutController::ReportHeldObjects() {
  const bool held = rollout_.stage() == Rollout::Stage::kHeld;
  const std::string candidate = held ? Version(rollout_.candidate()) : "";
  if (candidate == reported_held_) return;
  reported_held_ = candidate;
  StatusMap statuses;
  if (held) {
    statuses = HeldObjectStatuses(
        *rollout_.stable(), *rollout_.candidate(), rollout_.held_type(),
        options_.group.empty()
            ? rollout_.reason()
            : absl::StrCat("node group ", options_.group, ": ", rollout_.reason()));
  }
  held_objects_.clear();
  for (const auto& [key, status] : statuses) held_objects_.push_back(key.ToString());
  if (held_listener_) held_listener_(std::move(statuses));
}

nlohmann::json RolloutController::Promote() { return Decide(RolloutDecision::Action::kPromote); }

nlohmann::json RolloutController::Abort() { return Decide(RolloutDecision::Action::kHold); }

nlohmann::json RolloutController::Decide(RolloutDecision::Action action) {
  RolloutDecision decision;
  {
    absl::MutexLock lock(&mu_);
    const bool applies = action == RolloutDecision::Action::kPromote
                             ? rollout_.candidate() != nullptr
                             : rollout_.stage() == Rollout::Stage::kBaking;
    if (!applies) return {{"done", false}, {"rollout", ToJsonLocked()}};
    decision = Stamped({.candidate = rollout_.candidate()->version(),
                        .action = action,
                        .reason = action == RolloutDecision::Action::kPromote
                                      ? "promoted by the operator"
                                      : "aborted by the operator"});
  }
  absl::StatusOr<RolloutDecision> recorded = ledger_.Record(decision, /*overrule=*/true);
  absl::MutexLock lock(&mu_);
  // The operator's decision applies here even when it cannot be shared
  // now; it is recorded when the store answers again.
  const bool done = rollout_.Apply(decision, clock_.Now());
  if (!recorded.ok()) {
    ledger_error_ = std::string(recorded.status().message());
    if (done) unrecorded_ = Unrecorded{decision, /*overrule=*/true};
  }
  ApplyLocked();
  nlohmann::json answer = {{"done", done}, {"shared", recorded.ok()}, {"rollout", ToJsonLocked()}};
  if (!recorded.ok()) answer["error"] = recorded.status().message();
  return answer;
}

nlohmann::json RolloutController::ToJson() const {
  absl::MutexLock lock(&mu_);
  return ToJsonLocked();
}

nlohmann::json RolloutController::ToJsonLocked() const {
  const RolloutPolicy& policy = rollout_.policy();
  return {{"group", options_.group},
          {"stage", RolloutStageName(rollout_.stage())},
          {"stable", Version(rollout_.stable())},
          {"candidate", Version(rollout_.candidate())},
          {"since", FormatTimestamp(rollout_.since())},
          {"reason", rollout_.reason()},
          {"held_objects", held_objects_},
          {"canaries",
           {{"connected", last_report_.canaries},
            {"acked", last_report_.acked},
            {"nacked", last_report_.nacked},
            {"nacking_node", last_report_.nacking_node},
            {"error", last_report_.error}}},
          {"policy",
           {{"origin", policy.Origin()},
            {"canary_percent", policy.canary_percent},
            {"canary_metadata",
             policy.metadata_key.empty() ? "" : policy.metadata_key + "=" + policy.metadata_value},
            {"bake", absl::FormatDuration(policy.bake)},
            {"ack_timeout", absl::FormatDuration(policy.ack_timeout)}}},
          {"persist_error", persist_error_},
          {"decisions",
           {{"shared_through", ledger_.Describe()},
            {"error", ledger_error_},
            {"unshared", unrecorded_ ? unrecorded_->decision.candidate : ""}}}};
}

}  // namespace holdfast
