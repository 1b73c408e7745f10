#include "src/source/config_pipeline.h"

#include <memory>
#include <optional>
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

struct ConfigPipeline::SpareStatuses {
  absl::Mutex mu;
  std::optional<StatusMap> map ABSL_GUARDED_BY(mu);
};

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
      translator_(options),
      spare_(std::make_shared<SpareStatuses>()) {}

absl::Status ConfigPipeline::Apply(const TranslationInput& input, const StatusMap& extra_statuses) {
  reloads_->Increment();
  std::optional<StatusMap> spare;
  {
    absl::MutexLock lock(&spare_->mu);
    spare = std::exchange(spare_->map, std::nullopt);
  }
  if (spare.has_value()) translator_.Recycle(*std::move(spare));
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
    Settle(std::move(statuses));
    return snapshot.status();
  }

  last_built_ = *snapshot;
  // Kept, not copied: the admin pages copy it when they ask.
  auto [settled, previous] = Settle(std::move(statuses));
  const StateCounts counts = LogChanged(*previous, *settled);
  rejected_->Set(counts.rejected);
  warned_->Set(counts.warned);
  if ((*snapshot)->version() != published_version_) {
    published_version_ = (*snapshot)->version();
    LogInfo("config %s: publishing snapshot %s (%d resources)", name_, published_version_,
            (*snapshot)->size());
    publish_(*snapshot);
  }
  if (listener_) listener_(*settled);
  return absl::OkStatus();  // `previous` goes to spare_ unless someone holds it
}

std::pair<std::shared_ptr<const StatusMap>, std::shared_ptr<const StatusMap>>
ConfigPipeline::Settle(StatusMap statuses) {
  // The last holder's release orders its reads before the deleter, and the
  // mutex orders the deleter before the translator's reuse.
  auto give_back = [spare = spare_](StatusMap* map) {
    std::unique_ptr<StatusMap> released(map);
    std::optional<StatusMap> dropped;  // one not taken: freed outside the lock
    absl::MutexLock lock(&spare->mu);
    dropped = std::exchange(spare->map, std::move(*released));
  };
  std::shared_ptr<const StatusMap> settled(new StatusMap(std::move(statuses)), give_back);
  absl::MutexLock lock(&mu_);
  return {settled, std::exchange(statuses_, settled)};
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
