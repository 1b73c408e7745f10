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

// A valid upstream with one host.
GatewayObject Upstream(const std::string& name) {
  GatewayObject upstream;
  upstream.meta.name = name;
  upstream.meta.ns = "shop";
  upstream.meta.location = {"shop.yaml", 3};
  UpstreamSpec spec;
  spec.hosts = {{"127.0.0.1", 8080, 1}};
  upstream.spec = spec;
  upstream.content_digest = name;
  return upstream;
}

// The pipeline gives each Apply's statuses map back to the translator to
// fill again once a later one replaced it: a map someone still holds (an
// admin page) must keep what it said, and every Apply's statuses and
// counts must be its own, whatever the map held before.
TEST(ConfigPipelineTest, StatusesHandedOutStayAsTheyWereAndEachApplyCountsItsOwn) {
  SimulatedClock clock;
  MetricsRegistry metrics;
  ConfigPipeline pipeline("test", {}, clock, &metrics, [](SnapshotPtr) {});
  Gauge* rejected = metrics.GetGauge("holdfast_objects", "", {{"status", "Rejected"}});
  const ObjectKey broken{"Upstream", "shop", "broken"};
  TranslationInput input;
  for (const char* name : {"a", "b", "c"}) {
    input.objects.emplace(Upstream(name).key(), Upstream(name));
  }
  input.invalid[broken] = {{"spec.hosts[0].port", "must be between 1 and 65535"}};
  ASSERT_TRUE(pipeline.Apply(input, {}).ok());
  std::shared_ptr<const StatusMap> held = pipeline.shared_statuses();
  const StatusMap copy = *held;
  ASSERT_EQ(held->size(), 4u);
  EXPECT_EQ(rejected->value(), 1);

  // Fixed, then one gone and one added, over several Applies: the maps
  // not held are recycled, the held one is not.
  input.invalid.clear();
  input.objects.emplace(Upstream("broken").key(), Upstream("broken"));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(pipeline.Apply(input, {}).ok());
  EXPECT_EQ(rejected->value(), 0);
  input.objects.erase(Upstream("a").key());
  input.objects.emplace(Upstream("d").key(), Upstream("d"));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(pipeline.Apply(input, {}).ok());

  ASSERT_EQ(held->size(), copy.size());
  for (const auto& [key, status] : copy) {
    const ObjectStatus& now = held->at(key);
    EXPECT_EQ(now.state, status.state) << key.ToString();
    EXPECT_EQ(now.reasons.size(), status.reasons.size()) << key.ToString();
  }
  StatusMap current = pipeline.statuses();
  ASSERT_EQ(current.size(), 4u);
  for (const char* name : {"b", "c", "d", "broken"}) {
    const ObjectStatus& status = current.at({"Upstream", "shop", name});
    EXPECT_EQ(status.state, StatusState::kAccepted) << name;
    EXPECT_TRUE(status.reasons.empty()) << name;
    EXPECT_EQ(status.key, (ObjectKey{"Upstream", "shop", name}));
    EXPECT_EQ(status.location.ToString(), "shop.yaml:3") << name;
  }
}

}  // namespace
}  // namespace holdfast
