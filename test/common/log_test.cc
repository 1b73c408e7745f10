#include "src/common/log.h"

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace holdfast {
namespace {

const absl::Time kLoggedAt = absl::FromUnixMillis(1796184306789);  // 2026-12-02T04:05:06.789Z

TEST(LogTest, TextLinesCarryTimeLevelAndMessage) {
  EXPECT_EQ(FormatLogLine(LogFormat::kText, kLoggedAt, LogLevel::kWarning, "store unreachable"),
            "2026-12-02T04:05:06.789Z WARN  store unreachable\n");
}

// Whatever a message holds (a client's node id, a file's bytes), a JSON line
// parses and gives the message back, with bytes that are not UTF-8 replaced.
TEST(LogTest, JsonLinesParseWhateverTheMessageHolds) {
  const std::string hostile =
      std::string("node \"a\\b\"\n\t\x01 caf\xc3\xa9 ") + "\xff\xfe" + "end";
  const std::string line = FormatLogLine(LogFormat::kJson, kLoggedAt, LogLevel::kError, hostile);
  ASSERT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1) << "one line";
  nlohmann::json parsed = nlohmann::json::parse(line);
  EXPECT_EQ(parsed["time"], "2026-12-02T04:05:06.789Z");
  EXPECT_EQ(parsed["level"], "error");
  EXPECT_EQ(parsed["msg"],
            std::string("node \"a\\b\"\n\t\x01 caf\xc3\xa9 ") + "\xef\xbf\xbd\xef\xbf\xbd" + "end");
}

}  // namespace
}  // namespace holdfast
