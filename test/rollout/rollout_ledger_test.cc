// The decisions replicas share (RolloutLedger), and two controllers that
// share one document following each other's decisions.
#include "src/rollout/rollout_ledger.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "src/rollout/rollout_controller.h"
#include "src/xds/sotw_session.h"
#include "src/xds/stream.h"
#include "test/unit/test_resources.h"

namespace holdfast {
namespace {

using Action = RolloutDecision::Action;
using testing::Build;
using testing::EdsCluster;
using testing::Endpoints;

// The translation of an Upstream ns/a, as far as the cluster goes.
SnapshotPtr LedgerVersion(int connect_timeout_s) {
  return Build({EdsCluster("ns/a", connect_timeout_s), Endpoints("ns/a", 80)});
}

RolloutDecision Decision(std::string candidate, Action action, std::string replica) {
  return {.candidate = std::move(candidate),
          .action = action,
          .reason = "because",
          .replica = std::move(replica),
          .at = "2026-12-02T10:00:00.000Z"};
}

TEST(RolloutLedgerTest, TheFirstDecisionAboutACandidateStandsUnlessOverruled) {
  InMemorySharedDocument doc;
  RolloutLedger a(&doc), b(&doc);
  absl::StatusOr<RolloutDecision> held = a.Record(Decision("v2", Action::kHold, "a"), false);
  ASSERT_TRUE(held.ok()) << held.status();
  EXPECT_EQ(held->replica, "a");
  absl::StatusOr<RolloutDecision> standing = b.Record(Decision("v2", Action::kPromote, "b"), false);
  ASSERT_TRUE(standing.ok()) << standing.status();
  EXPECT_EQ(standing->action, Action::kHold) << "the first decision stands";
  EXPECT_EQ(standing->replica, "a");
  standing = b.Record(Decision("v2", Action::kPromote, "b"), /*overrule=*/true);
  ASSERT_TRUE(standing.ok());
  EXPECT_EQ(standing->action, Action::kPromote);
  absl::StatusOr<std::optional<RolloutDecision>> found = a.Find("v2");
  ASSERT_TRUE(found.ok());
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((*found)->action, Action::kPromote);
  EXPECT_EQ((*found)->replica, "b");
  EXPECT_EQ((*found)->reason, "because");
  EXPECT_EQ((*found)->at, "2026-12-02T10:00:00.000Z");
  found = a.Find("v3");
  ASSERT_TRUE(found.ok());
  EXPECT_FALSE(found->has_value());
}

TEST(RolloutLedgerTest, AHoldKeepsTheRejectedTypeAndOlderEntriesWithoutOneAreRead) {
  InMemorySharedDocument doc;
  // As a replica before rejected_type wrote it.
  ASSERT_TRUE(doc.Replace(R"({"decisions": [{"candidate": "v1", "action": "hold",
      "reason": "r", "replica": "a", "at": "t"}]})",
                          "")
                  .ok());
  RolloutLedger ledger(&doc);
  absl::StatusOr<std::optional<RolloutDecision>> found = ledger.Find("v1");
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((*found)->rejected_type, "");

  RolloutDecision hold = Decision("v2", Action::kHold, "a");
  hold.rejected_type = std::string(type_url::kCluster);
  ASSERT_TRUE(ledger.Record(hold, false).ok());
  found = ledger.Find("v2");
  ASSERT_TRUE(found.ok() && found->has_value());
  EXPECT_EQ((*found)->rejected_type, type_url::kCluster);
}

TEST(RolloutLedgerTest, KeepsTheLatestDecisionsOnly) {
  InMemorySharedDocument doc;
  RolloutLedger ledger(&doc);
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(ledger.Record(Decision(absl::StrCat("v", i), Action::kPromote, "a"), false).ok());
  }
  for (int i = 0; i < 20; ++i) {
    absl::StatusOr<std::optional<RolloutDecision>> found = ledger.Find(absl::StrCat("v", i));
    ASSERT_TRUE(found.ok());
    EXPECT_EQ(found->has_value(), i >= 20 - static_cast<int>(RolloutLedger::kKept)) << i;
  }
}

