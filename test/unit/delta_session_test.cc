#include "src/xds/delta_session.h"

#include <algorithm>

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
  session_.OnSnapshot(Build({EdsCluster("a"), Endpoints("a", 1), EdsCluster("b"), Endpoints("b", 1)}));
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

TEST_F(DeltaSessionTest, InitialResourceVersionsAvoidResends) {
  auto a = EdsCluster("a");
  session_.OnSnapshot(Build({a, Endpoints("a", 1), EdsCluster("b"), Endpoints("b", 1)}));
  DeltaDiscoveryRequest request = Request(type_url::kCluster);
  (*request.mutable_initial_resource_versions())["a"] = a->version();      // current
  (*request.mutable_initial_resource_versions())["b"] = "stale";           // outdated
  (*request.mutable_initial_resource_versions())["gone"] = "whatever";     // deleted meanwhile
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
  SnapshotPtr changed = Build({EdsCluster("c1"), Endpoints("c1", 81), EdsCluster("c2"),
                               Endpoints("c2", 80)});
  session_.OnSnapshot(changed);
  other.OnSnapshot(changed);
  auto mine = session_.NextResponse();
  auto theirs = other.NextResponse();
  ASSERT_TRUE(mine.has_value() && theirs.has_value());
  EXPECT_EQ(Names(*mine), std::vector<std::string>{"c1"});
  EXPECT_EQ(mine->list, theirs->list) << "computed once for both";
}

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
      EXPECT_EQ(subscription.names().names(), step.expected_names)
          << c.label;
    }
  }
}

}  // namespace
}  // namespace holdfast
