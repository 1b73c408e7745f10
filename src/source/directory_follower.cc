#include "src/source/directory_follower.h"

#include <algorithm>
#include <utility>

#include "src/common/log.h"

namespace holdfast {

void DirectoryFollower::Start(Options options, std::function<void(const Listing&)> on_listing) {
  auto announce = [this](DirectoryChanges changes) {
    {
      absl::MutexLock lock(&changes_mu_);
      changes_.Merge(std::move(changes));
    }
    poller_.Wake();
  };
  if (absl::Status watching = watch_.Start(options.directory, announce); !watching.ok()) {
    LogInfo("%s; polling %s every %s", watching.message(), options.directory,
            absl::FormatDuration(options.poll_interval));
  } else {
    options.poll_interval = std::max(options.poll_interval, options.watched_poll_interval);
  }
  poller_.StartAdaptive(
      options.poll_interval,
      [this, options, on_listing = std::move(on_listing),
       scanner = ConfirmedScanner(options.directory, options.extensions)]() mutable {
        if (auto listing = scanner.Poll(TakeChanges())) on_listing(*listing);
        return scanner.confirm_soon() ? options.confirm_delay : options.poll_interval;
      });
}

DirectoryChanges DirectoryFollower::TakeChanges() {
  absl::MutexLock lock(&changes_mu_);
  return std::exchange(changes_, DirectoryChanges{});
}

void DirectoryFollower::Stop() {
  watch_.Stop();
  poller_.Stop();
}

}  // namespace holdfast
