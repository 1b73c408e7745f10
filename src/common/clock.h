#pragma once

#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace holdfast {

// Source of time for everything that records or compares times. Production
// code takes a Clock& instead of calling absl::Now(), so tests can run lease,
// backoff and staleness logic on simulated time.
class Clock {
 public:
  virtual ~Clock() = default;
  // Wall-clock time: for timestamps shown to people.
  virtual absl::Time Now() const = 0;
  // Monotonic time since an arbitrary origin: for measuring intervals.
  virtual absl::Duration Monotonic() const = 0;

  // The process's real clock. Never destroyed.
  static Clock& Real();
};

// A clock that moves only when told to. Thread-safe.
class SimulatedClock : public Clock {
 public:
  explicit SimulatedClock(absl::Time start = absl::FromUnixSeconds(1'700'000'000)) : now_(start) {}
  absl::Time Now() const override;
  absl::Duration Monotonic() const override;
  void Advance(absl::Duration d);

 private:
  mutable absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
  absl::Duration elapsed_ ABSL_GUARDED_BY(mu_) = absl::ZeroDuration();
};

// UTC, RFC 3339 to the millisecond ("2026-12-02T10:34:02.123Z"): the one
// format of times in logs, admin pages and the JSON holdfast serves. An
// infinite time (never) is "".
std::string FormatTimestamp(absl::Time t);

// UTC, RFC 3339 to the second ("2026-12-02T10:34:02Z"): Kubernetes'
// metav1.Time, as in status conditions.
std::string FormatKubeTime(absl::Time t);

}  // namespace holdfast
