// ParseWatchLine: one line of a watch stream as the API server sends it.
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "src/kube/kube_client.h"

namespace holdfast {
namespace {

TEST(WatchLineTest, EventsAndBlankLines) {
  auto added = ParseWatchLine(R"({"type":"ADDED","object":{"metadata":{"name":"a"}}})");
  ASSERT_TRUE(added.ok()) << added.status();
  ASSERT_TRUE(added->has_value());
  EXPECT_EQ((*added)->type, KubeWatchEvent::Type::kAdded);
  auto blank = ParseWatchLine("  \n");
  ASSERT_TRUE(blank.ok());
  EXPECT_FALSE(blank->has_value());
}

TEST(WatchLineTest, AnExpiredVersionIsOutOfRange) {
  auto expired = ParseWatchLine(
      R"({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired"}})");
  EXPECT_TRUE(absl::IsOutOfRange(expired.status())) << expired.status();
}

// Found by the fuzzer: an ERROR event claiming a success code made a
// StatusOr from an OK status, which aborts the process.
TEST(WatchLineTest, AnErrorEventIsAnErrorWhateverCodeItClaims) {
  for (const char* code : {"200", "205", "0", "-1", "302"}) {
    auto odd = ParseWatchLine(absl::StrCat(R"({"type":"ERROR","object":{"kind":"Status","code":)",
                                           code, R"(,"reason":"Expired"}})"));
    EXPECT_FALSE(odd.ok()) << code;
  }
}

}  // namespace
}  // namespace holdfast
