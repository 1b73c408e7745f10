#include "src/source/directory_watch.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "src/common/log.h"

namespace holdfast {
namespace {

// Whatever can change a listing or a file's fingerprint. IN_MODIFY is left
// out: a writer closes the file when done (IN_CLOSE_WRITE), and each write
// of a large file would otherwise be an event.
constexpr uint32_t kEvents = IN_CREATE | IN_DELETE | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO |
                             IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF;

}  // namespace

absl::Status DirectoryWatch::Start(const std::string& directory,
                                   std::function<void(DirectoryChanges)> on_change) {
  inotify_fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (inotify_fd_ < 0) return absl::UnavailableError(absl::StrCat("inotify: ", strerror(errno)));
  stop_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (stop_fd_ < 0) {
    Stop();
    return absl::UnavailableError(absl::StrCat("eventfd: ", strerror(errno)));
  }
  if (inotify_add_watch(inotify_fd_, directory.c_str(), kEvents) < 0) {
    absl::Status status =
        absl::UnavailableError(absl::StrCat("cannot watch ", directory, ": ", strerror(errno)));
    Stop();
    return status;
  }
  directory_ = directory;
  on_change_ = std::move(on_change);
  WatchTree(directory_);
  thread_ = std::thread([this] { Run(); });
  return absl::OkStatus();
}

void DirectoryWatch::Stop() {
  if (thread_.joinable()) {
    uint64_t one = 1;
    (void)!write(stop_fd_, &one, sizeof(one));
    thread_.join();
  }
  if (inotify_fd_ >= 0) close(inotify_fd_);
  if (stop_fd_ >= 0) close(stop_fd_);
  inotify_fd_ = stop_fd_ = -1;
}

void DirectoryWatch::Watch(const std::string& directory) {
  const int wd = inotify_add_watch(inotify_fd_, directory.c_str(), kEvents);
  if (wd >= 0) watched_[wd] = directory;
}

void DirectoryWatch::WatchTree(const std::string& directory) {
  namespace fs = std::filesystem;
  std::error_code ec;
  Watch(directory);
  fs::recursive_directory_iterator it(directory, fs::directory_options::follow_directory_symlink,
                                      ec);
  // Adding a watch twice only updates its mask, so re-walking is harmless.
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_directory(ec)) Watch(it->path().string());
  }
}

bool DirectoryWatch::Note(const inotify_event& event, DirectoryChanges& burst) {
  burst.any = true;
  if (event.mask & IN_IGNORED) watched_.erase(event.wd);
  // A directory made or moved in needs watches of its own; one renamed or
  // deleted, or the queue overflowing, is covered by the re-walk too.
  if (event.mask & (IN_ISDIR | IN_Q_OVERFLOW | IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) {
    burst.paths.reset();
    return true;
  }
  auto dir = watched_.find(event.wd);
  // No name: the watched directory itself changed (its permissions, say).
  if (event.len == 0 || dir == watched_.end()) {
    burst.paths.reset();
  } else if (burst.paths.has_value()) {
    const absl::string_view name = event.name;
    burst.paths->insert(dir->second.ends_with('/') ? absl::StrCat(dir->second, name)
                                                   : absl::StrCat(dir->second, "/", name));
  }
  return false;
}

void DirectoryWatch::Run() {
  alignas(inotify_event) char buffer[16 * 1024];
  pollfd fds[2] = {{inotify_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
  // Events come in bursts (a copy, a batch of renames); a listing taken in
  // the middle of one can miss renamed entries, and listings that keep
  // disagreeing are never handed over. So the poller is woken once a burst
  // has been quiet for kQuiet, or kMaxDelay after it began if it goes on.
  constexpr int kQuietMs = 20;
  constexpr absl::Duration kMaxDelay = absl::Milliseconds(200);
  bool pending = false;
  bool new_directory = false;
  DirectoryChanges burst;
  absl::Time burst_began;
  while (true) {
    int timeout = -1;
    if (pending) {
      absl::Duration left = burst_began + kMaxDelay - absl::Now();
      timeout = std::clamp(static_cast<int>(absl::ToInt64Milliseconds(left)), 0, kQuietMs);
    }
    int ready = poll(fds, 2, timeout);
    if (ready < 0) {
      if (errno == EINTR) continue;
      LogWarning("directory watch on %s stopped (%s); polling only", directory_, strerror(errno));
      return;
    }
    if (fds[1].revents != 0) return;
    bool got = false;
    ssize_t n;
    while ((n = read(inotify_fd_, buffer, sizeof(buffer))) > 0) {
      for (char* p = buffer; p < buffer + n;) {
        auto* event = reinterpret_cast<inotify_event*>(p);
        got = true;
        if (Note(*event, burst)) new_directory = true;
        p += sizeof(inotify_event) + event->len;
      }
    }
    if (got && !pending) {
      pending = true;
      burst_began = absl::Now();
    }
    if (!pending) continue;
    const bool quiet = !got;
    if (!quiet && absl::Now() - burst_began < kMaxDelay) continue;
    if (new_directory) WatchTree(directory_);
    new_directory = false;
    pending = false;
    on_change_(std::exchange(burst, DirectoryChanges{}));
  }
}

}  // namespace holdfast
