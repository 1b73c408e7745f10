#include "src/rollout/rollout_manager.h"

#include <filesystem>

#include "gtest/gtest.h"
#include "src/snapshot/snapshot_file.h"
#include "src/xds/stream.h"
#include "test/unit/test_resources.h"

namespace holdfast {
namespace {

using testing::EdsCluster;
using testing::Endpoints;

// Snapshot `n`: its content differs from every other n; it carries
// `rollouts`, as a translation of RolloutPolicy objects would.
SnapshotPtr ManagedVersion(int n, ConfiguredRollouts rollouts = {}) {
  return *Snapshot::Build({EdsCluster("ns/a", n), Endpoints("ns/a", 80)}, absl::FromUnixSeconds(1),
                          std::move(rollouts));
}

ConfiguredRollouts ForEveryGroup(RolloutPolicy policy) {
  ConfiguredRollouts rollouts;
  rollouts.fallback = std::move(policy);
  return rollouts;
}

RolloutPolicy CanariesByMetadata(absl::Duration bake = absl::Seconds(60)) {
  return {.metadata_key = "canary",
          .metadata_value = "yes",
          .bake = bake,
          .ack_timeout = absl::Seconds(30),
          .origin = "RolloutPolicy ops/canaries"};
}

envoy::config::core::v3::Node Node(const std::string& id, bool canary) {
  envoy::config::core::v3::Node node;
  node.set_id(id);
  if (canary) (*node.mutable_metadata()->mutable_fields())["canary"].set_string_value("yes");
  return node;
}

class RolloutManagerTest : public ::testing::Test {
 protected:
  void Start(RolloutPolicies flags = {}, std::string state_dir = "") {
    manager_ = std::make_unique<RolloutManager>(
        RolloutManager::Options{.flags = std::move(flags),
                                .state_dir = std::move(state_dir),
                                .check_interval = absl::Hours(1)},  // checked by hand
        &staged_, &serving_, &proxies_, &router_, clock_, &metrics_);
    manager_->OnHeldStatuses([this](const std::string& rollout, StatusMap statuses) {
      held_[rollout] = std::move(statuses);
    });
    manager_->Start();
  }
  void Stage(const SnapshotPtr& snapshot) { staged_.Set(staged_.default_group(), snapshot); }
  std::string Seen(const std::string& key) const {
    const SnapshotPtr& snapshot = serving_.Current(key).snapshot;
    return snapshot == nullptr ? "" : snapshot->version();
  }
  std::optional<std::string> CanaryOf(const std::string& id, bool canary,
                                      const std::string& group = "default") const {
    return router_.CanaryOf(Node(id, canary), group);
  }

