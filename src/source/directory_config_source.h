#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <optional>
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
#include "src/source/input_assembler.h"

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
  // A config file as last read.
  struct ReadFile {
    FileFingerprint fingerprint;
    DecodedFile read;
    bool read_ok = false;  // whether `read` has no syntax error
    // While `read` has a syntax error: what the file held when last
    // readable, which stays in service.
    std::optional<DecodedFile> readable_before;
  };

  absl::Status Apply(const DirectoryListing& scan) ABSL_EXCLUSIVE_LOCKS_REQUIRED(reload_mu_);
  // The listing to apply: `scan`, plus what was applied before under
  // directories that cannot be listed now (unknown is not gone).
  DirectoryListing KeepUnreadable(const DirectoryListing& scan) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(reload_mu_);
  // Brings files_ and assembler_ to `listed`: reads the files new or
  // changed, forgets the ones gone. Returns whether any was.
  bool FollowFiles(const std::map<std::string, FileFingerprint>& listed)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(reload_mu_);
  using ReadFiles = std::map<std::string, ReadFile>;
  // Forgets a file gone; returns the next.
  ReadFiles::iterator Forget(ReadFiles::iterator file) ABSL_EXCLUSIVE_LOCKS_REQUIRED(reload_mu_);
  // Keeps `read`, what `path` now holds, in `file`, and hands it to
  // assembler_.
  void Keep(const std::string& path, const FileFingerprint& fingerprint, DecodedFile read,
            ReadFile& file) ABSL_EXCLUSIVE_LOCKS_REQUIRED(reload_mu_);

  const Options options_;

  absl::Mutex reload_mu_;
  // Applied under reload_mu_; its statuses(), SetOverlay() and
  // OnStatuses() (before Start) are safe without it.
  ConfigPipeline pipeline_;
  // Changed one file at a time: a change to one file of 10,000 neither
  // copies the others nor their objects.
  ReadFiles files_ ABSL_GUARDED_BY(reload_mu_);
  InputAssembler assembler_ ABSL_GUARDED_BY(reload_mu_);
  // What the last applied listing could not look at (its statuses).
  std::map<std::string, std::string> unreadable_ ABSL_GUARDED_BY(reload_mu_);
  std::map<std::string, std::string> skipped_ ABSL_GUARDED_BY(reload_mu_);
  bool applied_once_ ABSL_GUARDED_BY(reload_mu_) = false;
  std::atomic<bool> read_once_{false};

  DirectoryFollower follower_;
};

}  // namespace holdfast
