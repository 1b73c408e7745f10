#pragma once

#include <functional>
#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace holdfast {

// Calls a function again and again on a thread of its own, until Stop() (or
// destruction). Stop() waits for a running call to return.
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
      while (!stop_.WaitForNotificationWithTimeout(wait)) wait = poll();
    });
  }
  void Stop() {
    if (!stop_.HasBeenNotified()) stop_.Notify();
    if (thread_.joinable()) thread_.join();
  }

 private:
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace holdfast