  SimulatedClock clock_;
  MetricsRegistry metrics_;
  ProxyRegistry proxies_;
  SnapshotCache staged_, serving_;
  CanaryRouter router_;
  std::map<std::string, StatusMap> held_;
  std::unique_ptr<RolloutManager> manager_;
};

TEST_F(RolloutManagerTest, WithoutAPolicyEverySnapshotIsServedAtOnce) {
  Start();
  const SnapshotPtr v1 = ManagedVersion(1), v2 = ManagedVersion(2);
  Stage(v1);
  EXPECT_EQ(Seen("default"), v1->version());
  Stage(v2);
  EXPECT_EQ(Seen("default"), v2->version());
  EXPECT_EQ(Seen("any-group"), v2->version());
  EXPECT_EQ(manager_->ToJson()["enabled"], false);
  EXPECT_FALSE(CanaryOf("n", true).has_value());
  EXPECT_EQ(manager_->Promote("")["enabled"], false);
}

// The flags' rollouts answer before the source has published anything.
TEST_F(RolloutManagerTest, TheFlagsRolloutsExistBeforeTheFirstSnapshot) {
  RolloutPolicies flags;
  flags.fallback = CanariesByMetadata();
  flags.fallback.origin.clear();  // as ParseRolloutFlags makes it
  Start(flags);
  nlohmann::json page = manager_->ToJson();
  EXPECT_EQ(page["enabled"], true);
  EXPECT_EQ(page["stage"], "idle");
  EXPECT_EQ(page["stable"], "");
  EXPECT_EQ(page["policy"]["origin"], "flags");
  EXPECT_EQ(CanaryOf("n", true), std::optional<std::string>(""));
  const SnapshotPtr v1 = ManagedVersion(1);
  Stage(v1);
  EXPECT_EQ(Seen("default"), v1->version()) << "the first snapshot is stable at once";
}

// The snapshot that brings a policy is rolled out under it, and so is what
// follows, until a snapshot without the policy ends the rollout: that one
// reaches everyone at once, and the canaries' cache key goes.
TEST_F(RolloutManagerTest, APolicyFromTheConfigurationStagesSnapshotsUntilItIsRemoved) {
  Start();
  const SnapshotPtr v1 = ManagedVersion(1);
  Stage(v1);
  const SnapshotPtr v2 = ManagedVersion(2, ForEveryGroup(CanariesByMetadata()));
  Stage(v2);
  EXPECT_EQ(Seen("default"), v1->version()) << "the policy's own snapshot is staged";
  EXPECT_EQ(Seen(CanaryKey("")), v2->version());
  EXPECT_EQ(CanaryOf("n", true), std::optional<std::string>(""));
  EXPECT_FALSE(CanaryOf("n", false).has_value());
  nlohmann::json page = manager_->ToJson();
  EXPECT_EQ(page["enabled"], true);
  EXPECT_EQ(page["stage"], "baking");
  EXPECT_EQ(page["policy"]["origin"], "RolloutPolicy ops/canaries");

  clock_.Advance(absl::Seconds(60));
  manager_->CheckNow();  // no canary connected: promoted after the bake
  EXPECT_EQ(Seen("default"), v2->version());
  const SnapshotPtr v3 = ManagedVersion(3, ForEveryGroup(CanariesByMetadata()));
  Stage(v3);
  EXPECT_EQ(Seen("default"), v2->version());
  EXPECT_EQ(Seen(CanaryKey("")), v3->version());

  const SnapshotPtr v4 = ManagedVersion(4);  // the policy removed
  Stage(v4);
  EXPECT_EQ(Seen("default"), v4->version()) << "no rollout: everyone at once";
  EXPECT_EQ(Seen(CanaryKey("")), v4->version()) << "the canaries' key is gone";
  EXPECT_EQ(serving_.All().count(CanaryKey("")), 0u);
  EXPECT_FALSE(CanaryOf("n", true).has_value());
  EXPECT_EQ(manager_->ToJson()["enabled"], false);
}

// A changed bake applies to the candidate baking; a policy that chooses no
// canaries any more lets the next snapshot through at once.
TEST_F(RolloutManagerTest, AChangedPolicyAppliesFromTheSnapshotThatCarriesIt) {
  Start();
  Stage(ManagedVersion(1, ForEveryGroup(CanariesByMetadata(absl::Hours(1)))));
  const SnapshotPtr v2 = ManagedVersion(2, ForEveryGroup(CanariesByMetadata(absl::Seconds(5))));
  Stage(v2);
  EXPECT_EQ(manager_->ToJson()["policy"]["bake"], "5s");
  clock_.Advance(absl::Seconds(5));
  manager_->CheckNow();
  EXPECT_EQ(Seen("default"), v2->version()) << "baked for the new bake time";

  RolloutPolicy percent = CanariesByMetadata();
  percent.metadata_key.clear();
  percent.canary_percent = 100;
  Stage(ManagedVersion(3, ForEveryGroup(percent)));
  EXPECT_EQ(CanaryOf("n", false), std::optional<std::string>("")) << "every node at 100%";
}

// A group's rollout made while the rollout of every other group bakes
// starts from what the group's proxies saw, not from the candidate they
// were never served.
TEST_F(RolloutManagerTest, AGroupRolloutMadeMidRolloutStartsFromWhatItsProxiesSee) {
  RolloutPolicies flags;
  flags.fallback = CanariesByMetadata(absl::Hours(1));
  Start(flags);
  const SnapshotPtr v1 = ManagedVersion(1), v2 = ManagedVersion(2);
  Stage(v1);
  Stage(v2);
  ASSERT_EQ(Seen("edge"), v1->version());
  ConfiguredRollouts edge;
  edge.groups["edge"] = CanariesByMetadata(absl::Hours(1));
  const SnapshotPtr v3 = ManagedVersion(3, edge);
  Stage(v3);
  EXPECT_EQ(Seen("edge"), v1->version()) << "edge never saw v2";
  EXPECT_EQ(Seen(CanaryKey("edge")), v3->version());
  EXPECT_EQ(Seen("default"), v1->version());
  EXPECT_EQ(CanaryOf("n", true, "edge"), std::optional<std::string>("edge"));
  EXPECT_EQ(CanaryOf("n", true, "other"), std::optional<std::string>(""));
  EXPECT_TRUE(manager_->ToJson()["groups"].contains("edge"));

  // The operator holds edge's candidate: the hold is edge's, and goes with
  // edge's rollout.
  EXPECT_EQ(manager_->Abort("edge")["done"], true);
  EXPECT_EQ(Seen(CanaryKey("edge")), v1->version());
  EXPECT_FALSE(held_["edge"].empty());
  const SnapshotPtr v4 = ManagedVersion(4);
  Stage(v4);
  EXPECT_TRUE(held_["edge"].empty()) << "edge's rollout is gone, and its hold with it";
  EXPECT_EQ(serving_.All().count("edge"), 0u);
  EXPECT_EQ(Seen("edge"), Seen("default")) << "edge follows every other group again";
  EXPECT_EQ(manager_->Abort("edge")["enabled"], false);
}

// A rollout's stable snapshot is persisted while it exists and deleted when
// its policy goes; one made while serving never restores an old file.
TEST_F(RolloutManagerTest, PersistedStableSnapshotsFollowThePolicies) {
  char dir[] = "/tmp/rollout_manager_test.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string edge_file = std::string(dir) + "/rollout-stable-edge.snapshot";
  const std::string late_file = std::string(dir) + "/rollout-stable-late.snapshot";
  ASSERT_TRUE(WriteSnapshotFile(*ManagedVersion(99), late_file).ok());
  Start({}, dir);
  Stage(ManagedVersion(1));
  ConfiguredRollouts rollouts;
  rollouts.groups["edge"] = CanariesByMetadata();
  rollouts.groups["late"] = CanariesByMetadata();
  const SnapshotPtr v2 = ManagedVersion(2, rollouts);
  Stage(v2);
  EXPECT_EQ(Seen("late"), ManagedVersion(1)->version()) << "not the old file's snapshot";
  EXPECT_TRUE(std::filesystem::exists(edge_file));
  Stage(ManagedVersion(3));
  EXPECT_FALSE(std::filesystem::exists(edge_file));
  std::filesystem::remove_all(dir);
}

// A replica restarted mid-rollout: the persisted last-good snapshot carries
// the policy, so the rollout is made again at start and restores its stable
// snapshot; the candidate is still a candidate.
TEST_F(RolloutManagerTest, ARestartMidRolloutResumesFromTheSnapshotsPolicy) {
  char dir[] = "/tmp/rollout_manager_test.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const SnapshotPtr v1 = ManagedVersion(1, ForEveryGroup(CanariesByMetadata()));
  const SnapshotPtr v2 = ManagedVersion(2, ForEveryGroup(CanariesByMetadata()));
  Start({}, dir);
  Stage(v1);
  Stage(v2);
  ASSERT_EQ(Seen("default"), v1->version());
  manager_->Stop();

  SnapshotCache staged, serving;
  RolloutManager restarted({.state_dir = dir, .check_interval = absl::Hours(1)}, &staged, &serving,
                           &proxies_, &router_, clock_, &metrics_);
  staged.Set(staged.default_group(), v2);  // what the last-good copy restores
  restarted.Start();
  EXPECT_EQ(serving.Current("default").snapshot->version(), v1->version());
  EXPECT_EQ(serving.Current(CanaryKey("")).snapshot->version(), v2->version());
  restarted.Stop();
  std::filesystem::remove_all(dir);
}

TEST(CanaryRouterTest, SubscribersHearOfEveryRuleUntilTheyUnsubscribe) {
  CanaryRouter router;
  EXPECT_FALSE(router.CanaryOf(Node("n", true), "g").has_value()) << "no rule: no canaries";
  int heard = 0;
  auto subscription = router.Subscribe([&heard] { ++heard; });
  router.SetRule([](const envoy::config::core::v3::Node& node, const std::string& group) {
    return node.id() == "n" ? std::optional<std::string>(group) : std::nullopt;
  });
  EXPECT_EQ(heard, 1);
  EXPECT_EQ(router.CanaryOf(Node("n", false), "g"), std::optional<std::string>("g"));
  subscription.reset();
  router.SetRule({});
  EXPECT_EQ(heard, 1);
  EXPECT_FALSE(router.CanaryOf(Node("n", false), "g").has_value());
}

}  // namespace
}  // namespace holdfast
