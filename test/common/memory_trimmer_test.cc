#include "src/common/memory_trimmer.h"

#include "gtest/gtest.h"

namespace holdfast {
namespace {

TEST(MemoryTrimmerTest, TrimsOnceThingsGoQuiet) {
  uint64_t activity = 1;
  MemoryTrimmer trimmer([&] { return activity; }, absl::Seconds(1), absl::Seconds(5));
  EXPECT_FALSE(trimmer.Check()) << "activity seen for the first time";
  EXPECT_TRUE(trimmer.Check()) << "quiet for a check";
  EXPECT_FALSE(trimmer.Check()) << "nothing happened since";
  activity = 2;
  EXPECT_FALSE(trimmer.Check());
  EXPECT_TRUE(trimmer.Check());
  EXPECT_FALSE(trimmer.Check());
}

TEST(MemoryTrimmerTest, TrimsEveryMaxWaitUnderConstantActivity) {
  uint64_t activity = 0;
  MemoryTrimmer trimmer([&] { return ++activity; }, absl::Seconds(1), absl::Seconds(5));
  int trims = 0;
  for (int check = 1; check <= 20; ++check) {
    if (trimmer.Check()) {
      ++trims;
      EXPECT_EQ(check % 5, 0) << "check " << check;
    }
  }
  EXPECT_EQ(trims, 4);
}

}  // namespace
}  // namespace holdfast
