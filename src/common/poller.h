#pragma once

#include <functional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace holdfast {

// Calls a function again and again on a thread of its own, until Stop() (or
// destruction). Stop() waits for a running call to return. Wake() cuts the
// current wait short, e.g. when a file watch says something changed.
class Poller {
 public:
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
  // Polls now instead of at the end of the current wait. Callers merge
  // bursts of reasons to wake (DirectoryWatch waits for its events to go
  // quiet).
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
    auto stopped_or_woken = [this]()
                                ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopped_ || woken_; };
    mu_.AwaitWithTimeout(absl::Condition(&stopped_or_woken), wait);
    woken_ = false;
    return !stopped_;
  }

  absl::Mutex mu_;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  bool woken_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace holdfast
