#include "src/common/clock.h"

#include "gtest/gtest.h"

namespace holdfast {
namespace {

const absl::Time kAt = absl::FromUnixMillis(1796184306789);  // 2026-12-02T04:05:06.789Z

TEST(ClockTest, TimestampsAreUtcRfc3339) {
  EXPECT_EQ(FormatTimestamp(kAt), "2026-12-02T04:05:06.789Z");
  EXPECT_EQ(FormatTimestamp(absl::FromUnixSeconds(1796184306)), "2026-12-02T04:05:06.000Z");
  EXPECT_EQ(FormatTimestamp(absl::InfinitePast()), "") << "never";
  EXPECT_EQ(FormatTimestamp(absl::InfiniteFuture()), "");
  EXPECT_EQ(FormatKubeTime(kAt), "2026-12-02T04:05:06Z") << "metav1.Time: whole seconds";
}

TEST(ClockTest, SimulatedTimeMovesOnlyWhenTold) {
  SimulatedClock clock(kAt);
  EXPECT_EQ(clock.Now(), kAt);
  const absl::Duration start = clock.Monotonic();
  clock.Advance(absl::Seconds(3));
  EXPECT_EQ(clock.Now(), kAt + absl::Seconds(3));
  EXPECT_EQ(clock.Monotonic() - start, absl::Seconds(3));
}

}  // namespace
}  // namespace holdfast