TEST(RolloutLedgerTest, AnUnreadableDocumentIsReportedThenReplaced) {
  InMemorySharedDocument doc;
  ASSERT_TRUE(doc.Replace(R"({"decisions": [{"candidate": "v1", "action": "maybe"}]})", "").ok());
  RolloutLedger ledger(&doc);
  absl::StatusOr<std::optional<RolloutDecision>> found = ledger.Find("v1");
  EXPECT_TRUE(absl::IsDataLoss(found.status())) << found.status();
  EXPECT_TRUE(absl::StrContains(found.status().message(), "decisions[0].")) << found.status();
  EXPECT_TRUE(absl::StrContains(found.status().message(), "memory")) << "names where";
  ASSERT_TRUE(ledger.Record(Decision("v1", Action::kHold, "a"), false).ok());
  found = ledger.Find("v1");
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_TRUE(found->has_value());
}

TEST(RolloutLedgerTest, AnUnreachableStoreFailsBothWays) {
  InMemorySharedDocument doc;
  RolloutLedger ledger(&doc);
  doc.SetUnavailable(true);
  EXPECT_TRUE(
      absl::IsUnavailable(ledger.Record(Decision("v1", Action::kHold, "a"), false).status()));
  EXPECT_TRUE(absl::IsUnavailable(ledger.Find("v1").status()));
}

// A canary proxy of one replica, answering what it is sent.
class Canary {
 public:
  // A canary of rollout `rollout` ("": of groups without their own).
  Canary(uint64_t id, const Clock& clock, ProxyRegistry* registry, std::string rollout = "")
      : stats_(&metrics_),
        proxy_(std::make_shared<ProxyState>(id, "ads-sotw", "peer", absl::UnixEpoch())),
        session_("", clock, proxy_.get(), &stats_, &views_) {
    proxy_->SetCanary(std::move(rollout));
    registry->Add(proxy_, id);
  }
  // Sends `snapshot` and gets the proxy's answer: an ACK, or a NACK with
  // `error`.
  void Take(const SnapshotPtr& snapshot, std::string error = "") {
    session_.OnSnapshot(snapshot);
    if (!asked_) {
      ASSERT_TRUE(session_.OnRequest(Request("", "", "")).ok());
      asked_ = true;
    }
    auto sent = session_.NextResponse();
    ASSERT_TRUE(sent.has_value());
    ASSERT_TRUE(
        session_.OnRequest(Request(sent->nonce, error.empty() ? sent->version : acked_, error))
            .ok());
    if (error.empty()) acked_ = sent->version;
  }

 private:
  static envoy::service::discovery::v3::DiscoveryRequest Request(std::string nonce,
                                                                 std::string version,
                                                                 std::string error) {
    envoy::service::discovery::v3::DiscoveryRequest r;
    r.set_type_url(std::string(type_url::kCluster));
    r.set_response_nonce(nonce);
    r.set_version_info(version);
    if (!error.empty()) r.mutable_error_detail()->set_message(error);
    return r;
  }

  MetricsRegistry metrics_;
  XdsStats stats_;
  ViewCache views_;
  std::shared_ptr<ProxyState> proxy_;
  SotwSession session_;
  bool asked_ = false;
  std::string acked_;
};

// One replica: its caches, its proxies and its controller, sharing `doc`.
struct Replica {
  Replica(std::string id, SharedDocument* doc, const Clock& clock)
      : controller({.policy = {.metadata_key = "canary",
                               .metadata_value = "yes",
                               .bake = absl::Seconds(60),
                               .ack_timeout = absl::Seconds(30)},
                    .check_interval = absl::Hours(1),  // checked by hand
                    .shared = doc,
                    .replica_id = std::move(id),
                    .ledger_interval = absl::Seconds(1)},
                   &staged, &serving, &proxies, clock, &metrics) {
    controller.OnHeldStatuses([this](StatusMap statuses) { held = std::move(statuses); });
    controller.Start();
  }
  ~Replica() { controller.Stop(); }
  void Offer(const SnapshotPtr& snapshot) { staged.Set(staged.default_group(), snapshot); }
  std::string Stage() const { return controller.ToJson()["stage"]; }
  std::string Everyone() const {
    return serving.Current(serving.default_group()).snapshot->version();
  }
  std::string Canaries() const { return serving.Current(kCanaryGroup).snapshot->version(); }
  // What the hold says of each gateway object, as the source would show it.
  std::map<std::string, std::string> HeldObjects() const {
    std::map<std::string, std::string> objects;
    for (const auto& [key, status] : held) {
      objects[key.ToString()] =
          absl::StrCat(StatusStateName(status.state), ": ", status.reasons.at(0).message);
    }
    return objects;
  }

  MetricsRegistry metrics;
  ProxyRegistry proxies;
  SnapshotCache staged, serving;
  RolloutController controller;
  StatusMap held;  // the latest OnHeldStatuses
};

