#include "src/app/rollout_flags.h"

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace holdfast {
namespace {

TEST(RolloutFlagsTest, AGroupOfItsOwnTakesTheTimingFlagsUnlessItSetsThem) {
  RolloutFlags flags{.canary_percent = 5,
                     .bake = "2m",
                     .ack_timeout = "45s",
                     .groups = {"edge:canary-metadata=canary=yes,bake=5m", "internal:off",
                                "spiffe://cluster/ns/shop:canary-percent=20,ack-timeout=10s"}};
  absl::StatusOr<RolloutPolicies> policies = ParseRolloutFlags(flags);
  ASSERT_TRUE(policies.ok()) << policies.status();
  EXPECT_EQ(policies->fallback.canary_percent, 5);
  EXPECT_EQ(policies->fallback.bake, absl::Minutes(2));
  ASSERT_EQ(policies->groups.size(), 3u);
  const RolloutPolicy& edge = policies->groups.at("edge");
  EXPECT_EQ(edge.metadata_key, "canary");
  EXPECT_EQ(edge.metadata_value, "yes");
  EXPECT_EQ(edge.canary_percent, 0) << "not the fallback's";
  EXPECT_EQ(edge.bake, absl::Minutes(5));
  EXPECT_EQ(edge.ack_timeout, absl::Seconds(45)) << "from --rollout-ack-timeout";
  EXPECT_FALSE(policies->groups.at("internal").enabled());
  // A group name may hold colons (a SPIFFE ID): the last one ends it.
  const RolloutPolicy& shop = policies->groups.at("spiffe://cluster/ns/shop");
  EXPECT_EQ(shop.canary_percent, 20);
  EXPECT_EQ(shop.ack_timeout, absl::Seconds(10));
  EXPECT_TRUE(policies->enabled());
  EXPECT_EQ(policies->RolloutOf("edge"), "edge");
  EXPECT_EQ(policies->RolloutOf("elsewhere"), "");
  EXPECT_EQ(&policies->PolicyOf(""), &policies->fallback);
}

TEST(RolloutFlagsTest, OnlyGroupsOfTheirOwnEnableARollout) {
  absl::StatusOr<RolloutPolicies> none = ParseRolloutFlags({});
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->enabled());
  absl::StatusOr<RolloutPolicies> one = ParseRolloutFlags({.groups = {"edge:canary-percent=10"}});
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_FALSE(one->fallback.enabled());
  EXPECT_TRUE(one->enabled());
}

TEST(RolloutFlagsTest, MistakesNameTheFlagAndTheSetting) {
  for (const auto& [group, expected] : std::vector<std::pair<std::string, std::string>>{
           {"edge", "--rollout-group edge: want GROUP:SETTING=VALUE,... or GROUP:off"},
           {":canary-percent=5", "want GROUP:SETTING=VALUE"},
           {"edge:canary-percent=500",
            "--rollout-group edge:canary-percent=500: canary-percent: "
            "want 0 to 100, got \"500\""},
           {"edge:bake=soon", "--rollout-group edge:bake=soon: bake"},
           {"edge:canary-metadata=yes", "canary-metadata yes: want KEY=VALUE"},
           {"edge:colour=blue", "colour: unknown setting"},
           {"edge:bake=5m", "chooses no canary"},
       }) {
    absl::StatusOr<RolloutPolicies> parsed = ParseRolloutFlags({.groups = {group}});
    ASSERT_FALSE(parsed.ok()) << group;
    EXPECT_TRUE(absl::StrContains(parsed.status().message(), expected))
        << group << ": " << parsed.status().message();
  }
  absl::StatusOr<RolloutPolicies> twice =
      ParseRolloutFlags({.groups = {"edge:off", "edge:canary-percent=1"}});
  ASSERT_FALSE(twice.ok());
  EXPECT_TRUE(absl::StrContains(twice.status().message(), "group edge named twice"))
      << twice.status();
}

}  // namespace
}  // namespace holdfast
