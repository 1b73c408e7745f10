#include "src/source/config_pipeline.h"

#include <atomic>
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

struct StateCounts {
  int rejected = 0;
  int warned = 0;
};

// Logs each object whose status is not Accepted and changed since `before`,
// and counts the states. One walk over `after`: most are Accepted, and
// only the others are looked up in `before`.
StateCounts LogChanged(const StatusMap& before, const StatusMap& after) {
  StateCounts counts;
  for (const auto& [key, status] : after) {
    if (status.state == StatusState::kAccepted) continue;
    counts.rejected += status.state == StatusState::kRejected;
    counts.warned += status.state == StatusState::kWarning;
    auto old = before.find(key);
    const bool changed = old == before.end() || old->second.state != status.state ||
                         old->second.reasons.size() != status.reasons.size();
    if (!changed) continue;
    for (const FieldError& reason : status.reasons) {
      LogWarning("%s %s: %s", key.ToString(), StatusStateName(status.state), reason.ToString());
    }
  }
  return counts;
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
    Recycle(Settle(std::move(statuses)));
    return snapshot.status();
  }

  last_built_ = *snapshot;
  // Kept, not copied: the admin pages copy it when they ask.
  std::shared_ptr<StatusMap> previous = Settle(std::move(statuses));
  const StatusMap& settled = *settled_;
  const StateCounts counts = LogChanged(*previous, settled);
  rejected_->Set(counts.rejected);
  warned_->Set(counts.warned);
  if ((*snapshot)->version() != published_version_) {
    published_version_ = (*snapshot)->version();
    LogInfo("config %s: publishing snapshot %s (%d resources)", name_, published_version_,
            (*snapshot)->size());
    publish_(*snapshot);
  }
  if (listener_) listener_(settled);
  Recycle(std::move(previous));
  return absl::OkStatus();
}

std::shared_ptr<StatusMap> ConfigPipeline::Settle(StatusMap statuses) {
  auto settled = std::make_shared<StatusMap>(std::move(statuses));
  absl::MutexLock lock(&mu_);
  statuses_ = settled;
  return std::exchange(settled_, std::move(settled));
}

void ConfigPipeline::Recycle(std::shared_ptr<StatusMap> statuses) {
  // Anyone else holding the map (an admin page, a listener) copies or lets
  // go of it soon; until then it is freed by whoever lets go last. The
  // count's load is relaxed: the fence orders the translator's writes
  // after the last holder's reads, which its release of the map published.
  if (statuses.use_count() != 1) return;
  std::atomic_thread_fence(std::memory_order_acquire);
  translator_.Recycle(std::move(*statuses));
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
