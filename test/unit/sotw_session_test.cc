#include "src/xds/sotw_session.h"

#include <numeric>

#include "gtest/gtest.h"
#include "test/unit/test_resources.h"

namespace holdfast {
namespace {

using envoy::service::discovery::v3::DiscoveryRequest;
using testing::Build;
using testing::Chain;
using testing::EdsCluster;
using testing::Endpoints;
using testing::RouteConfig;

class SotwSessionTest : public ::testing::Test {
 protected:
  DiscoveryRequest Request(absl::string_view type, std::vector<std::string> names = {},
                           std::string nonce = "", std::string version = "") {
    DiscoveryRequest request;
    request.set_type_url(std::string(type));
    for (auto& n : names) request.add_resource_names(n);
    request.set_response_nonce(nonce);
    request.set_version_info(version);
    return request;
  }
  std::vector<std::string> Names(const Response& r) {
    std::vector<std::string> names;
    for (const auto& res : r.resources()) names.push_back(res->name());
    return names;
  }

  SimulatedClock clock_;
  MetricsRegistry metrics_;
  XdsStats stats_{&metrics_};
  ProxyState proxy_{1, "ads-sotw", "test", absl::UnixEpoch()};
  ViewCache views_;
  SotwSession session_{"", clock_, &proxy_, &stats_, &views_};
};

// A push is measured from the snapshot's publication, or from the request
// asking for it when that came later, to the ACK.
TEST_F(SotwSessionTest, AnAckRecordsHowLongThePushTook) {
  session_.OnSnapshot(Chain("1", 80));  // published long before the request
  ASSERT_TRUE(session_.OnRequest(Request(type_url::kCluster)).ok());
  auto first = session_.NextResponse();
  ASSERT_TRUE(first.has_value());
  clock_.Advance(absl::Milliseconds(200));
  ASSERT_TRUE(
      session_.OnRequest(Request(type_url::kCluster, {}, first->nonce, first->version)).ok());

  clock_.Advance(absl::Seconds(5));
  auto changed = Snapshot::Build({EdsCluster("c9"), Endpoints("c9", 80)}, clock_.Now());
  ASSERT_TRUE(changed.ok());
  clock_.Advance(absl::Milliseconds(50));  // published, then delivered
  session_.OnSnapshot(*changed);
  auto second = session_.NextResponse();
  ASSERT_TRUE(second.has_value());
  clock_.Advance(absl::Milliseconds(30));
  ASSERT_TRUE(
      session_.OnRequest(Request(type_url::kCluster, {}, second->nonce, second->version)).ok());

  Histogram* push = metrics_.GetHistogram("holdfast_xds_push_seconds", "",
                                          {{"type_url", std::string(type_url::kCluster)}}, {});
  std::vector<uint64_t> counts = push->Counts();
  EXPECT_EQ(std::accumulate(counts.begin(), counts.end(), uint64_t{0}), 2u);
  EXPECT_NEAR(push->sum(), 0.2 + 0.08, 1e-9);
}

TEST_F(SotwSessionTest, NothingBeforeASnapshot) {
  ASSERT_TRUE(session_.OnRequest(Request(type_url::kCluster)).ok());
  EXPECT_FALSE(session_.NextResponse().has_value());
}

TEST_F(SotwSessionTest, WildcardAckAndUpdate) {
  session_.OnSnapshot(Chain("1", 80));
  ASSERT_TRUE(session_.OnRequest(Request(type_url::kCluster)).ok());
  auto first = session_.NextResponse();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(Names(*first), std::vector<std::string>{"c1"});
  EXPECT_FALSE(session_.NextResponse().has_value());

  ASSERT_TRUE(
      session_.OnRequest(Request(type_url::kCluster, {}, first->nonce, first->version)).ok());
  EXPECT_FALSE(session_.NextResponse().has_value()) << "an ACK needs no answer";
  EXPECT_EQ(proxy_.View().types[std::string(type_url::kCluster)].acked_version, first->version);

  session_.OnSnapshot(Chain("1", 81));  // only endpoints changed
  EXPECT_FALSE(session_.NextResponse().has_value()) << "CDS did not change";

  session_.OnSnapshot(Build({EdsCluster("c1", 5), Endpoints("c1", 81)}));
  auto second = session_.NextResponse();
  ASSERT_TRUE(second.has_value());
  EXPECT_NE(second->version, first->version);
  EXPECT_NE(second->nonce, first->nonce);
}

TEST_F(SotwSessionTest, FullStateTypeAnsweredEvenWhenEmpty) {
  session_.OnSnapshot(Build({}));
  ASSERT_TRUE(session_.OnRequest(Request(type_url::kListener, {"nothing"})).ok());
  auto response = session_.NextResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_TRUE(response->resources().empty());
}

TEST_F(SotwSessionTest, FullStateTypeTellsAtOnceThatANewNameDoesNotExist) {
  session_.OnSnapshot(Chain("1", 80));
  ASSERT_TRUE(session_.OnRequest(Request(type_url::kCluster, {"c1"})).ok());
  auto first = session_.NextResponse();
  ASSERT_TRUE(first.has_value());
  ASSERT_TRUE(session_.OnRequest(Request(type_url::kCluster, {"c1"}, first->nonce)).ok());
  EXPECT_FALSE(session_.NextResponse().has_value());
  // Asking for a cluster that does not exist is answered (without it).
  ASSERT_TRUE(session_.OnRequest(Request(type_url::kCluster, {"c1", "ghost"}, first->nonce)).ok());
  auto answer = session_.NextResponse();
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(Names(*answer), std::vector<std::string>{"c1"});
  ASSERT_TRUE(session_.OnRequest(Request(type_url::kCluster, {"c1", "ghost"}, answer->nonce)).ok());
  EXPECT_FALSE(session_.NextResponse().has_value()) << "answered once, not in a loop";
}

TEST_F(SotwSessionTest, NamesRequestedBeforeTheyExistAreSentWhenTheyAppear) {
  session_.OnSnapshot(Build({}));
  ASSERT_TRUE(session_.OnRequest(Request(type_url::kRouteConfiguration, {"r1"})).ok());
  EXPECT_FALSE(session_.NextResponse().has_value());
  session_.OnSnapshot(Chain("1", 80));
  auto response = session_.NextResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(Names(*response), std::vector<std::string>{"r1"});
}

TEST_F(SotwSessionTest, NackIsRecordedAndNotAnsweredWithTheSameVersion) {
  session_.OnSnapshot(Chain("1", 80));
  ASSERT_TRUE(session_.OnRequest(Request(type_url::kCluster)).ok());
  auto sent = session_.NextResponse();
  ASSERT_TRUE(sent.has_value());
  DiscoveryRequest nack = Request(type_url::kCluster, {}, sent->nonce, "");
  nack.mutable_error_detail()->set_code(3);
  nack.mutable_error_detail()->set_message("cluster c1: bad");
  ASSERT_TRUE(session_.OnRequest(nack).ok());
  EXPECT_FALSE(session_.NextResponse().has_value()) << "must not re-send a rejected version";

  TypeProgress progress = proxy_.View().types[std::string(type_url::kCluster)];
  ASSERT_TRUE(progress.nack.has_value());
  EXPECT_EQ(progress.nack->version, sent->version);
  EXPECT_EQ(progress.nack->error, "cluster c1: bad");
  EXPECT_EQ(progress.nacks, 1u);

  session_.OnSnapshot(Build({EdsCluster("c1", 7), Endpoints("c1", 80)}));
  EXPECT_TRUE(session_.NextResponse().has_value()) << "a newer version is sent";
}

TEST_F(SotwSessionTest, StaleNonceIsIgnored) {
  session_.OnSnapshot(Chain("1", 80));
  ASSERT_TRUE(session_.OnRequest(Request(type_url::kRouteConfiguration, {"r1"})).ok());
  auto first = session_.NextResponse();
  ASSERT_TRUE(first.has_value());
  session_.OnSnapshot(Build({testing::ApiListener("l1", "r1"), RouteConfig("r1", "other")}));
  auto second = session_.NextResponse();
  ASSERT_TRUE(second.has_value());
  // A late reply to the first response, asking for nothing: stale, ignored.
  ASSERT_TRUE(session_.OnRequest(Request(type_url::kRouteConfiguration, {}, first->nonce)).ok());
  EXPECT_FALSE(session_.NextResponse().has_value());
  EXPECT_EQ(proxy_.View().types[std::string(type_url::kRouteConfiguration)].acks, 0u);
}

TEST_F(SotwSessionTest, ReconnectingClientVersionIsNotTrusted) {
  auto snapshot = Chain("1", 80);
  session_.OnSnapshot(snapshot);
  // The client claims to hold the current version, with no nonce.
  ASSERT_TRUE(
      session_
          .OnRequest(Request(type_url::kCluster, {}, "", snapshot->TypeVersion(type_url::kCluster)))
          .ok());
  EXPECT_TRUE(session_.NextResponse().has_value());
}

TEST_F(SotwSessionTest, AdsSendsInMakeBeforeBreakOrder) {
  for (auto type : {type_url::kRouteConfiguration, type_url::kListener,
                    type_url::kClusterLoadAssignment, type_url::kCluster}) {
    std::vector<std::string> names;
    if (type == type_url::kRouteConfiguration) names = {"r1"};
    if (type == type_url::kClusterLoadAssignment) names = {"c1"};
    ASSERT_TRUE(session_.OnRequest(Request(type, names)).ok());
  }
  session_.OnSnapshot(Chain("1", 80));
  std::vector<std::string> order;
  while (auto r = session_.NextResponse()) order.push_back(r->type_url);
  EXPECT_EQ(order,
            (std::vector<std::string>{
                std::string(type_url::kCluster), std::string(type_url::kClusterLoadAssignment),
                std::string(type_url::kListener), std::string(type_url::kRouteConfiguration)}));
}

TEST_F(SotwSessionTest, StaleClustersAreRemovedLast) {
  ASSERT_TRUE(session_.OnRequest(Request(type_url::kCluster)).ok());
  ASSERT_TRUE(session_.OnRequest(Request(type_url::kListener)).ok());
  session_.OnSnapshot(Chain("1", 80));
  while (session_.NextResponse()) {
  }
  // Move the listener from c1 to c2: c2 must arrive before the listener,
  // c1 must stay until after it.
  session_.OnSnapshot(Chain("2", 80));
  std::vector<std::pair<std::string, std::vector<std::string>>> sent;
  while (auto r = session_.NextResponse()) sent.push_back({r->type_url, Names(*r)});
  ASSERT_EQ(sent.size(), 3u);
  EXPECT_EQ(sent[0].first, type_url::kCluster);
  EXPECT_EQ(sent[0].second, (std::vector<std::string>{"c1", "c2"}));
  EXPECT_EQ(sent[1].first, type_url::kListener);
  EXPECT_EQ(sent[2].first, type_url::kCluster);
  EXPECT_EQ(sent[2].second, (std::vector<std::string>{"c2"}));
}

TEST_F(SotwSessionTest, EndpointsGoOutIncrementallyAndSharedAcrossStreams) {
  auto two = [](int port_1, int port_2) {
    return Build(
        {EdsCluster("c1"), Endpoints("c1", port_1), EdsCluster("c2"), Endpoints("c2", port_2)});
  };
  ProxyState other_proxy{2, "ads-sotw", "test", absl::UnixEpoch()};
  SotwSession other{"", clock_, &other_proxy, &stats_, &views_};
  SnapshotPtr initial = two(80, 80);
  for (SotwSession* s : {&session_, &other}) {
    s->OnSnapshot(initial);
    ASSERT_TRUE(s->OnRequest(Request(type_url::kClusterLoadAssignment, {"c1", "c2"})).ok());
  }
  auto first = session_.NextResponse();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(Names(*first), (std::vector<std::string>{"c1", "c2"})) << "the first answer is whole";
  auto other_first = other.NextResponse();
  ASSERT_TRUE(other_first.has_value());
  EXPECT_EQ(first->list, other_first->list) << "one list for equal subscriptions";

  SnapshotPtr changed = two(81, 80);
  session_.OnSnapshot(changed);
  other.OnSnapshot(changed);
  auto update = session_.NextResponse();
  ASSERT_TRUE(update.has_value());
  EXPECT_EQ(Names(*update), std::vector<std::string>{"c1"}) << "only what changed";
  EXPECT_EQ(update->version, changed->TypeVersion(type_url::kClusterLoadAssignment));
  auto other_update = other.NextResponse();
  ASSERT_TRUE(other_update.has_value());
  EXPECT_EQ(update->list, other_update->list) << "the change is computed once";

  session_.OnSnapshot(
      Build({EdsCluster("c1", 9), Endpoints("c1", 81), EdsCluster("c2"), Endpoints("c2", 80)}));
  EXPECT_FALSE(session_.NextResponse().has_value()) << "no endpoint changed";
}

TEST_F(SotwSessionTest, EndpointsAskedForAgainAreSentAgain) {
  session_.OnSnapshot(
      Build({EdsCluster("c1"), Endpoints("c1", 80), EdsCluster("c2"), Endpoints("c2", 80)}));
  ASSERT_TRUE(session_.OnRequest(Request(type_url::kClusterLoadAssignment, {"c1", "c2"})).ok());
  auto first = session_.NextResponse();
  ASSERT_TRUE(first.has_value());
  ASSERT_TRUE(
      session_.OnRequest(Request(type_url::kClusterLoadAssignment, {"c1"}, first->nonce)).ok());
  EXPECT_FALSE(session_.NextResponse().has_value()) << "dropping a name needs no answer";
  ASSERT_TRUE(
      session_.OnRequest(Request(type_url::kClusterLoadAssignment, {"c1", "c2"}, first->nonce))
          .ok());
  auto again = session_.NextResponse();
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(Names(*again), std::vector<std::string>{"c2"}) << "only the name asked for again";
}

TEST(SotwSessionFixedTypeTest, PerTypeServiceRejectsOtherTypes) {
  SimulatedClock clock;
  MetricsRegistry metrics;
  XdsStats stats(&metrics);
  ProxyState proxy(1, "cds-sotw", "", absl::UnixEpoch());
  ViewCache views;
  SotwSession session(std::string(type_url::kCluster), clock, &proxy, &stats, &views);
  DiscoveryRequest request;
  request.set_type_url(std::string(type_url::kListener));
  EXPECT_EQ(session.OnRequest(request).code(), absl::StatusCode::kInvalidArgument);
  request.clear_type_url();  // empty means the service's type
  EXPECT_TRUE(session.OnRequest(request).ok());
}

}  // namespace
}  // namespace holdfast
