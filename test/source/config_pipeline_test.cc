#include "src/source/config_pipeline.h"

#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "src/common/clock.h"
#include "src/common/metrics.h"

namespace holdfast {
namespace {

// The warnings one Apply logs, captured from stderr.
std::string WarningsOf(ConfigPipeline& pipeline, const TranslationInput& input) {
  testing::internal::CaptureStderr();
  EXPECT_TRUE(pipeline.Apply(input, {}).ok());
  return testing::internal::GetCapturedStderr();
}

// An operator learns from the log when an object turns bad or changes how
// it is bad, once: not again on every later apply while nothing changed.
TEST(ConfigPipelineTest, LogsEachObjectThatTurnsBadOnceAndAgainWhenItsReasonsChange) {
  SimulatedClock clock;
  MetricsRegistry metrics;
  ConfigPipeline pipeline("test", {}, clock, &metrics, [](SnapshotPtr) {});
  const ObjectKey broken{"Upstream", "shop", "broken"};
  const ObjectKey other{"Upstream", "shop", "other"};
  TranslationInput input;
  input.invalid[broken] = {{"spec.hosts[0].port", "must be between 1 and 65535"}};

  std::string log = WarningsOf(pipeline, input);
  EXPECT_TRUE(absl::StrContains(log, "Upstream shop/broken Rejected")) << log;
  EXPECT_TRUE(absl::StrContains(log, "must be between 1 and 65535")) << log;

  EXPECT_FALSE(absl::StrContains(WarningsOf(pipeline, input), "shop/broken"));

  // A second object turning bad is logged alone.
  input.invalid[other] = {{"spec.hosts", "must not be empty"}};
  log = WarningsOf(pipeline, input);
  EXPECT_TRUE(absl::StrContains(log, "shop/other")) << log;
  EXPECT_FALSE(absl::StrContains(log, "shop/broken")) << log;

  input.invalid[broken].push_back({"spec.hosts[1].address", "is not an address"});
  log = WarningsOf(pipeline, input);
  EXPECT_TRUE(absl::StrContains(log, "is not an address")) << log;
  EXPECT_FALSE(absl::StrContains(log, "shop/other")) << log;

  // Several objects ordered before it gone at once: the walk must pass all
  // of them to find it unchanged.
  for (const char* name : {"a", "b", "c"}) {
    input.invalid[{"Upstream", "shop", name}] = {{"spec.hosts", "must not be empty"}};
  }
  (void)WarningsOf(pipeline, input);
  for (const char* name : {"a", "b", "c"}) input.invalid.erase({"Upstream", "shop", name});
  log = WarningsOf(pipeline, input);
  EXPECT_FALSE(absl::StrContains(log, "shop/broken")) << log;

  // Gone, then back: logged again.
  input.invalid.erase(broken);
  EXPECT_FALSE(absl::StrContains(WarningsOf(pipeline, input), "shop/broken"));
  input.invalid[broken] = {{"spec.hosts[0].port", "must be between 1 and 65535"}};
  EXPECT_TRUE(absl::StrContains(WarningsOf(pipeline, input), "shop/broken"));
}

}  // namespace
}  // namespace holdfast
