#include "src/common/poller.h"

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"

namespace holdfast {
namespace {

// Waits are for events, bounded only so that a broken poller fails.
TEST(PollerTest, WakeCutsAnHourLongWaitShort) {
  absl::Mutex mu;
  int polls = 0;
  Poller poller;
  poller.StartAdaptive(absl::Hours(1), [&] {
    absl::MutexLock lock(&mu);
    ++polls;
    return absl::Hours(1);
  });
  for (int want = 1; want <= 3; ++want) {
    poller.Wake();
    absl::MutexLock lock(&mu);
    auto polled = [&] { return polls >= want; };
    EXPECT_TRUE(mu.AwaitWithTimeout(absl::Condition(&polled), absl::Seconds(30)))
        << "wake " << want;
  }
  poller.Stop();  // prompt, although the current wait is an hour
  absl::MutexLock lock(&mu);
  EXPECT_EQ(polls, 3);
}

TEST(PollerTest, StopWithoutStartIsFine) {
  Poller poller;
  poller.Stop();
}

}  // namespace
}  // namespace holdfast
