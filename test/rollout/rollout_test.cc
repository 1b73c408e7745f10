#include "src/rollout/rollout.h"

#include <stdlib.h>

#include <filesystem>
#include <random>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "src/rollout/canary_report.h"
#include "src/rollout/rollout_controller.h"
#include "src/xds/sotw_session.h"
#include "src/xds/stream.h"
#include "test/unit/test_resources.h"

namespace holdfast {
namespace {

using testing::Build;
using testing::EdsCluster;
using testing::Endpoints;

SnapshotPtr Version(int connect_timeout_s) {
  return Build({EdsCluster("a", connect_timeout_s), Endpoints("a", 80)});
}

RolloutPolicy TenPercent() {
  return RolloutPolicy{
      .canary_percent = 10, .bake = absl::Seconds(60), .ack_timeout = absl::Seconds(30)};
}

CanaryReport Acked(size_t n) { return {.canaries = n, .acked = n}; }

TEST(RolloutTest, TheFirstSnapshotIsStableAtOnceAndANewOneBakesOnCanariesFirst) {
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  Rollout rollout(TenPercent());
  const SnapshotPtr v1 = Version(1), v2 = Version(2);
  rollout.Offer(v1, t0);
  EXPECT_EQ(rollout.stage(), Rollout::Stage::kIdle);
  EXPECT_EQ(rollout.stable(), v1);

  rollout.Offer(v2, t0);
  EXPECT_EQ(rollout.stage(), Rollout::Stage::kBaking);
  EXPECT_EQ(rollout.stable(), v1) << "the rest of the fleet keeps v1";
  EXPECT_EQ(rollout.canary_view(), v2);
  rollout.Observe(Acked(3), t0 + absl::Seconds(59));
  EXPECT_EQ(rollout.stage(), Rollout::Stage::kBaking) << "ACKed, but not baked long enough";
  rollout.Observe(Acked(3), t0 + absl::Seconds(60));
  EXPECT_EQ(rollout.stage(), Rollout::Stage::kIdle);
  EXPECT_EQ(rollout.stable(), v2);
  EXPECT_TRUE(absl::StrContains(rollout.reason(), "3 canaries ACKed")) << rollout.reason();
}

TEST(RolloutTest, ANackHoldsTheRolloutAndCanariesGoBackUntilALaterSnapshot) {
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  Rollout rollout(TenPercent());
  const SnapshotPtr v1 = Version(1), bad = Version(2), fixed = Version(3);
  rollout.Offer(v1, t0);
  rollout.Offer(bad, t0);
  rollout.Observe({.canaries = 3,
                   .acked = 1,
                   .nacked = 1,
                   .nacking_node = "grpc-7",
                   .error = "lb_policy unsupported"},
                  t0 + absl::Seconds(2));
  EXPECT_EQ(rollout.stage(), Rollout::Stage::kHeld);
  EXPECT_EQ(rollout.canary_view(), v1) << "canaries go back to the stable snapshot";
  EXPECT_EQ(rollout.stable(), v1);
  EXPECT_TRUE(absl::StrContains(rollout.reason(), "1 of 3 canaries rejected")) << rollout.reason();
  EXPECT_TRUE(absl::StrContains(rollout.reason(), "grpc-7: lb_policy unsupported"));
  rollout.Observe(Acked(3), t0 + absl::Seconds(600));
  EXPECT_EQ(rollout.stage(), Rollout::Stage::kHeld) << "a hold ends only with a new snapshot";

  rollout.Offer(fixed, t0 + absl::Seconds(700));
  EXPECT_EQ(rollout.stage(), Rollout::Stage::kBaking);
  EXPECT_EQ(rollout.canary_view(), fixed);
  rollout.Observe(Acked(3), t0 + absl::Seconds(760));
  EXPECT_EQ(rollout.stable(), fixed);
}

TEST(RolloutTest, CanariesThatDoNotAckInTimeHoldIt) {
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  Rollout rollout(TenPercent());
  rollout.Offer(Version(1), t0);
  rollout.Offer(Version(2), t0);
  rollout.Observe({.canaries = 4, .acked = 3}, t0 + absl::Seconds(29));
  EXPECT_EQ(rollout.stage(), Rollout::Stage::kBaking);
  rollout.Observe({.canaries = 4, .acked = 3}, t0 + absl::Seconds(30));
  EXPECT_EQ(rollout.stage(), Rollout::Stage::kHeld);
  EXPECT_TRUE(absl::StrContains(rollout.reason(), "1 of 4 canaries did not ACK"))
      << rollout.reason();
}

TEST(RolloutTest, ANewerSnapshotSupersedesTheCandidateAndRestartsTheBake) {
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  Rollout rollout(TenPercent());
  const SnapshotPtr v1 = Version(1), v2 = Version(2), v3 = Version(3);
  rollout.Offer(v1, t0);
  rollout.Offer(v2, t0);
  rollout.Offer(v3, t0 + absl::Seconds(50));
  EXPECT_EQ(rollout.canary_view(), v3);
  EXPECT_TRUE(absl::StrContains(rollout.reason(), "superseded " + v2->version()));
  rollout.Observe(Acked(2), t0 + absl::Seconds(70));
  EXPECT_EQ(rollout.stage(), Rollout::Stage::kBaking) << "the bake restarted at 50 s";
  rollout.Observe(Acked(2), t0 + absl::Seconds(110));
  EXPECT_EQ(rollout.stable(), v3) << "v2 was never served to everyone";

  rollout.Offer(Version(4), t0 + absl::Seconds(120));
  rollout.Offer(v3, t0 + absl::Seconds(121));
  EXPECT_EQ(rollout.stage(), Rollout::Stage::kIdle) << "offered what everyone holds";
  EXPECT_EQ(rollout.stable(), v3);
}

TEST(RolloutTest, WithoutCanariesItPromotesAfterTheBakeAndOperatorsDecide) {
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  Rollout rollout(TenPercent());
  rollout.Offer(Version(1), t0);
  const SnapshotPtr v2 = Version(2);
  rollout.Offer(v2, t0);
  rollout.Observe(CanaryReport{}, t0 + absl::Seconds(60));
  EXPECT_EQ(rollout.stable(), v2);
  EXPECT_TRUE(absl::StrContains(rollout.reason(), "no canary connected"));

  rollout.Offer(Version(3), t0 + absl::Seconds(61));
  EXPECT_TRUE(rollout.Abort(t0 + absl::Seconds(62)));
  EXPECT_EQ(rollout.canary_view(), v2);
  EXPECT_TRUE(rollout.Promote(t0 + absl::Seconds(63)));
  EXPECT_EQ(rollout.stable()->version(), Version(3)->version());
  EXPECT_FALSE(rollout.Promote(t0 + absl::Seconds(64))) << "nothing to promote";
}

// Random offers, reports and operator actions: every proxy always sees one
// of two complete snapshots, the stable one changes only to a candidate
// whose canaries all ACKed it for the bake time (or by the operator), and a
// held candidate is never what canaries see.
TEST(RolloutTest, RandomHistoriesKeepTheInvariants) {
  for (uint32_t seed : {1u, 2u, 3u, 4u}) {
    std::mt19937 random(seed);
    std::vector<SnapshotPtr> versions;
    for (int i = 1; i <= 6; ++i) versions.push_back(Version(i));
    const RolloutPolicy policy = TenPercent();
    Rollout rollout(policy);
    absl::Time now = absl::FromUnixSeconds(1000);
    rollout.Offer(versions[0], now);
    absl::Time offered_at = now;
    bool nacked_since_offer = false;
    int promotions = 0, holds = 0;
    for (int step = 0; step < 3000; ++step) {
      now += absl::Seconds(random() % 20);
      const SnapshotPtr stable_before = rollout.stable();
      const SnapshotPtr candidate_before = rollout.candidate();
      const Rollout::Stage stage_before = rollout.stage();
      bool by_operator = false;
      switch (random() % 16) {
        case 0:
        case 1: {
          const SnapshotPtr& offer = versions[random() % versions.size()];
          rollout.Offer(offer, now);
          if (rollout.candidate() != candidate_before && rollout.candidate() != nullptr) {
            offered_at = now;
            nacked_since_offer = false;
          }
          break;
        }
        case 2: {
          const size_t canaries = 1 + random() % 3;
          if (stage_before == Rollout::Stage::kBaking) nacked_since_offer = true;
          rollout.Observe({.canaries = canaries, .acked = canaries - 1, .nacked = 1}, now);
          break;
        }
        case 3:
          by_operator = random() % 2 == 0 ? rollout.Promote(now) : rollout.Abort(now);
          break;
        default: {
          const size_t canaries = random() % 4;
          const size_t acked = random() % 4 == 0 ? random() % (canaries + 1) : canaries;
          rollout.Observe({.canaries = canaries, .acked = acked}, now);
        }
      }
      SCOPED_TRACE(absl::StrCat("seed ", seed, " step ", step));
      ASSERT_NE(rollout.stable(), nullptr);
      ASSERT_TRUE(rollout.canary_view() == rollout.stable() ||
                  rollout.canary_view() == rollout.candidate());
      if (rollout.stage() == Rollout::Stage::kHeld) {
        ASSERT_EQ(rollout.canary_view(), rollout.stable());
      }
      if (rollout.stage() == Rollout::Stage::kIdle) ASSERT_EQ(rollout.candidate(), nullptr);
      promotions += rollout.stable() != stable_before && !by_operator;
      holds += rollout.stage() == Rollout::Stage::kHeld && stage_before != Rollout::Stage::kHeld;
      if (rollout.stable() != stable_before && !by_operator) {
        ASSERT_EQ(rollout.stable(), candidate_before) << "only a candidate is promoted";
        ASSERT_EQ(stage_before, Rollout::Stage::kBaking);
        ASSERT_GE(now - offered_at, policy.bake);
        ASSERT_FALSE(nacked_since_offer) << "a NACKed candidate was promoted";
      }
    }
    // The history exercised both ways out of a bake.
    EXPECT_GT(promotions, 10) << "seed " << seed;
    EXPECT_GT(holds, 10) << "seed " << seed;
  }
}

TEST(CanaryTest, ChoiceIsStableAndNearThePercentage) {
  RolloutPolicy policy{.canary_percent = 10};
  int canaries = 0;
  for (int i = 0; i < 10000; ++i) {
    envoy::config::core::v3::Node node;
    node.set_id(absl::StrCat("proxy-", i));
    const bool canary = IsCanary(policy, node);
    ASSERT_EQ(canary, IsCanary(policy, node));
    canaries += canary;
  }
  EXPECT_GT(canaries, 850);
  EXPECT_LT(canaries, 1150);
  envoy::config::core::v3::Node tagged;
  tagged.set_id("x");
  (*tagged.mutable_metadata()->mutable_fields())["canary"].set_string_value("true");
  EXPECT_TRUE(IsCanary({.metadata_key = "canary", .metadata_value = "true"}, tagged));
  EXPECT_FALSE(IsCanary({.metadata_key = "canary", .metadata_value = "yes"}, tagged));
  EXPECT_FALSE(IsCanary({}, tagged)) << "off by default";
}

TEST(CanaryReportTest, AProxyHoldsTheCandidateWhateverResponseBroughtIt) {
  SimulatedClock clock;
  MetricsRegistry metrics;
  XdsStats stats(&metrics);
  ViewCache views;
  ProxyState proxy(1, "ads-sotw", "peer", absl::UnixEpoch());
  SotwSession session("", clock, &proxy, &stats, &views);
  auto request = [](absl::string_view type, std::string nonce = "", std::string version = "",
                    std::string error = "") {
    envoy::service::discovery::v3::DiscoveryRequest r;
    r.set_type_url(std::string(type));
    r.set_response_nonce(nonce);
    r.set_version_info(version);
    if (!error.empty()) r.mutable_error_detail()->set_message(error);
    return r;
  };
  const SnapshotPtr v1 = Version(1);
  session.OnSnapshot(v1);
  ASSERT_TRUE(session.OnRequest(request(type_url::kCluster)).ok());
  auto sent = session.NextResponse();
  ASSERT_TRUE(sent.has_value());
  ASSERT_TRUE(session.OnRequest(request(type_url::kCluster, sent->nonce, sent->version)).ok());
  // Same content, another snapshot object: nothing new is sent, yet the
  // proxy holds it.
  const SnapshotPtr same = Version(1);
  EXPECT_EQ(ReportCanaries({proxy.View()}, same).acked, 1u);
  const SnapshotPtr v2 = Version(2);
  EXPECT_EQ(ReportCanaries({proxy.View()}, v2).acked, 0u);

  session.OnSnapshot(v2);
  auto second = session.NextResponse();
  ASSERT_TRUE(second.has_value());
  ASSERT_TRUE(session
                  .OnRequest(request(type_url::kCluster, second->nonce, sent->version,
                                     "connect_timeout too long"))
                  .ok());
  CanaryReport report = ReportCanaries({proxy.View()}, v2);
  EXPECT_EQ(report.nacked, 1u);
  EXPECT_EQ(report.acked, 0u);
  EXPECT_EQ(report.error, "connect_timeout too long");
}

// A proxy that asked for some names of a type holds the candidate when each
// of those names is the same in both, or absent from both; the rest of the
// type does not matter.
TEST(CanaryReportTest, NamedSubscriptionsCompareOnlyTheNamesAskedFor) {
  SimulatedClock clock;
  MetricsRegistry metrics;
  XdsStats stats(&metrics);
  ViewCache views;
  ProxyState proxy(1, "ads-sotw", "peer", absl::UnixEpoch());
  SotwSession session("", clock, &proxy, &stats, &views);
  const SnapshotPtr v1 = Build({EdsCluster("a", 1), Endpoints("a", 80)});
  session.OnSnapshot(v1);
  envoy::service::discovery::v3::DiscoveryRequest ask;
  ask.set_type_url(std::string(type_url::kClusterLoadAssignment));
  ask.add_resource_names("a");
  ask.add_resource_names("b");  // not in any snapshot yet
  ASSERT_TRUE(session.OnRequest(ask).ok());
  auto sent = session.NextResponse();
  ASSERT_TRUE(sent.has_value());
  ask.set_response_nonce(sent->nonce);
  ask.set_version_info(sent->version);
  ASSERT_TRUE(session.OnRequest(ask).ok());

  auto acked = [&](const SnapshotPtr& candidate) {
    return ReportCanaries({proxy.View()}, candidate).acked;
  };
  EXPECT_EQ(acked(Build({EdsCluster("a", 1), Endpoints("a", 80)})), 1u) << "equal content";
  EXPECT_EQ(acked(Build({EdsCluster("a", 9), Endpoints("a", 80)})), 1u)
      << "only a type it did not ask for changed";
  EXPECT_EQ(acked(Build(
                {EdsCluster("a", 1), Endpoints("a", 80), EdsCluster("c", 1), Endpoints("c", 80)})),
            1u)
      << "a name it did not ask for was added";
  EXPECT_EQ(acked(Build({EdsCluster("a", 1), Endpoints("a", 81)})), 0u) << "its name changed";
  EXPECT_EQ(acked(Build(
                {EdsCluster("a", 1), Endpoints("a", 80), EdsCluster("b", 1), Endpoints("b", 80)})),
            0u)
      << "a name it asked for appeared";
  EXPECT_EQ(acked(Build({EdsCluster("c", 1), Endpoints("c", 80)})), 0u) << "its name went away";
}

// The controller between the staged and the serving cache: canaries see the
// candidate, others the stable snapshot; a restart restores the stable one
// so that what the source publishes again is a candidate, not stable.
TEST(RolloutControllerTest, ServesTheStagesAndRestoresTheStableSnapshotAfterARestart) {
  char dir[] = "/tmp/rollout_controller_test.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  SimulatedClock clock;
  MetricsRegistry metrics;
  ProxyRegistry proxies;
  const SnapshotPtr v1 = Version(1), v2 = Version(2);
  const RolloutController::Options options{
      .policy = {.metadata_key = "canary", .metadata_value = "yes", .bake = absl::Seconds(10)},
      .state_dir = dir,
      .check_interval = absl::Hours(1)};  // checked by hand below
  {
    SnapshotCache staged, serving;
    RolloutController controller(options, &staged, &serving, &proxies, clock, &metrics);
    controller.Start();
    staged.Set(staged.default_group(), v1);
    EXPECT_EQ(serving.Current("default").snapshot, v1);
    staged.Set(staged.default_group(), v2);
    EXPECT_EQ(serving.Current("default").snapshot, v1) << "not yet for everyone";
    EXPECT_EQ(serving.Current(kCanaryGroup).snapshot, v2);
    EXPECT_EQ(controller.ToJson()["stage"], "baking");
    controller.Stop();
  }
  {  // Restarted mid-rollout: v2 comes back from the source, as a candidate.
    SnapshotCache staged, serving;
    RolloutController controller(options, &staged, &serving, &proxies, clock, &metrics);
    controller.Start();
    staged.Set(staged.default_group(), Version(2));
    EXPECT_EQ(serving.Current("default").snapshot->version(), v1->version());
    EXPECT_EQ(serving.Current(kCanaryGroup).snapshot->version(), v2->version());
    clock.Advance(absl::Seconds(10));
    controller.Check();  // no canary connected: promoted after the bake
    EXPECT_EQ(serving.Current("default").snapshot->version(), v2->version());
    EXPECT_EQ(controller.ToJson()["stage"], "idle");
    controller.Stop();
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace holdfast
