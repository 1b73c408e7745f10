#include "src/source/directory_watch.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

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

bool DirectoryWatch::Wait(absl::Duration timeout, bool or_events) {
  pollfd fds[2] = {{stop_fd_, POLLIN, 0}, {inotify_fd_, POLLIN, 0}};
  const int ms = timeout == absl::InfiniteDuration()
                     ? -1
                     : static_cast<int>(absl::ToInt64Milliseconds(absl::Ceil(
                           std::max(timeout, absl::ZeroDuration()), absl::Milliseconds(1))));
  while (poll(fds, or_events ? 2 : 1, ms) < 0) {
    if (errno != EINTR) {
      LogWarning("directory watch on %s stopped (%s); polling only", directory_, strerror(errno));
      return false;
    }
  }
  return fds[0].revents == 0;
}

bool DirectoryWatch::ReadEvents(DirectoryChanges& burst, bool& new_directory) {
  alignas(inotify_event) char buffer[16 * 1024];
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
  return got;
}

void DirectoryWatch::Run() {
  // Events come in bursts (a copy, a batch of renames); a listing taken in
  // the middle of one can miss renamed entries, and listings that keep
  // disagreeing are never handed over. So the poller is woken once a burst
  // has been quiet for kQuiet, or kMaxDelay after it began if it goes on.
  // Within a burst the thread looks for more events every kCheck instead of
  // waking for each: renaming 100 files is several hundred events, and a
  // wakeup for each was a twentieth of the server's CPU under churn. The
  // end of a burst is so seen up to kCheck late.
  constexpr absl::Duration kQuiet = absl::Milliseconds(20);
  constexpr absl::Duration kCheck = absl::Milliseconds(4);
  constexpr absl::Duration kMaxDelay = absl::Milliseconds(200);
  while (Wait(absl::InfiniteDuration(), /*or_events=*/true)) {
    DirectoryChanges burst;
    bool new_directory = false;
    if (!ReadEvents(burst, new_directory)) continue;
    const absl::Time began = absl::Now();
    absl::Time last_seen = began;
    for (absl::Time now = began; now - last_seen < kQuiet && now - began < kMaxDelay;
         now = absl::Now()) {
      const absl::Duration wait =
          std::min({kCheck, last_seen + kQuiet - now, began + kMaxDelay - now});
      if (!Wait(wait, /*or_events=*/false)) return;
      if (ReadEvents(burst, new_directory)) last_seen = absl::Now();
    }
    if (new_directory) WatchTree(directory_);
    on_change_(std::move(burst));
  }
}

}  // namespace holdfast
