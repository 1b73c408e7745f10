#pragma once

#include <functional>
#include <string>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "src/source/directory_changes.h"

struct inotify_event;  // <sys/inotify.h>

namespace holdfast {

// Tells when something may have changed under a directory (recursively,
// following symlinks to directories), so that a poller can look now instead
// of at its next interval. Only a hint: events may be merged or, on
// filesystems without inotify, never come, so the poll stays the source of
// truth. Linux inotify; `on_change` is called on the watch's own thread,
// once a burst of events has gone quiet, with the entries the burst named.
class DirectoryWatch {
 public:
  DirectoryWatch() = default;
  DirectoryWatch(const DirectoryWatch&) = delete;
  DirectoryWatch& operator=(const DirectoryWatch&) = delete;
  ~DirectoryWatch() { Stop(); }

  // Fails (and the caller just polls) when inotify is not available or the
  // directory cannot be watched. Call at most once.
  absl::Status Start(const std::string& directory,
                     std::function<void(DirectoryChanges)> on_change);
  void Stop();

 private:
  void Run();
  // Waits `timeout`, or until an event comes if `or_events`; false once
  // stopped (or if waiting fails).
  bool Wait(absl::Duration timeout, bool or_events);
  // Reads every queued event into `burst`; whether there was any.
  bool ReadEvents(DirectoryChanges& burst, bool& new_directory);
  // Adds a watch on `directory` and every directory under it.
  void WatchTree(const std::string& directory);
  void Watch(const std::string& directory);
  // Adds what one event says to `burst`; whether it needs the tree watched
  // again (a directory came or went).
  bool Note(const ::inotify_event& event, DirectoryChanges& burst);

  int inotify_fd_ = -1;
  int stop_fd_ = -1;  // an eventfd that ends Run()
  std::string directory_;
  std::function<void(DirectoryChanges)> on_change_;
  // Each watched directory by its watch descriptor, so that an event's name
  // can be made a path. Only the watch's thread touches it after Start().
  absl::flat_hash_map<int, std::string> watched_;
  std::thread thread_;
};

}  // namespace holdfast