class SharedRolloutTest : public ::testing::Test {
 protected:
  // The replicas serve v1 (which the canaries took), then get v2 as a candidate.
  void OfferV2After(std::initializer_list<Replica*> replicas,
                    std::initializer_list<Canary*> canaries) {
    for (Replica* r : replicas) r->Offer(v1_);
    for (Canary* c : canaries) c->Take(v1_);
    for (Replica* r : replicas) r->Offer(v2_);
  }

  SimulatedClock clock_;
  InMemorySharedDocument doc_;
  const SnapshotPtr v1_ = LedgerVersion(1), v2_ = LedgerVersion(2);
};

TEST_F(SharedRolloutTest, AHoldSeenByOneReplicaHoldsEveryReplica) {
  Replica a("a", &doc_, clock_), b("b", &doc_, clock_);
  Canary rejecting(1, clock_, &a.proxies), accepting(2, clock_, &b.proxies);
  OfferV2After({&a, &b}, {&rejecting, &accepting});
  rejecting.Take(v2_, "connect_timeout too long");
  accepting.Take(v2_);
  a.controller.Check();
  EXPECT_EQ(a.Stage(), "held");
  b.controller.Check();
  EXPECT_EQ(b.Stage(), "held") << "b's canary ACKed, yet a's NACK holds b";
  EXPECT_TRUE(
      absl::StrContains(std::string(b.controller.ToJson()["reason"]),
                        "connect_timeout too long); changed Cluster: ns/a (decided by replica a)"))
      << b.controller.ToJson().dump();
  // Each replica reports the hold on the object behind the rejected
  // cluster, from its own snapshots and the type the ledger recorded.
  for (Replica* r : {&a, &b}) {
    EXPECT_EQ(r->controller.ToJson()["held_objects"], nlohmann::json::array({"Upstream ns/a"}));
    ASSERT_EQ(r->HeldObjects().size(), 1u);
    const std::string status = r->HeldObjects().at("Upstream ns/a");
    EXPECT_TRUE(absl::StartsWith(status, "Rejected: held by the staged rollout")) << status;
    EXPECT_TRUE(absl::StrContains(status, "1 of 1 canaries rejected")) << status;
    EXPECT_TRUE(absl::StrContains(status, "connect_timeout too long")) << status;
    EXPECT_TRUE(r->held.begin()->second.serving_last_good);
  }
  clock_.Advance(absl::Seconds(61));
  b.controller.Check();
  EXPECT_EQ(b.Stage(), "held") << "the bake passing does not promote a held candidate";
  EXPECT_EQ(b.Everyone(), v1_->version());
  EXPECT_EQ(b.Canaries(), v1_->version()) << "b's canaries went back as well";

  // A replica started now (mid-rollout) follows the hold too.
  Replica c("c", &doc_, clock_);
  c.Offer(v1_);
  c.Offer(v2_);
  EXPECT_EQ(c.Stage(), "baking");
  c.controller.Check();
  EXPECT_EQ(c.Stage(), "held");
  EXPECT_EQ(c.HeldObjects().size(), 1u);

  // The fix (a later snapshot) rolls out normally everywhere.
  const SnapshotPtr v3 = LedgerVersion(3);
  for (Replica* r : {&a, &b}) r->Offer(v3);
  rejecting.Take(v3);
  accepting.Take(v3);
  clock_.Advance(absl::Seconds(60));
  for (Replica* r : {&a, &b}) {
    r->controller.Check();
    EXPECT_EQ(r->Stage(), "idle");
    EXPECT_EQ(r->Everyone(), v3->version());
    EXPECT_TRUE(r->held.empty()) << "the hold's statuses end with it";
    EXPECT_EQ(r->controller.ToJson()["held_objects"], nlohmann::json::array());
  }
}

TEST_F(SharedRolloutTest, ACandidateOneReplicaPromotedIsNotHeldByAnother) {
  Replica a("a", &doc_, clock_), b("b", &doc_, clock_);
  Canary fine(1, clock_, &a.proxies), late(2, clock_, &b.proxies);
  OfferV2After({&a, &b}, {&fine, &late});
  fine.Take(v2_);  // b's canary is slow to answer
  clock_.Advance(absl::Seconds(60));
  a.controller.Check();
  EXPECT_EQ(a.Stage(), "idle");
  EXPECT_EQ(a.Everyone(), v2_->version());
  // b's canary rejects it after a promoted it: the promotion stands.
  late.Take(v2_, "too late");
  b.controller.Check();
  EXPECT_EQ(b.Stage(), "idle");
  EXPECT_EQ(b.Everyone(), v2_->version());
}

