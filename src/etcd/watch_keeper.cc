#include "src/etcd/watch_keeper.h"

#include <algorithm>

namespace holdfast {

WatchKeeper::WatchKeeper(const WatchOptions& options, const absl::Notification* stop,
                         grpc::ClientContext* context, Stream* stream, const Clock& clock)
    : options_(options), stop_(stop), context_(context), stream_(stream), clock_(clock) {}

void WatchKeeper::Start() {
  const absl::Duration now = clock_.Monotonic();
  {
    absl::MutexLock lock(&mu_);
    last_heard_ = now;
  }
  next_progress_ = now + options_.progress_interval;
  poller_.StartAdaptive(std::min(kStopCheck, options_.progress_interval),
                        [this] { return Check(); });
}

void WatchKeeper::Heard() {
  absl::MutexLock lock(&mu_);
  last_heard_ = clock_.Monotonic();
}

bool WatchKeeper::stalled() const {
  absl::MutexLock lock(&mu_);
  return stalled_;
}

absl::Duration WatchKeeper::Check() {
  if (cancelled_) return absl::InfiniteDuration();  // until Stop()
  const absl::Duration now = clock_.Monotonic();
  bool stalled;
  {
    absl::MutexLock lock(&mu_);
    stalled_ = stalled = now - last_heard_ > options_.stall_timeout;
  }
  if (stalled || stop_->HasBeenNotified()) {
    // The blocked reader returns, and the caller finishes the stream.
    context_->TryCancel();
    cancelled_ = true;
    return absl::InfiniteDuration();
  }
  if (now >= next_progress_) {
    etcdserverpb::WatchRequest progress;
    progress.mutable_progress_request();
    stream_->Write(progress);
    next_progress_ = now + options_.progress_interval;
  }
  return std::clamp(next_progress_ - now, absl::ZeroDuration(), kStopCheck);
}

}  // namespace holdfast
