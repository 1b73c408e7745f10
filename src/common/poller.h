#pragma once

#include <algorithm>
#include <functional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace holdfast {

// Calls a function again and again on a thread of its own, until Stop() (or
// destruction). Stop() waits for a running call to return. Wake() cuts the
// current wait short, e.g. when a file watch says something changed.
class Poller {
 public:
  // Wakes closer together than this are merged: a burst of events costs a
  // poll every 10 ms at most, not one per event.
  static constexpr absl::Duration kMinGap = absl::Milliseconds(10);

  Poller() = default;
  Poller(const Poller&) = delete;
  Poller& operator=(const Poller&) = delete;
  ~Poller() { Stop(); }

  // Calls `poll` every `interval`.
  void Start(absl::Duration interval, std::function<void()> poll) {
    StartAdaptive(interval, [interval, poll = std::move(poll)] {
      poll();
      return interval;
    });
  }
  // Calls `poll` after `first_wait`, then again after each wait it returns.
  void StartAdaptive(absl::Duration first_wait, std::function<absl::Duration()> poll) {
    thread_ = std::thread([this, first_wait, poll = std::move(poll)] {
      absl::Duration wait = first_wait;
      while (Wait(wait)) wait = poll();
    });
  }
  // Polls now (no sooner than kMinGap after the last poll) instead of at the
  // end of the current wait.
  void Wake() {
    absl::MutexLock lock(&mu_);
    woken_ = true;
  }
  void Stop() {
    {
      absl::MutexLock lock(&mu_);
      stopped_ = true;
    }
    if (thread_.joinable()) thread_.join();
  }

 private:
  // Waits `wait`, or less if woken; false once stopped.
  bool Wait(absl::Duration wait) {
    absl::MutexLock lock(&mu_);
    const absl::Time start = absl::Now();
    auto stopped = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopped_; };
    auto stopped_or_woken = [this]()
                                ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopped_ || woken_; };
    mu_.AwaitWithTimeout(absl::Condition(&stopped_or_woken), wait);
    if (!stopped_ && woken_) {
      absl::Duration rest = std::min(wait, kMinGap) - (absl::Now() - start);
      if (rest > absl::ZeroDuration()) mu_.AwaitWithTimeout(absl::Condition(&stopped), rest);
    }
    woken_ = false;
    return !stopped_;
  }

  absl::Mutex mu_;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  bool woken_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace holdfast
