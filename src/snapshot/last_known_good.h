#pragma once

#include <string>

#include "absl/synchronization/mutex.h"
#include "src/common/clock.h"
#include "src/common/metrics.h"
#include "src/common/poller.h"
#include "src/snapshot/snapshot_cache.h"

namespace holdfast {

// Serves the config source's snapshots and keeps the last one on disk, so
// that a replica starting while its store is unreachable serves what it
// served before instead of nothing.
//
// At Start() the persisted snapshot (if any) is read and checked; a damaged
// file is reported, moved aside and never served. If the source has
// published nothing live by the end of the grace period, the persisted
// snapshot is served, marked stale, until the first live one replaces it.
// Live snapshots are served at once and written to disk afterwards, on a
// background loop of this class, latest first: a slow disk never delays
// serving; Stop() writes what is still pending.
//
// Writes are at least `min_write_interval` apart: under endpoint churn (a
// snapshot every 100 ms) writing each one was a twentieth of the server's
// CPU. The file so lags the live snapshot by at most that interval (plus
// the write) while changes keep coming, and a replica killed meanwhile
// restores a snapshot that much older; it replaces it with live config as
// soon as its store answers.
class LastKnownGood {
 public:
  struct Options {
    std::string state_dir;  // empty: nothing is persisted or restored
    absl::Duration grace = absl::Seconds(5);
    absl::Duration min_write_interval = absl::Seconds(1);
  };
  struct State {
    bool serving_live = false;
    bool serving_persisted = false;
    bool grace_over = false;    // the grace period at start has ended
    SnapshotPtr persisted;      // what was read from disk at start, if valid
    std::string restore_error;  // why nothing was restored (no file, damaged)
    std::string persist_error;  // the last write failure, cleared on success
    std::string written_version;  // of the last snapshot written to disk
  };

  LastKnownGood(Options options, SnapshotCache* cache, const Clock& clock,
                MetricsRegistry* metrics);
  ~LastKnownGood();

  void Start();
  void Stop();
  // The publish callback for config sources.
  void PublishLive(SnapshotPtr snapshot);
  State state() const;
  std::string path() const;

 private:
  // Writes the latest live snapshot not yet on disk, if any and if the last
  // write is min_write_interval old; how long until it may write.
  absl::Duration WritePendingSoon() ABSL_LOCKS_EXCLUDED(mu_);
  // Writes the latest live snapshot not yet on disk, if any.
  void WritePending() ABSL_LOCKS_EXCLUDED(mu_);
  // At the end of the grace period: the persisted snapshot, if nothing live.
  void ServePersistedIfNoLive() ABSL_LOCKS_EXCLUDED(mu_);

  const Options options_;
  SnapshotCache* cache_;
  const Clock& clock_;
  Counter* persist_errors_;
  Counter* damaged_;
  Gauge* serving_persisted_;

  mutable absl::Mutex mu_;
  State state_ ABSL_GUARDED_BY(mu_);
  SnapshotPtr to_write_ ABSL_GUARDED_BY(mu_);
  absl::Time last_write_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();

  Poller writer_;
  Poller restorer_;
};

}  // namespace holdfast
