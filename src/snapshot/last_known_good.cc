#include "src/snapshot/last_known_good.h"

#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "src/common/log.h"
#include "src/snapshot/snapshot_file.h"

namespace holdfast {

LastKnownGood::LastKnownGood(Options options, SnapshotCache* cache, const Clock& clock,
                             MetricsRegistry* metrics)
    : options_(std::move(options)),
      cache_(cache),
      clock_(clock),
      persist_errors_(metrics->GetCounter("holdfast_snapshot_persist_errors_total",
                                          "Failed writes of the last-known-good snapshot")),
      damaged_(metrics->GetCounter("holdfast_snapshot_file_damaged_total",
                                   "Persisted snapshots found damaged and not served")),
      serving_persisted_(metrics->GetGauge(
          "holdfast_serving_persisted_snapshot",
          "1 while the snapshot served is the persisted one (the store has not answered yet)")) {}

LastKnownGood::~LastKnownGood() { Stop(); }

std::string LastKnownGood::path() const {
  return (std::filesystem::path(options_.state_dir) / "last-good.snapshot").string();
}

void LastKnownGood::Start() {
  if (options_.state_dir.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(options_.state_dir, ec);
  if (ec) {
    LogError("state dir %s: %s; snapshots will not be persisted", options_.state_dir, ec.message());
  }
  absl::StatusOr<SnapshotPtr> persisted = ReadSnapshotFile(path());
  {
    absl::MutexLock lock(&mu_);
    if (persisted.ok()) {
      state_.persisted = *persisted;
      LogInfo("last-known-good: %s holds snapshot %s from %s (%d resources)", path(),
              (*persisted)->version(), absl::FormatTime((*persisted)->created()),
              (*persisted)->size());
    } else {
      state_.restore_error = std::string(persisted.status().message());
      if (absl::IsDataLoss(persisted.status())) {
        damaged_->Increment();
        LogError("last-known-good: %s; it will not be served (moved to %s.damaged)",
                 persisted.status().message(), path());
        std::filesystem::rename(path(), path() + ".damaged", ec);
      }
    }
  }
  // Waits until PublishLive wakes it, or the last write is old enough.
  writer_.StartAdaptive(absl::InfiniteDuration(), [this] { return WritePendingSoon(); });
  restorer_.StartAdaptive(options_.grace, [this] {
    ServePersistedIfNoLive();
    return absl::InfiniteDuration();  // once
  });
}

void LastKnownGood::ServePersistedIfNoLive() {
  absl::MutexLock lock(&mu_);
  state_.grace_over = true;
  if (state_.serving_live || state_.persisted == nullptr) return;
  state_.serving_persisted = true;
  serving_persisted_->Set(1);
  LogWarning("last-known-good: no live config after %s; serving persisted snapshot %s from %s",
             absl::FormatDuration(options_.grace), state_.persisted->version(),
             absl::FormatTime(state_.persisted->created()));
  cache_->Set(cache_->default_group(), state_.persisted);
}

void LastKnownGood::Stop() {
  restorer_.Stop();
  writer_.Stop();
  WritePending();  // the latest live snapshot reaches the disk before Stop returns
}

void LastKnownGood::PublishLive(SnapshotPtr snapshot) {
  {
    absl::MutexLock lock(&mu_);
    if (state_.serving_persisted) {
      LogInfo("last-known-good: live config is back; replacing the persisted snapshot");
    }
    state_.serving_live = true;
    state_.serving_persisted = false;
    serving_persisted_->Set(0);
    cache_->Set(cache_->default_group(), snapshot);
    to_write_ = std::move(snapshot);
  }
  writer_.Wake();
}

absl::Duration LastKnownGood::WritePendingSoon() {
  {
    absl::MutexLock lock(&mu_);
    if (to_write_ == nullptr) return absl::InfiniteDuration();
    const absl::Duration wait = last_write_ + options_.min_write_interval - absl::Now();
    if (wait > absl::ZeroDuration()) return wait;
  }
  WritePending();
  return absl::InfiniteDuration();
}

void LastKnownGood::WritePending() {
  if (options_.state_dir.empty()) return;
  SnapshotPtr snapshot;
  {
    absl::MutexLock lock(&mu_);
    snapshot = std::exchange(to_write_, nullptr);
    if (snapshot == nullptr || snapshot->version() == state_.written_version) return;
    last_write_ = absl::Now();
  }
  absl::Status written = WriteSnapshotFile(*snapshot, path());
  absl::MutexLock lock(&mu_);
  if (written.ok()) {
    state_.written_version = snapshot->version();
    state_.persist_error.clear();
    return;
  }
  persist_errors_->Increment();
  if (state_.persist_error != written.message()) {
    LogError("last-known-good: %s", written.message());
  }
  state_.persist_error = std::string(written.message());
}

LastKnownGood::State LastKnownGood::state() const {
  absl::MutexLock lock(&mu_);
  return state_;
}

}  // namespace holdfast
