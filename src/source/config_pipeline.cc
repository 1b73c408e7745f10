#include "src/source/config_pipeline.h"

#include <utility>

#include "src/common/log.h"
#include "src/source/config_files.h"

namespace holdfast {
namespace {

void LayOver(const StatusMap& overlay, StatusMap& statuses) {
  for (const auto& [key, over] : overlay) {
    auto it = statuses.find(key);
    if (it == statuses.end()) continue;  // gone since
    ObjectStatus& status = it->second;
    for (const FieldError& reason : over.reasons) status.reasons.push_back(reason);
    status.state = std::max(status.state, over.state);
    status.serving_last_good = status.serving_last_good || over.serving_last_good;
  }
}

// Logs each object whose status is not Accepted and changed since `before`:
// one walk over both, which are in key order.
void LogChanged(const StatusMap& before, const StatusMap& after) {
  auto old = before.begin();
  for (const auto& [key, status] : after) {
    while (old != before.end() && old->first < key) ++old;
    const bool known = old != before.end() && old->first == key;
    const bool changed = !known || old->second.state != status.state ||
                         old->second.reasons.size() != status.reasons.size();
    if (!changed || status.state == StatusState::kAccepted) continue;
    for (const FieldError& reason : status.reasons) {
      LogWarning("%s %s: %s", key.ToString(), StatusStateName(status.state), reason.ToString());
    }
  }
}

}  // namespace

ConfigPipeline::ConfigPipeline(std::string name, TranslatorOptions options, const Clock& clock,
                               MetricsRegistry* metrics, std::function<void(SnapshotPtr)> publish)
    : name_(std::move(name)),
      clock_(clock),
      metrics_(metrics),
      publish_(std::move(publish)),
      reloads_(metrics->GetCounter("holdfast_source_reloads_total",
                                   "Times the config source was re-read after a change")),
      rejected_(metrics->GetGauge("holdfast_objects", "Config objects by status",
                                  {{"status", "Rejected"}})),
      warned_(metrics->GetGauge("holdfast_objects", "Config objects by status",
                                {{"status", "Warning"}})),
      build_failures_(metrics->GetCounter(
          "holdfast_snapshot_build_failures_total",
          "Translations whose resources did not form a consistent snapshot (not published)")),
      translator_(options) {}

absl::Status ConfigPipeline::Apply(const TranslationInput& input, const StatusMap& extra_statuses) {
  reloads_->Increment();
  TranslationOutput output = translator_.Translate(input);
  StatusMap statuses = MergeStatuses(std::move(output.statuses), extra_statuses);
  {
    absl::MutexLock lock(&mu_);
    LayOver(overlay_, statuses);
    overlay_pending_ = false;
  }

  absl::StatusOr<SnapshotPtr> snapshot =
      Snapshot::Build(std::move(output.resources), clock_.Now(), std::move(output.rollouts),
                      last_built_.get());
  if (!snapshot.ok()) {
    // The translator only emits consistent sets; if it did not, keep serving
    // the last snapshot and say so where operators look, not only in a log.
    LogError("config %s: %s", name_, snapshot.status().message());
    build_failures_->Increment();
    const ObjectKey key{kSnapshotKind, "", name_};
    ObjectStatus& status = statuses[key];
    status.key = key;
    status.Reject("", absl::StrCat("cannot publish: ", snapshot.status().message(),
                                   "; serving the last published snapshot"));
    status.serving_last_good = true;
    absl::MutexLock lock(&mu_);
    statuses_ = std::make_shared<const StatusMap>(std::move(statuses));
    return snapshot.status();
  }

  last_built_ = *snapshot;
  int rejected = 0, warned = 0;
  for (const auto& [key, status] : statuses) {  // before it is moved below
    rejected += status.state == StatusState::kRejected;
    warned += status.state == StatusState::kWarning;
  }
  // Kept, not copied: the admin pages copy it when they ask.
  auto settled = std::make_shared<const StatusMap>(std::move(statuses));
  std::shared_ptr<const StatusMap> previous;  // freed on return, once published
  {
    absl::MutexLock lock(&mu_);
    previous = std::exchange(statuses_, settled);
  }
  LogChanged(*previous, *settled);
  rejected_->Set(rejected);
  warned_->Set(warned);
  if ((*snapshot)->version() != published_version_) {
    published_version_ = (*snapshot)->version();
    LogInfo("config %s: publishing snapshot %s (%d resources)", name_, published_version_,
            (*snapshot)->size());
    publish_(*snapshot);
  }
  if (listener_) listener_(*settled);
  return absl::OkStatus();
}

void ConfigPipeline::SetOverlay(StatusMap overlay) {
  absl::MutexLock lock(&mu_);
  overlay_ = std::move(overlay);
  overlay_pending_ = true;
}

bool ConfigPipeline::overlay_pending() const {
  absl::MutexLock lock(&mu_);
  return overlay_pending_;
}

StatusMap ConfigPipeline::statuses() const { return *shared_statuses(); }

std::shared_ptr<const StatusMap> ConfigPipeline::shared_statuses() const {
  absl::MutexLock lock(&mu_);
  return statuses_;
}

}  // namespace holdfast
