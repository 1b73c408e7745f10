#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "src/common/poller.h"
#include "src/source/directory_changes.h"
#include "src/source/directory_scanner.h"
#include "src/source/directory_watch.h"

namespace holdfast {

// Follows a directory of config files for a source: lists it on a poller
// thread, hands each confirmed listing (ConfirmedScanner) to `on_listing`,
// lists a changed directory again `confirm_delay` later rather than a
// `poll_interval` later, and is woken by an inotify watch when files change,
// falling back to the poll where inotify is unavailable.
class DirectoryFollower {
 public:
  struct Options {
    std::string directory;
    std::vector<std::string> extensions;  // ".yaml", ...
    absl::Duration poll_interval;
    absl::Duration confirm_delay;
    // The poll interval while the inotify watch works: the watch says when
    // to look, so the poll is only a safety net, and listing a large tree
    // every poll_interval costs a core's worth of stat() calls for nothing
    // (50,000 files: 62% of a core at 200 ms).
    absl::Duration watched_poll_interval = absl::Seconds(2);
  };
  using Listing = DirectoryListing;

  DirectoryFollower() = default;
  DirectoryFollower(const DirectoryFollower&) = delete;
  DirectoryFollower& operator=(const DirectoryFollower&) = delete;
  ~DirectoryFollower() { Stop(); }

  // Calls `on_listing` on the poller's thread. Call at most once.
  void Start(Options options, std::function<void(const Listing&)> on_listing);
  // Waits for a running `on_listing` to return. Idempotent.
  void Stop();
  // Lists the directory now rather than at the next poll.
  void Wake() { poller_.Wake(); }

 private:
  DirectoryChanges TakeChanges() ABSL_LOCKS_EXCLUDED(changes_mu_);

  Poller poller_;
  DirectoryWatch watch_;  // wakes poller_
  // What the watch saw since the last listing (ConfirmedScanner::Poll).
  absl::Mutex changes_mu_;
  DirectoryChanges changes_ ABSL_GUARDED_BY(changes_mu_);
};

}  // namespace holdfast
