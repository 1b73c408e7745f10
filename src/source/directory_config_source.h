#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "src/common/clock.h"
#include "src/common/metrics.h"
#include "src/snapshot/snapshot.h"
#include "src/source/config_files.h"
#include "src/source/config_pipeline.h"
#include "src/source/config_source.h"
#include "src/source/directory_follower.h"
#include "src/source/directory_scanner.h"

namespace holdfast {

// The embedded default config source: gateway objects in YAML files under a
// directory tree, translated into snapshots.
//
// Changes are debounced: a poll applies the directory only once two scans in
// a row agree, so an editor's save or a multi-file copy lands as one change.
// Each file is decoded on its own; a file that stops parsing keeps what it
// held before. Every object's status is kept for the admin endpoint.
class DirectoryConfigSource : public ConfigSource {
 public:
  struct Options {
    std::string directory;
    absl::Duration poll_interval = absl::Milliseconds(200);
    // How soon a changed listing is listed again to confirm it (see
    // DirectoryFollower).
    absl::Duration confirm_delay = absl::Milliseconds(20);
    TranslatorOptions translator;
  };

  DirectoryConfigSource(Options options, const Clock& clock, MetricsRegistry* metrics,
                        std::function<void(SnapshotPtr)> publish);
  ~DirectoryConfigSource() override;

  // Reads the directory now (no debounce) and publishes if the result changed.
  absl::Status Reload();
  void Start() override;
  void Stop() override;
  StatusMap statuses() const override { return pipeline_.statuses(); }
  // A directory is always reachable; `synced_once` says whether it was read.
  SourceHealth health() const override;
  void OnStatuses(std::function<void(const StatusMap&)> listener) override {
    pipeline_.OnStatuses(std::move(listener));
  }
  void SetStatusOverlay(StatusMap overlay) override;

 private:
  absl::Status Apply(const DirectoryListing& scan) ABSL_EXCLUSIVE_LOCKS_REQUIRED(reload_mu_);
  // The listing to apply: `scan`, plus what was applied before under
  // directories that cannot be listed now (unknown is not gone).
  DirectoryListing KeepUnreadable(const DirectoryListing& scan) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(reload_mu_);

  const Options options_;

  absl::Mutex reload_mu_;
  // Applied under reload_mu_; its statuses(), SetOverlay() and
  // OnStatuses() (before Start) are safe without it.
  ConfigPipeline pipeline_;
  DirectoryListing applied_ ABSL_GUARDED_BY(reload_mu_);
  std::map<std::string, DecodedFile> files_ ABSL_GUARDED_BY(reload_mu_);
  std::map<std::string, DecodedFile> last_readable_ ABSL_GUARDED_BY(reload_mu_);
  bool applied_once_ ABSL_GUARDED_BY(reload_mu_) = false;
  std::atomic<bool> read_once_{false};

  DirectoryFollower follower_;
};

}  // namespace holdfast