TEST_F(SharedRolloutTest, WithTheStoreUnreachableAHoldAppliesAtOnceAndAPromotionWaits) {
  Replica a("a", &doc_, clock_), b("b", &doc_, clock_);
  Canary rejecting(1, clock_, &a.proxies);
  OfferV2After({&a, &b}, {&rejecting});
  doc_.SetUnavailable(true);
  rejecting.Take(v2_, "bad");
  a.controller.Check();
  EXPECT_EQ(a.Stage(), "held");
  nlohmann::json shown = a.controller.ToJson()["decisions"];
  EXPECT_EQ(shown["unshared"], v2_->version());
  EXPECT_TRUE(absl::StrContains(std::string(shown["error"]), "unavailable")) << shown.dump();
  clock_.Advance(absl::Seconds(60));
  b.controller.Check();  // no canary: would promote, but cannot record it
  EXPECT_EQ(b.Stage(), "baking");
  EXPECT_EQ(b.Everyone(), v1_->version());

  doc_.SetUnavailable(false);
  a.controller.Check();  // the hold is recorded now
  EXPECT_EQ(a.controller.ToJson()["decisions"]["unshared"], "");
  EXPECT_EQ(a.controller.ToJson()["decisions"]["error"], "");
  b.controller.Check();  // b's promotion meets a's hold
  EXPECT_EQ(b.Stage(), "held");
  EXPECT_EQ(b.Everyone(), v1_->version());
}

TEST_F(SharedRolloutTest, TheOperatorsDecisionOverrulesAndReachesEveryReplica) {
  Replica a("a", &doc_, clock_), b("b", &doc_, clock_);
  Canary rejecting(1, clock_, &a.proxies);
  OfferV2After({&a, &b}, {&rejecting});
  rejecting.Take(v2_, "bad");
  a.controller.Check();
  b.controller.Check();
  ASSERT_EQ(b.Stage(), "held");
  nlohmann::json answer = b.controller.Promote();
  EXPECT_EQ(answer["done"], true);
  EXPECT_EQ(answer["shared"], true);
  EXPECT_EQ(b.Everyone(), v2_->version());
  clock_.Advance(absl::Seconds(1));
  a.controller.Check();
  EXPECT_EQ(a.Stage(), "idle");
  EXPECT_EQ(a.Everyone(), v2_->version());
  EXPECT_TRUE(absl::StrContains(std::string(a.controller.ToJson()["reason"]),
                                "promoted by the operator (decided by replica b)"));

  // An abort on one replica holds a baking candidate on the other.
  const SnapshotPtr v3 = LedgerVersion(3);
  for (Replica* r : {&a, &b}) r->Offer(v3);
  EXPECT_EQ(a.controller.Abort()["done"], true);
  clock_.Advance(absl::Seconds(1));
  b.controller.Check();
  EXPECT_EQ(b.Stage(), "held");
}

TEST_F(SharedRolloutTest, AnOperatorsDecisionMadeWhileTheStoreIsDownIsSharedWhenItReturns) {
  Replica a("a", &doc_, clock_), b("b", &doc_, clock_);
  Canary rejecting(1, clock_, &a.proxies);
  OfferV2After({&a, &b}, {&rejecting});
  rejecting.Take(v2_, "bad");
  a.controller.Check();
  b.controller.Check();
  ASSERT_EQ(a.Stage(), "held");
  ASSERT_EQ(b.Stage(), "held");
  doc_.SetUnavailable(true);
  nlohmann::json answer = b.controller.Promote();
  EXPECT_EQ(answer["done"], true);
  EXPECT_EQ(answer["shared"], false);
  EXPECT_EQ(b.Everyone(), v2_->version()) << "applied here at once";
  clock_.Advance(absl::Seconds(1));
  a.controller.Check();
  EXPECT_EQ(a.Stage(), "held") << "a cannot know yet";
  doc_.SetUnavailable(false);
  b.controller.Check();  // shared now, over a's hold
  EXPECT_EQ(b.controller.ToJson()["decisions"]["unshared"], "");
  clock_.Advance(absl::Seconds(1));
  a.controller.Check();
  EXPECT_EQ(a.Stage(), "idle");
  EXPECT_EQ(a.Everyone(), v2_->version());
}

