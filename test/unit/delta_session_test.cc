#include "src/xds/delta_session.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "test/unit/test_resources.h"

namespace holdfast {
namespace {

using envoy::service::discovery::v3::DeltaDiscoveryRequest;
using testing::Build;
using testing::Chain;
using testing::EdsCluster;
using testing::Endpoints;

class DeltaSessionTest : public ::testing::Test {
 protected:
  DeltaDiscoveryRequest Request(absl::string_view type, std::vector<std::string> subscribe = {},
                                std::vector<std::string> unsubscribe = {}, std::string nonce = "") {
    DeltaDiscoveryRequest request;
    request.set_type_url(std::string(type));
    for (auto& n : subscribe) request.add_resource_names_subscribe(n);
    for (auto& n : unsubscribe) request.add_resource_names_unsubscribe(n);
    request.set_response_nonce(nonce);
    return request;
  }
  static std::vector<std::string> Names(const Response& r) {
    std::vector<std::string> names;
    for (const auto& res : r.resources()) names.push_back(res->name());
    return names;
  }

  SimulatedClock clock_;
  MetricsRegistry metrics_;
  XdsStats stats_{&metrics_};
  ProxyState proxy_{1, "ads-delta", "test", absl::UnixEpoch()};
  ViewCache views_;
  DeltaSession session_{"", clock_, &proxy_, &stats_, &views_};
};

TEST_F(DeltaSessionTest, WildcardSendsOnlyChangesAndRemovals) {
  session_.OnSnapshot(
      Build({EdsCluster("a"), Endpoints("a", 1), EdsCluster("b"), Endpoints("b", 1)}));
  ASSERT_TRUE(session_.OnRequest(Request(type_url::kCluster)).ok());
  auto first = session_.NextResponse();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(Names(*first), (std::vector<std::string>{"a", "b"}));
  ASSERT_TRUE(session_.OnRequest(Request(type_url::kCluster, {}, {}, first->nonce)).ok());
  EXPECT_FALSE(session_.NextResponse().has_value());

  session_.OnSnapshot(Build({EdsCluster("a", 9), Endpoints("a", 1)}));
  auto second = session_.NextResponse();
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(Names(*second), std::vector<std::string>{"a"});
  EXPECT_EQ(second->removed, std::vector<std::string>{"b"});
}

TEST_F(DeltaSessionTest, AnAckRecordsHowLongThePushTook) {
  session_.OnSnapshot(Build({EdsCluster("a"), Endpoints("a", 1)}));  // long before
  ASSERT_TRUE(session_.OnRequest(Request(type_url::kCluster)).ok());
  auto first = session_.NextResponse();
  ASSERT_TRUE(first.has_value());
  clock_.Advance(absl::Milliseconds(120));
  ASSERT_TRUE(session_.OnRequest(Request(type_url::kCluster, {}, {}, first->nonce)).ok());

  clock_.Advance(absl::Seconds(3));
  auto changed = Snapshot::Build({EdsCluster("a", 9), Endpoints("a", 1)}, clock_.Now());
  ASSERT_TRUE(changed.ok());
  clock_.Advance(absl::Milliseconds(40));
  session_.OnSnapshot(*changed);
  auto second = session_.NextResponse();
  ASSERT_TRUE(second.has_value());
  clock_.Advance(absl::Milliseconds(10));
  DeltaDiscoveryRequest nack = Request(type_url::kCluster, {}, {}, second->nonce);
  nack.mutable_error_detail()->set_message("rejected");
  ASSERT_TRUE(session_.OnRequest(nack).ok());

  Histogram* push = metrics_.GetHistogram("holdfast_xds_push_seconds", "",
                                          {{"type_url", std::string(type_url::kCluster)}}, {});
  std::vector<uint64_t> counts = push->Counts();
  EXPECT_EQ(std::accumulate(counts.begin(), counts.end(), uint64_t{0}), 1u)
      << "a NACKed push is not a push";
  EXPECT_NEAR(push->sum(), 0.12, 1e-9);
}

TEST_F(DeltaSessionTest, InitialResourceVersionsAvoidResends) {
  auto a = EdsCluster("a");
  session_.OnSnapshot(Build({a, Endpoints("a", 1), EdsCluster("b"), Endpoints("b", 1)}));
  DeltaDiscoveryRequest request = Request(type_url::kCluster);
  (*request.mutable_initial_resource_versions())["a"] = a->version();   // current
  (*request.mutable_initial_resource_versions())["b"] = "stale";        // outdated
  (*request.mutable_initial_resource_versions())["gone"] = "whatever";  // deleted meanwhile
  ASSERT_TRUE(session_.OnRequest(request).ok());
  auto response = session_.NextResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(Names(*response), std::vector<std::string>{"b"});
  EXPECT_EQ(response->removed, std::vector<std::string>{"gone"});
}

TEST_F(DeltaSessionTest, NamedSubscribeBeforeExistsAndUnsubscribe) {
  session_.OnSnapshot(Build({}));
  ASSERT_TRUE(session_.OnRequest(Request(type_url::kClusterLoadAssignment, {"x"})).ok());
  EXPECT_FALSE(session_.NextResponse().has_value());
  session_.OnSnapshot(Build({EdsCluster("x"), Endpoints("x", 1)}));
  auto response = session_.NextResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(Names(*response), std::vector<std::string>{"x"});

  ASSERT_TRUE(session_.OnRequest(Request(type_url::kClusterLoadAssignment, {}, {"x"})).ok());
  EXPECT_FALSE(session_.NextResponse().has_value()) << "unsubscribing sends no removal";
  session_.OnSnapshot(Build({EdsCluster("x"), Endpoints("x", 2)}));
  EXPECT_FALSE(session_.NextResponse().has_value()) << "unsubscribed names are not sent";
}

TEST_F(DeltaSessionTest, NackRecordedWithoutResend) {
  session_.OnSnapshot(Chain("1", 80));
  ASSERT_TRUE(session_.OnRequest(Request(type_url::kCluster)).ok());
  auto sent = session_.NextResponse();
  ASSERT_TRUE(sent.has_value());
  DeltaDiscoveryRequest nack = Request(type_url::kCluster, {}, {}, sent->nonce);
  nack.mutable_error_detail()->set_message("rejected c1");
  ASSERT_TRUE(session_.OnRequest(nack).ok());
  EXPECT_FALSE(session_.NextResponse().has_value());
  auto progress = proxy_.View().types[std::string(type_url::kCluster)];
  ASSERT_TRUE(progress.nack.has_value());
  EXPECT_EQ(progress.nack->error, "rejected c1");
}

TEST_F(DeltaSessionTest, EmptyWildcardIsAnsweredOnce) {
  session_.OnSnapshot(Build({}));
  ASSERT_TRUE(session_.OnRequest(Request(type_url::kListener)).ok());
  auto response = session_.NextResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_TRUE(response->resources().empty());
  EXPECT_FALSE(session_.NextResponse().has_value());
}

TEST_F(DeltaSessionTest, ClusterRemovalWaitsForListeners) {
  ASSERT_TRUE(session_.OnRequest(Request(type_url::kCluster)).ok());
  ASSERT_TRUE(session_.OnRequest(Request(type_url::kListener)).ok());
  session_.OnSnapshot(Chain("1", 80));
  while (session_.NextResponse()) {
  }
  session_.OnSnapshot(Chain("2", 80));
  std::vector<Response> sent;
  while (auto r = session_.NextResponse()) sent.push_back(*r);
  ASSERT_EQ(sent.size(), 3u);
  EXPECT_EQ(sent[0].type_url, type_url::kCluster);
  EXPECT_EQ(Names(sent[0]), std::vector<std::string>{"c2"});
  EXPECT_TRUE(sent[0].removed.empty());
  EXPECT_EQ(sent[1].type_url, type_url::kListener);
  EXPECT_EQ(sent[2].type_url, type_url::kCluster);
  EXPECT_EQ(sent[2].removed, std::vector<std::string>{"c1"});
}

TEST_F(DeltaSessionTest, StreamsAtTheSameStateShareTheChange) {
  ProxyState other_proxy{2, "ads-delta", "test", absl::UnixEpoch()};
  DeltaSession other{"", clock_, &other_proxy, &stats_, &views_};
  SnapshotPtr initial =
      Build({EdsCluster("c1"), Endpoints("c1", 80), EdsCluster("c2"), Endpoints("c2", 80)});
  for (DeltaSession* s : {&session_, &other}) {
    s->OnSnapshot(initial);
    ASSERT_TRUE(s->OnRequest(Request(type_url::kClusterLoadAssignment, {"c1", "c2"})).ok());
    auto first = s->NextResponse();
    ASSERT_TRUE(first.has_value());
    EXPECT_EQ(Names(*first), (std::vector<std::string>{"c1", "c2"}));
  }
  SnapshotPtr changed =
      Build({EdsCluster("c1"), Endpoints("c1", 81), EdsCluster("c2"), Endpoints("c2", 80)});
  session_.OnSnapshot(changed);
  other.OnSnapshot(changed);
  auto mine = session_.NextResponse();
  auto theirs = other.NextResponse();
  ASSERT_TRUE(mine.has_value() && theirs.has_value());
  EXPECT_EQ(Names(*mine), std::vector<std::string>{"c1"});
  EXPECT_EQ(mine->list, theirs->list) << "computed once for both";
}

// What a delta client asks for and holds, known only from its own requests
// and the responses it got.
struct DeltaClientModel {
  bool seen = false;
  bool wildcard = false;
  std::set<std::string> names;
  std::map<std::string, std::string> held;

