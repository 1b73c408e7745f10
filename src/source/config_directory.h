#pragma once

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
#include "src/source/directory_scanner.h"
#include "src/source/poller.h"

namespace holdfast {

// The embedded default config source: gateway objects in YAML files under a
// directory tree, translated into snapshots.
//
// Changes are debounced: a poll applies the directory only once two scans in
// a row agree, so an editor's save or a multi-file copy lands as one change.
// Each file is decoded on its own; a file that stops parsing keeps what it
// held before. Every object's status is kept for the admin endpoint.
class ConfigDirectorySource {
 public:
  struct Options {
    std::string directory;
    absl::Duration poll_interval = absl::Milliseconds(200);
    TranslatorOptions translator;
  };

  ConfigDirectorySource(Options options, const Clock& clock, MetricsRegistry* metrics,
                        std::function<void(SnapshotPtr)> publish);
  ~ConfigDirectorySource();

  // Reads the directory now (no debounce) and publishes if the result changed.
  absl::Status Reload();
  void Start();
  void Stop();

  StatusMap statuses() const;

 private:
  absl::Status Apply(const std::map<std::string, FileFingerprint>& scan);

  const Options options_;
  const Clock& clock_;
  MetricsRegistry* metrics_;
  std::function<void(SnapshotPtr)> publish_;
  Counter* reloads_;

  absl::Mutex reload_mu_;
  Translator translator_ ABSL_GUARDED_BY(reload_mu_);
  std::map<std::string, FileFingerprint> applied_ ABSL_GUARDED_BY(reload_mu_);
  std::map<std::string, DecodedFile> files_ ABSL_GUARDED_BY(reload_mu_);
  std::map<std::string, DecodedFile> last_readable_ ABSL_GUARDED_BY(reload_mu_);
  std::string published_version_ ABSL_GUARDED_BY(reload_mu_);
  bool applied_once_ ABSL_GUARDED_BY(reload_mu_) = false;

  mutable absl::Mutex mu_;
  StatusMap statuses_ ABSL_GUARDED_BY(mu_);

  Poller poller_;
};

}  // namespace holdfast
