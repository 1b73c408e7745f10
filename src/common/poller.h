#pragma once

#include <functional>
#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace holdfast {

// Calls a function every interval on a thread of its own, until Stop() (or
// destruction). Stop() waits for a running call to return.
class Poller {
 public:
  Poller() = default;
  Poller(const Poller&) = delete;
  Poller& operator=(const Poller&) = delete;
  ~Poller() { Stop(); }

  void Start(absl::Duration interval, std::function<void()> poll) {
    thread_ = std::thread([this, interval, poll = std::move(poll)] {
      while (!stop_.WaitForNotificationWithTimeout(interval)) poll();
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