// The rollouts of node groups with policies of their own, beside the one
// of every other group, on one replica's caches and one ledger.
TEST(GroupRolloutTest, EachGroupWithAPolicyOfItsOwnRollsOutAlone) {
  SimulatedClock clock;
  InMemorySharedDocument doc;
  MetricsRegistry metrics;
  ProxyRegistry proxies;
  SnapshotCache staged, serving;
  auto controller = [&](std::string group, RolloutPolicy policy) {
    return std::make_unique<RolloutController>(
        RolloutController::Options{.policy = policy,
                                   .group = std::move(group),
                                   .check_interval = absl::Hours(1),  // checked by hand
                                   .shared = &doc,
                                   .replica_id = "a"},
        &staged, &serving, &proxies, clock, &metrics);
  };
  const RolloutPolicy canaries_by_metadata{
      .metadata_key = "canary", .metadata_value = "yes", .bake = absl::Seconds(60)};
  auto rest = controller("", canaries_by_metadata);
  auto edge = controller("edge", {.metadata_key = "canary",
                                  .metadata_value = "yes",
                                  .bake = absl::Seconds(10),
                                  .ack_timeout = absl::Seconds(30)});
  auto internal = controller("internal", {});  // off: no canaries
  StatusMap edge_held;
  edge->OnHeldStatuses([&](StatusMap statuses) { edge_held = std::move(statuses); });
  for (auto* c : {rest.get(), edge.get(), internal.get()}) c->Start();
  Canary rest_canary(1, clock, &proxies), edge_canary(2, clock, &proxies, "edge");
  auto seen = [&](const std::string& key) { return serving.Current(key).snapshot->version(); };

  const SnapshotPtr v1 = LedgerVersion(1), v2 = LedgerVersion(2);
  staged.Set(staged.default_group(), v1);
  rest_canary.Take(v1);
  edge_canary.Take(v1);
  staged.Set(staged.default_group(), v2);
  EXPECT_EQ(seen("default"), v1->version());
  EXPECT_EQ(seen("edge"), v1->version()) << "edge has a stable snapshot of its own";
  EXPECT_EQ(seen(CanaryKey("")), v2->version());
  EXPECT_EQ(seen(CanaryKey("edge")), v2->version());
  EXPECT_EQ(seen("internal"), v2->version()) << "a group without canaries gets it at once";
  EXPECT_EQ(seen("other"), v1->version()) << "other groups follow the default group";

  rest_canary.Take(v2);
  edge_canary.Take(v2, "rejected by edge");
  rest->Check();
  edge->Check();
  EXPECT_EQ(edge->ToJson()["stage"], "held");
  EXPECT_EQ(rest->ToJson()["stage"], "baking") << "edge's hold is edge's alone";
  EXPECT_EQ(seen(CanaryKey("edge")), v1->version()) << "edge's canaries went back";
  EXPECT_EQ(edge->ToJson()["held_objects"], nlohmann::json::array({"Upstream ns/a"}));
  ASSERT_EQ(edge_held.size(), 1u);
  EXPECT_TRUE(absl::StrContains(edge_held.begin()->second.reasons.at(0).message,
                                "node group edge: 1 of 1 canaries rejected"))
      << edge_held.begin()->second.reasons.at(0).message;

  clock.Advance(absl::Seconds(60));
  rest->Check();
  edge->Check();
  EXPECT_EQ(rest->ToJson()["stage"], "idle");
  EXPECT_EQ(seen("default"), v2->version()) << "promoted for every group without its own";
  EXPECT_EQ(seen("edge"), v1->version()) << "still held for edge";
  // One ledger, a decision per rollout about the same candidate.
  RolloutLedger ledger(&doc);
  absl::StatusOr<std::optional<RolloutDecision>> rest_decision = ledger.Find(v2->version(), "");
  absl::StatusOr<std::optional<RolloutDecision>> edge_decision = ledger.Find(v2->version(), "edge");
  ASSERT_TRUE(rest_decision.ok() && rest_decision->has_value());
  ASSERT_TRUE(edge_decision.ok() && edge_decision->has_value());
  EXPECT_EQ((*rest_decision)->action, Action::kPromote);
  EXPECT_EQ((*edge_decision)->action, Action::kHold);
  EXPECT_EQ((*edge_decision)->group, "edge");
  for (auto* c : {rest.get(), edge.get(), internal.get()}) c->Stop();
}

}  // namespace
}  // namespace holdfast
