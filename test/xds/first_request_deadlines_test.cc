#include "src/xds/first_request_deadlines.h"

#include <vector>

#include "gtest/gtest.h"

namespace holdfast {
namespace {

TEST(FirstRequestDeadlinesTest, ExpiresOnlyStreamsPastTheirDeadline) {
  SimulatedClock clock;
  FirstRequestDeadlines deadlines(absl::Seconds(30), clock);
  std::vector<int> ended;
  auto end = [&ended](int id) {
    return [&ended, id] {
      ended.push_back(id);
      return true;
    };
  };
  deadlines.Add(1, end(1));
  clock.Advance(absl::Seconds(10));
  deadlines.Add(2, end(2));
  deadlines.Add(3, end(3));
  clock.Advance(absl::Seconds(19));
  EXPECT_EQ(deadlines.ExpireOverdue(), 0u);

  clock.Advance(absl::Seconds(1));  // stream 1 is 30 s old
  EXPECT_EQ(deadlines.ExpireOverdue(), 1u);
  EXPECT_EQ(ended, std::vector<int>{1});
  EXPECT_EQ(deadlines.size(), 2u);

  deadlines.Remove(2);  // its first request came
  clock.Advance(absl::Hours(1));
  EXPECT_EQ(deadlines.ExpireOverdue(), 1u);
  EXPECT_EQ(ended, (std::vector<int>{1, 3}));
  EXPECT_EQ(deadlines.size(), 0u);
}

TEST(FirstRequestDeadlinesTest, AStreamThatWasAlreadyEndingIsNotCounted) {
  SimulatedClock clock;
  FirstRequestDeadlines deadlines(absl::Seconds(1), clock);
  deadlines.Add(1, [] { return false; });
  clock.Advance(absl::Seconds(2));
  EXPECT_EQ(deadlines.ExpireOverdue(), 0u);
  EXPECT_EQ(deadlines.size(), 0u);
}

// The count is made before the stream ends (its client sees the end at
// once and may read the metric next), by the stream's own `expire`.
TEST(FirstRequestDeadlinesTest, AnEndIsCountedBeforeTheStreamEnds) {
  SimulatedClock clock;
  FirstRequestDeadlines deadlines(absl::Seconds(1), clock);
  Counter ended;
  deadlines.CountEndsIn(&ended);
  uint64_t counted_when_ending = 0;
  deadlines.Add(1, [&] {
    deadlines.NoteEnding();
    counted_when_ending = ended.value();  // what a client told of the end could read
    return true;
  });
  deadlines.Add(2, [] { return false; });  // already ending: not counted
  clock.Advance(absl::Seconds(2));
  EXPECT_EQ(deadlines.ExpireOverdue(), 1u);
  EXPECT_EQ(counted_when_ending, 1u);
  EXPECT_EQ(ended.value(), 1u);
}

}  // namespace
}  // namespace holdfast
