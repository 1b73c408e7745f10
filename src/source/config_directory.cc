#include "src/source/config_directory.h"

#include <optional>

#include "src/common/log.h"

namespace holdfast {
namespace {
const std::vector<std::string> kExtensions = {".yaml", ".yml"};
}  // namespace

ConfigDirectorySource::ConfigDirectorySource(Options options, const Clock& clock,
                                             MetricsRegistry* metrics,
                                             std::function<void(SnapshotPtr)> publish)
    : options_(std::move(options)),
      clock_(clock),
      metrics_(metrics),
      publish_(std::move(publish)),
      reloads_(metrics->GetCounter("holdfast_source_reloads_total",
                                   "Times the config source was re-read after a change")),
      translator_(options_.translator) {}

ConfigDirectorySource::~ConfigDirectorySource() { Stop(); }

absl::Status ConfigDirectorySource::Reload() {
  absl::StatusOr<std::map<std::string, FileFingerprint>> scan =
      ScanDirectory(options_.directory, kExtensions);
  if (!scan.ok()) return scan.status();
  absl::MutexLock lock(&reload_mu_);
  return Apply(*scan);
}

absl::Status ConfigDirectorySource::Apply(const std::map<std::string, FileFingerprint>& scan) {
  if (applied_once_ && scan == applied_) return absl::OkStatus();
  std::map<std::string, DecodedFile> files;
  for (const auto& [path, fingerprint] : scan) {
    auto previous = applied_.find(path);
    if (previous != applied_.end() && previous->second == fingerprint && files_.contains(path)) {
      files.emplace(path, files_.at(path));
      continue;
    }
    absl::StatusOr<std::string> contents = ReadWholeFile(path);
    DecodedFile decoded;
    if (!contents.ok()) {
      decoded.syntax_error = FieldError{"", std::string(contents.status().message()), {path, 0}};
    } else {
      decoded = DecodeObjects(*contents, path);
    }
    if (!decoded.syntax_error) last_readable_[path] = decoded;
    files.emplace(path, std::move(decoded));
  }
  for (auto it = last_readable_.begin(); it != last_readable_.end();) {
    it = scan.contains(it->first) ? std::next(it) : last_readable_.erase(it);
  }
  files_ = std::move(files);
  applied_ = scan;
  applied_once_ = true;
  reloads_->Increment();

  StatusMap file_statuses;
  TranslationInput input = AssembleInput(files_, last_readable_, &file_statuses);
  TranslationOutput output = translator_.Translate(input);
  StatusMap statuses = MergeStatuses(std::move(output.statuses), file_statuses);

  absl::StatusOr<SnapshotPtr> snapshot = Snapshot::Build(std::move(output.resources), clock_.Now());
  if (!snapshot.ok()) {
    // The translator only emits consistent sets; keep serving if it did not.
    LogError("config %s: %s", options_.directory, snapshot.status().message());
    return snapshot.status();
  }

  int rejected = 0, warned = 0;
  for (const auto& [key, status] : statuses) {
    rejected += status.state == StatusState::kRejected;
    warned += status.state == StatusState::kWarning;
  }
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [key, status] : statuses) {
      auto old = statuses_.find(key);
      bool changed = old == statuses_.end() || old->second.state != status.state ||
                     old->second.reasons.size() != status.reasons.size();
      if (changed && status.state != StatusState::kAccepted) {
        for (const FieldError& reason : status.reasons) {
          LogWarning("%s %s: %s", key.ToString(), StatusStateName(status.state), reason.ToString());
        }
      }
    }
    statuses_ = std::move(statuses);
  }
  metrics_->GetGauge("holdfast_objects", "Config objects by status", {{"status", "Rejected"}})->Set(rejected);
  metrics_->GetGauge("holdfast_objects", "Config objects by status", {{"status", "Warning"}})->Set(warned);
  if ((*snapshot)->version() != published_version_) {
    published_version_ = (*snapshot)->version();
    LogInfo("config %s: publishing snapshot %s (%d resources)", options_.directory,
            published_version_, (*snapshot)->size());
    publish_(*snapshot);
  }
  return absl::OkStatus();
}

void ConfigDirectorySource::Start() {
  poller_.Start(options_.poll_interval,
                [this, scanner = ConfirmedScanner(options_.directory, kExtensions)]() mutable {
                  if (auto scan = scanner.Poll()) {
                    absl::MutexLock lock(&reload_mu_);
                    (void)Apply(*scan);
                  }
                });
}

void ConfigDirectorySource::Stop() { poller_.Stop(); }

StatusMap ConfigDirectorySource::statuses() const {
  absl::MutexLock lock(&mu_);
  return statuses_;
}

}  // namespace holdfast
