#include "src/common/clock.h"

#include <chrono>

namespace holdfast {
namespace {

class RealClock : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
  absl::Duration Monotonic() const override {
    return absl::FromChrono(std::chrono::steady_clock::now().time_since_epoch());
  }
};

}  // namespace

Clock& Clock::Real() {
  static RealClock* clock = new RealClock();
  return *clock;
}

absl::Time SimulatedClock::Now() const {
  absl::MutexLock lock(&mu_);
  return now_;
}

absl::Duration SimulatedClock::Monotonic() const {
  absl::MutexLock lock(&mu_);
  return elapsed_;
}

void SimulatedClock::Advance(absl::Duration d) {
  absl::MutexLock lock(&mu_);
  now_ += d;
  elapsed_ += d;
}

std::string FormatTimestamp(absl::Time t) {
  if (t == absl::InfinitePast() || t == absl::InfiniteFuture()) return "";
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", t, absl::UTCTimeZone());
}

std::string FormatKubeTime(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t, absl::UTCTimeZone());
}

}  // namespace holdfast
