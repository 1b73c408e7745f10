#pragma once

#include <functional>
#include <string>
#include <thread>

#include "absl/status/status.h"

namespace holdfast {

// Tells when something may have changed under a directory (recursively,
// following symlinks to directories), so that a poller can look now instead
// of at its next interval. Only a hint: events may be merged or, on
// filesystems without inotify, never come, so the poll stays the source of
// truth. Linux inotify; `on_change` is called on the watch's own thread.
class DirectoryWatch {
 public:
  DirectoryWatch() = default;
  DirectoryWatch(const DirectoryWatch&) = delete;
  DirectoryWatch& operator=(const DirectoryWatch&) = delete;
  ~DirectoryWatch() { Stop(); }

  // Fails (and the caller just polls) when inotify is not available or the
  // directory cannot be watched. Call at most once.
  absl::Status Start(const std::string& directory, std::function<void()> on_change);
  void Stop();

 private:
  void Run();
  // Adds a watch on `directory` and every directory under it.
  void WatchTree(const std::string& directory);

  int inotify_fd_ = -1;
  int stop_fd_ = -1;  // an eventfd that ends Run()
  std::string directory_;
  std::function<void()> on_change_;
  std::thread thread_;
};

}  // namespace holdfast