  bool Wants(const std::string& name) const { return wildcard || names.contains(name); }
  void Request(const std::vector<std::string>& subscribe,
               const std::vector<std::string>& unsubscribe) {
    if (!seen && subscribe.empty()) wildcard = true;
    seen = true;
    for (const std::string& name : subscribe) {
      if (name == "*")
        wildcard = true;
      else
        names.insert(name);
    }
    for (const std::string& name : unsubscribe) {
      if (name == "*")
        wildcard = false;
      else
        names.erase(name);
    }
    // What it no longer asks for it forgets; no removal is owed for it.
    std::erase_if(held, [this](const auto& entry) { return !Wants(entry.first); });
  }
};

// Random subscription changes, snapshots and responses, answered now or
// later: after every answer the client holds exactly the current version of
// what it asks for, and nothing was sent that it already held (except names
// it subscribed again, which is how a client asks for a resend).
class DeltaSessionRandomTest : public DeltaSessionTest,
                               public ::testing::WithParamInterface<int> {};

TEST_P(DeltaSessionRandomTest, KeepsTheClientExactlyUpToDate) {
  std::mt19937 random(GetParam());
  auto pick = [&](int n) { return static_cast<int>(random() % n); };
  auto random_names = [&](int count) {
    std::vector<std::string> names;
    for (int i = 0; i < count; ++i) {
      names.push_back(pick(25) == 0 ? "*" : absl::StrCat("n", pick(40)));
    }
    return names;
  };
  auto random_snapshot = [&] {
    std::vector<ResourcePtr> resources;
    for (int i = 0; i < 40; ++i) {
      if (pick(4) == 0) continue;
      resources.push_back(EdsCluster(absl::StrCat("n", i)));
      resources.push_back(Endpoints(absl::StrCat("n", i), 1 + pick(3)));
    }
    return Build(std::move(resources));
  };
  DeltaClientModel client;
  SnapshotPtr snapshot = random_snapshot();
  session_.OnSnapshot(snapshot);
  std::set<std::string> resubscribed;
  std::vector<std::string> recent;  // what led to a failure
  for (int step = 0; step < 2000; ++step) {
    if (recent.size() > 60) recent.erase(recent.begin());
    if (pick(5) == 0) {
      snapshot = random_snapshot();
      session_.OnSnapshot(snapshot);
      recent.push_back(absl::StrCat(step, ": snapshot"));
    } else {
      // Mostly a few names; sometimes many, so that both ways of holding a
      // subscription (settled or with pending changes) are exercised.
      std::vector<std::string> subscribe = random_names(pick(8) == 0 ? 20 : pick(3));
      std::vector<std::string> unsubscribe = random_names(pick(8) == 0 ? 20 : pick(3));
      if (step == 0) subscribe = {"n1", "n2", "n3"};
      client.Request(subscribe, unsubscribe);
      recent.push_back(absl::StrCat(step, ": +", absl::StrJoin(subscribe, ","), " -",
                                    absl::StrJoin(unsubscribe, ",")));
      if (client.seen) resubscribed.insert(subscribe.begin(), subscribe.end());
      ASSERT_TRUE(
          session_.OnRequest(Request(type_url::kClusterLoadAssignment, subscribe, unsubscribe))
              .ok());
    }
    if (pick(3) == 0) continue;  // answered later, after more changes
    while (std::optional<Response> response = session_.NextResponse()) {
      recent.push_back(absl::StrCat("  sent ", absl::StrJoin(Names(*response), ","), " removed ",
                                    absl::StrJoin(response->removed, ",")));
      for (const ResourcePtr& resource : response->resources()) {
        auto held = client.held.find(resource->name());
        EXPECT_TRUE(held == client.held.end() || held->second != resource->version() ||
                    resubscribed.contains(resource->name()))
            << "step " << step << ": resent " << resource->name();
        client.held[resource->name()] = resource->version();
      }
      for (const std::string& name : response->removed) {
        EXPECT_TRUE(client.held.erase(name)) << "step " << step << ": removed " << name;
      }
    }
    resubscribed.clear();
    std::map<std::string, std::string> expected;
    for (const auto& [name, resource] : snapshot->Resources(type_url::kClusterLoadAssignment)) {
      if (client.Wants(name)) expected[name] = resource->version();
    }
    ASSERT_EQ(client.held, expected) << "step " << step << "\n" << absl::StrJoin(recent, "\n");
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, DeltaSessionRandomTest, ::testing::Values(1, 2, 3, 20261202));

TEST(SubscriptionTest, SotwWildcardRules) {
  struct Step {
    std::vector<std::string> names;
    bool wildcard;
    std::vector<std::string> expected_names;
  };
  struct Case {
    std::string label;
    std::vector<Step> steps;
  };
  std::vector<Case> cases = {
      {"legacy wildcard stays wildcard", {{{}, true, {}}, {{}, true, {}}}},
      {"legacy wildcard ends with names", {{{}, true, {}}, {{"a"}, false, {"a"}}}},
      {"explicit wildcard with names", {{{"*", "a"}, true, {"a"}}}},
      {"explicit empty after names unsubscribes", {{{"a"}, false, {"a"}}, {{}, false, {}}}},
  };
  for (const Case& c : cases) {
    NameSetPool pool;
    Subscription subscription(&pool);
    for (const Step& step : c.steps) {
      std::vector<absl::string_view> names(step.names.begin(), step.names.end());
      subscription.ApplySotw(names);
      EXPECT_EQ(subscription.wildcard(), step.wildcard) << c.label;
      EXPECT_EQ(subscription.names().names(), step.expected_names) << c.label;
    }
  }
}

// A request that changes a few names must not cost the whole subscription:
// the interned set stays as it is until enough changes pay for folding them.
TEST(SubscriptionTest, DeltaChangesAreKeptBesideTheInternedSetUntilSettled) {
  NameSetPool pool;
  Subscription subscription(&pool);
  Subscription::Names many;
  for (int i = 0; i < 1000; ++i) many.Add(absl::StrCat("n", i));
  subscription.ApplyDelta(many, {});
  EXPECT_TRUE(subscription.settled()) << "a first request settles";
  const NameSetPtr interned = subscription.names_ptr();

  Subscription::Names one;
  one.Add("extra");
  Subscription::Names gone;
  gone.Add("n7");
  subscription.ApplyDelta(one, gone);
  EXPECT_FALSE(subscription.settled());
  EXPECT_EQ(subscription.names_ptr(), interned) << "not re-interned for two names";
  EXPECT_EQ(subscription.size(), 1000u);
  EXPECT_TRUE(subscription.Wants("extra"));
  EXPECT_FALSE(subscription.Wants("n7"));
  EXPECT_TRUE(subscription.Wants("n8"));

  subscription.Settle();
  EXPECT_TRUE(subscription.settled());
  EXPECT_EQ(subscription.names().size(), 1000u);
  EXPECT_TRUE(subscription.names().contains("extra"));
  EXPECT_FALSE(subscription.names().contains("n7"));

  Subscription::Names star;
  star.Add("*");
  EXPECT_TRUE(subscription.AddsWildcard(star, {}));
  EXPECT_FALSE(subscription.AddsWildcard({}, star));
  EXPECT_FALSE(subscription.AddsWildcard(star, star)) << "unsubscribing wins";
}

}  // namespace
}  // namespace holdfast
