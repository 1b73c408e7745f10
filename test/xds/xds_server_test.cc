// The xDS server over real gRPC, driven by scripted clients.
#include "src/xds/xds_server.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "envoy/service/cluster/v3/cds.grpc.pb.h"
#include "gmock/gmock.h"
#include "google/protobuf/wrappers.pb.h"
#include "gtest/gtest.h"
#include "test/unit/test_resources.h"
#include "test/xds/ads_test_client.h"
#include "test/xds/raw_http2_client.h"

namespace holdfast {
namespace {

using envoy::service::discovery::v3::AggregatedDiscoveryService;
using envoy::service::discovery::v3::DeltaDiscoveryRequest;
using envoy::service::discovery::v3::DiscoveryRequest;
using envoy::service::discovery::v3::DiscoveryResponse;
using testing::Build;
using testing::Chain;
using testing::DeltaStream;
using testing::EdsCluster;
using testing::Endpoints;
using testing::SotwStream;

class XdsServerTest : public ::testing::Test {
 protected:
  void SetUp() override { StartServer({}); }

  void StartServer(XdsTlsOptions tls, std::function<void(XdsServerOptions&)> tweak = nullptr) {
    server_.reset();
    XdsServerOptions options;
    options.listen_address = "127.0.0.1:0";
    options.tls = std::move(tls);
    options.metrics = &metrics_;
    if (tweak) tweak(options);
    context_ = StreamContext{&cache_, &proxies_, &stats_, &bodies_,
                             &views_, &grouper_, &clock_, "test-cp"};
    context_.identity = &identity_;
    context_.canaries = &canaries_;
    auto server = XdsServer::Start(options, context_);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
  }

  std::shared_ptr<grpc::Channel> Channel(int index = 0) {
    grpc::ChannelArguments args;
    args.SetInt("holdfast.test.channel", index);  // distinct args: distinct connections
    return grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", server_->port()),
                                     grpc::InsecureChannelCredentials(), args);
  }

  std::unique_ptr<SotwStream> OpenSotw(std::shared_ptr<grpc::Channel> channel = nullptr) {
    if (!channel) channel = Channel();
    auto stub = AggregatedDiscoveryService::NewStub(channel);
    return std::make_unique<SotwStream>(
        [&](grpc::ClientContext* ctx) { return stub->StreamAggregatedResources(ctx); });
  }
  std::unique_ptr<DeltaStream> OpenDelta() {
    auto stub = AggregatedDiscoveryService::NewStub(Channel());
    return std::make_unique<DeltaStream>(
        [&](grpc::ClientContext* ctx) { return stub->DeltaAggregatedResources(ctx); });
  }

  static DiscoveryRequest Req(absl::string_view type, std::vector<std::string> names = {},
                              const DiscoveryResponse* reply_to = nullptr, bool node = false) {
    DiscoveryRequest request;
    request.set_type_url(std::string(type));
    for (auto& n : names) request.add_resource_names(n);
    if (reply_to != nullptr) {
      request.set_response_nonce(reply_to->nonce());
      request.set_version_info(reply_to->version_info());
    }
    if (node) {
      request.mutable_node()->set_id("proxy-1");
      request.mutable_node()->set_cluster("edge");
    }
    return request;
  }

  static std::vector<std::string> Names(const DiscoveryResponse& response) {
    std::vector<std::string> names;
    for (const auto& any : response.resources()) {
      if (any.type_url() == type_url::kCluster) {
        envoy::config::cluster::v3::Cluster c;
        any.UnpackTo(&c);
        names.push_back(c.name());
      } else if (any.type_url() == type_url::kClusterLoadAssignment) {
        envoy::config::endpoint::v3::ClusterLoadAssignment c;
        any.UnpackTo(&c);
        names.push_back(c.cluster_name());
      } else if (any.type_url() == type_url::kListener) {
        envoy::config::listener::v3::Listener l;
        any.UnpackTo(&l);
        names.push_back(l.name());
      } else if (any.type_url() == type_url::kRouteConfiguration) {
        envoy::config::route::v3::RouteConfiguration r;
        any.UnpackTo(&r);
        names.push_back(r.name());
      } else {
        names.push_back(any.type_url());
      }
    }
    return names;
  }

  uint64_t CounterValue(const std::string& name, const MetricLabels& labels = {}) {
    return metrics_.GetCounter(name, "", labels)->value();
  }
  double GaugeValue(const std::string& name) { return metrics_.GetGauge(name, "")->value(); }

  SimulatedClock clock_;
  MetricsRegistry metrics_;
  SnapshotCache cache_;
  ProxyRegistry proxies_;
  XdsStats stats_{&metrics_};
  EncodedBodyCache bodies_;
  ViewCache views_;
  NodeGrouper grouper_ = *NodeGrouper::Parse("cluster", "default");
  ClientIdentityPolicy identity_ = *ClientIdentityPolicy::Parse("none");
  CanaryRouter canaries_;
  StreamContext context_;
  std::unique_ptr<XdsServer> server_;
};

TEST_F(XdsServerTest, SotwAdsServesAChainAndPushesOnlyWhatChanged) {
  cache_.Set("default", Chain("1", 80));
  auto stream = OpenSotw();
  ASSERT_TRUE(stream->Send(Req(type_url::kCluster, {}, nullptr, /*node=*/true)));
  auto cds = stream->Next();
  ASSERT_TRUE(cds.has_value());
  EXPECT_EQ(cds->type_url(), type_url::kCluster);
  EXPECT_EQ(Names(*cds), std::vector<std::string>{"c1"});
  EXPECT_EQ(cds->control_plane().identifier(), "test-cp");
  EXPECT_FALSE(cds->nonce().empty());

  ASSERT_TRUE(stream->Send(Req(type_url::kCluster, {}, &*cds)));  // ACK
  ASSERT_TRUE(stream->Send(Req(type_url::kClusterLoadAssignment, {"c1"})));
  auto eds = stream->Next();
  ASSERT_TRUE(eds.has_value());
  EXPECT_EQ(Names(*eds), std::vector<std::string>{"c1"});
  ASSERT_TRUE(stream->Send(Req(type_url::kClusterLoadAssignment, {"c1"}, &*eds)));

  // Only the endpoints change: only EDS is pushed.
  cache_.Set("default", Chain("1", 81));
  auto update = stream->Next();
  ASSERT_TRUE(update.has_value());
  EXPECT_EQ(update->type_url(), type_url::kClusterLoadAssignment);
  EXPECT_NE(update->version_info(), eds->version_info());
  ASSERT_TRUE(stream->Send(Req(type_url::kClusterLoadAssignment, {"c1"}, &*update)));

  // The proxy's state is visible, with its group from node.cluster.
  ASSERT_TRUE(stream->Send(Req(type_url::kListener)));
  ASSERT_TRUE(stream->Next().has_value());
  std::vector<ProxyView> views = proxies_.List();
  ASSERT_EQ(views.size(), 1u);
  EXPECT_EQ(views[0].node_id, "proxy-1");
  EXPECT_EQ(views[0].group, "edge");
  EXPECT_EQ(views[0].types[std::string(type_url::kCluster)].acked_version, cds->version_info());
  EXPECT_EQ(views[0].types[std::string(type_url::kClusterLoadAssignment)].acked_version,
            update->version_info());
}

// A rollout policy that changes while a proxy is connected moves its
// stream to the canaries' view and back, on the stream it has.
TEST_F(XdsServerTest, AConnectedStreamMovesWhenTheCanaryRuleChanges) {
  cache_.Set("default", Chain("1", 80));
  cache_.Set(CanaryKey(""), Chain("2", 80));
  auto stream = OpenSotw();
  ASSERT_TRUE(stream->Send(Req(type_url::kCluster, {}, nullptr, /*node=*/true)));
  auto stable = stream->Next();
  ASSERT_TRUE(stable.has_value());
  EXPECT_EQ(Names(*stable), std::vector<std::string>{"c1"});
  ASSERT_TRUE(stream->Send(Req(type_url::kCluster, {}, &*stable)));

  canaries_.SetRule([](const envoy::config::core::v3::Node& node, const std::string&) {
    return node.id() == "proxy-1" ? std::optional<std::string>("") : std::nullopt;
  });
  auto candidate = stream->Next();
  ASSERT_TRUE(candidate.has_value());
  EXPECT_EQ(Names(*candidate), std::vector<std::string>{"c2"});
  ASSERT_TRUE(stream->Send(Req(type_url::kCluster, {}, &*candidate)));
  ASSERT_EQ(proxies_.Canaries("").size(), 1u);

  canaries_.SetRule({});
  auto back = stream->Next();
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(Names(*back), std::vector<std::string>{"c1"});
  EXPECT_TRUE(proxies_.Canaries("").empty());
  // It watches its group again: the group's next snapshot reaches it.
  ASSERT_TRUE(stream->Send(Req(type_url::kCluster, {}, &*back)));
  cache_.Set("default", Chain("3", 80));
  auto next = stream->Next();
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(Names(*next), std::vector<std::string>{"c3"});
}

TEST_F(XdsServerTest, NackIsRecordedAndNeverAnsweredWithAResend) {
  cache_.Set("default", Chain("1", 80));
  auto stream = OpenSotw();
  ASSERT_TRUE(stream->Send(Req(type_url::kCluster, {}, nullptr, true)));
  auto cds = stream->Next();
  ASSERT_TRUE(cds.has_value());
  DiscoveryRequest nack = Req(type_url::kCluster);
  nack.set_response_nonce(cds->nonce());
  nack.mutable_error_detail()->set_code(3);
  nack.mutable_error_detail()->set_message("cluster c1: unsupported lb_policy");
  ASSERT_TRUE(stream->Send(nack));
  // Requests are handled in order: had the NACK caused a resend, it would
  // arrive before the answer to this LDS request.
  ASSERT_TRUE(stream->Send(Req(type_url::kListener)));
  auto next = stream->Next();
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->type_url(), type_url::kListener);

  auto progress = proxies_.List()[0].types[std::string(type_url::kCluster)];
  ASSERT_TRUE(progress.nack.has_value());
  EXPECT_EQ(progress.nack->error, "cluster c1: unsupported lb_policy");
  EXPECT_EQ(progress.nack->version, cds->version_info());
  EXPECT_EQ(progress.responses_sent, 1u);
  EXPECT_EQ(
      CounterValue("holdfast_xds_nacks_total", {{"type_url", std::string(type_url::kCluster)}}),
      1u);
}

TEST_F(XdsServerTest, BogusNonceIsIgnored) {
  cache_.Set("default", Chain("1", 80));
  auto stream = OpenSotw();
  ASSERT_TRUE(stream->Send(Req(type_url::kCluster, {}, nullptr, true)));
  auto cds = stream->Next();
  ASSERT_TRUE(cds.has_value());
  DiscoveryRequest bogus = Req(type_url::kCluster, {"c-unknown"});
  bogus.set_response_nonce("no-such-nonce");
  ASSERT_TRUE(stream->Send(bogus));
  ASSERT_TRUE(stream->Send(Req(type_url::kListener)));
  auto next = stream->Next();
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->type_url(), type_url::kListener) << "the bogus request changed nothing";
  EXPECT_EQ(CounterValue("holdfast_xds_stale_requests_total",
                         {{"type_url", std::string(type_url::kCluster)}}),
            1u);
}

TEST_F(XdsServerTest, UnknownTypeUrlsAreServedAsOpaqueResources) {
  const std::string type = "type.googleapis.com/example.v1.Anything";
  google::protobuf::StringValue value;
  value.set_value("payload");
  cache_.Set("default", Build({Resource::FromBytes("thing", type, value.SerializeAsString())}));
  auto stream = OpenSotw();
  ASSERT_TRUE(stream->Send(Req(type, {}, nullptr, true)));
  auto response = stream->Next();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->type_url(), type);
  ASSERT_EQ(response->resources_size(), 1);
  EXPECT_EQ(response->resources(0).type_url(), type);
  EXPECT_EQ(response->resources(0).value(), value.SerializeAsString());
}

TEST_F(XdsServerTest, FirstRequestMustCarryNode) {
  cache_.Set("default", Chain("1", 80));
  auto stream = OpenSotw();
  ASSERT_TRUE(stream->Send(Req(type_url::kCluster)));
  grpc::Status status = stream->AwaitServerFinish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("node"), std::string::npos);
}

// Waits for `condition`, bounded so that a broken server fails instead of
// hanging.
template <typename Condition>
bool Eventually(Condition condition) {
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (!condition()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return true;
}

TEST_F(XdsServerTest, AStreamWithoutARequestIsEndedAndNeverCountedAsAProxy) {
  cache_.Set("default", Chain("1", 80));
  StartServer({}, [](XdsServerOptions& options) {
    options.first_request_timeout = absl::Seconds(30);
    options.check_interval = absl::Milliseconds(20);
  });
  auto silent = OpenSotw();
  ASSERT_TRUE(Eventually([&] { return server_->streams_awaiting_first_request() == 1; }));
  EXPECT_EQ(proxies_.size(), 0u);
  EXPECT_EQ(GaugeValue("holdfast_connected_proxies"), 0);

  // A proxy that asks in time is counted, and is never ended for it.
  auto proxy = OpenSotw(Channel(1));
  ASSERT_TRUE(proxy->Send(Req(type_url::kCluster, {}, nullptr, /*node=*/true)));
  auto first = proxy->Next();
  ASSERT_TRUE(first.has_value());
  ASSERT_TRUE(proxy->Send(Req(type_url::kCluster, {}, &*first)));  // ACK
  EXPECT_EQ(server_->streams_awaiting_first_request(), 1u);
  EXPECT_EQ(proxies_.size(), 1u);
  EXPECT_EQ(GaugeValue("holdfast_connected_proxies"), 1);

  clock_.Advance(absl::Seconds(29));
  EXPECT_EQ(server_->streams_awaiting_first_request(), 1u);
  clock_.Advance(absl::Seconds(1));
  ASSERT_TRUE(silent->AwaitClosed(absl::Seconds(10)));
  grpc::Status status = silent->AwaitServerFinish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_THAT(status.error_message(), ::testing::HasSubstr("no DiscoveryRequest within 30s"));
  // Counted once the check that ended the stream returns, which may be just
  // after the client sees the end.
  EXPECT_TRUE(
      Eventually([&] { return CounterValue("holdfast_xds_first_request_timeouts_total") == 1u; }));
  EXPECT_EQ(server_->streams_awaiting_first_request(), 0u);

  cache_.Set("default", Chain("2", 81));
  EXPECT_TRUE(proxy->Next().has_value()) << "the proxy's stream was ended";
  EXPECT_EQ(proxies_.size(), 1u);
  EXPECT_EQ(GaugeValue("holdfast_connected_proxies"), 1);
}

TEST_F(XdsServerTest, ARejectedFirstRequestIsNotCountedAsAProxy) {
  auto stream = OpenSotw();
  ASSERT_TRUE(stream->Send(Req(type_url::kCluster)));  // no node
  EXPECT_EQ(stream->AwaitServerFinish().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(CounterValue("holdfast_xds_streams_opened_total", {{"kind", "ads-sotw"}}), 0u);
  EXPECT_EQ(GaugeValue("holdfast_connected_proxies"), 0);
}

// Reads from a raw connection until the server closes it; false if it is
// still open after `deadline`.
bool ClosedByServer(int fd, absl::Duration deadline) {
  timeval timeout = absl::ToTimeval(deadline);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  char buffer[512];
  const absl::Time end = absl::Now() + deadline;
  while (absl::Now() < end) {
    ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    if (n == 0 || (n < 0 && errno == ECONNRESET)) return true;
    if (n < 0 && errno != EINTR) return false;  // timed out
  }
  return false;
}

int ConnectRaw(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(port);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

TEST_F(XdsServerTest, ASilentConnectionIsClosedAfterTheHandshakeTimeout) {
  StartServer(
      {}, [](XdsServerOptions& options) { options.handshake_timeout = absl::Milliseconds(300); });
  const int fd = ConnectRaw(server_->port());
  ASSERT_GE(fd, 0);
  EXPECT_TRUE(ClosedByServer(fd, absl::Seconds(20)));
  close(fd);
}

TEST_F(XdsServerTest, AConnectionThatNeverOpensAStreamIsClosed) {
  StartServer({}, [](XdsServerOptions& options) {
    options.first_request_timeout = absl::Milliseconds(500);
  });
  const int fd = ConnectRaw(server_->port());
  ASSERT_GE(fd, 0);
  // The HTTP/2 preface and an empty SETTINGS frame: a connection, no stream.
  const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\4\0\0\0\0\0";
  ASSERT_EQ(send(fd, preface, sizeof(preface) - 1, 0), static_cast<ssize_t>(sizeof(preface) - 1));
  EXPECT_TRUE(ClosedByServer(fd, absl::Seconds(20)));
  close(fd);
}

TEST_F(XdsServerTest, ListenerStartsAcceptingWithOneGeneration) {
  EXPECT_TRUE(server_->ListenerStatus().accepting);
  EXPECT_EQ(server_->generations(), 1u);
  EXPECT_TRUE(Eventually([&] { return GaugeValue("holdfast_open_fds_limit") > 0; }));
  EXPECT_EQ(GaugeValue("holdfast_xds_accepting"), 1);
  EXPECT_GT(GaugeValue("holdfast_open_fds"), 0);
}

TEST_F(XdsServerTest, DeltaAdsWithInitialVersionsRemovalsAndUnsubscribe) {
  auto a = EdsCluster("a");
  cache_.Set("default", Build({a, Endpoints("a", 1), EdsCluster("b"), Endpoints("b", 1)}));
  auto stream = OpenDelta();
  DeltaDiscoveryRequest first;
  first.set_type_url(std::string(type_url::kCluster));
  first.mutable_node()->set_id("delta-proxy");
  (*first.mutable_initial_resource_versions())["a"] = a->version();
  (*first.mutable_initial_resource_versions())["old"] = "x";
  ASSERT_TRUE(stream->Send(first));
  auto response = stream->Next();
  ASSERT_TRUE(response.has_value());
  ASSERT_EQ(response->resources_size(), 1);
  EXPECT_EQ(response->resources(0).name(), "b");
  EXPECT_EQ(response->resources(0).version(), EdsCluster("b")->version());
  EXPECT_EQ(std::vector<std::string>(response->removed_resources().begin(),
                                     response->removed_resources().end()),
            std::vector<std::string>{"old"});

  DeltaDiscoveryRequest ack;
  ack.set_type_url(std::string(type_url::kCluster));
  ack.set_response_nonce(response->nonce());
  ASSERT_TRUE(stream->Send(ack));

  DeltaDiscoveryRequest eds;
  eds.set_type_url(std::string(type_url::kClusterLoadAssignment));
  eds.add_resource_names_subscribe("a");
  eds.add_resource_names_subscribe("later");
  ASSERT_TRUE(stream->Send(eds));
  auto eds_response = stream->Next();
  ASSERT_TRUE(eds_response.has_value());
  EXPECT_EQ(eds_response->resources_size(), 1);

  // "later" appears: it is sent, because it was asked for before it existed.
  cache_.Set("default", Build({a, Endpoints("a", 1), EdsCluster("later"), Endpoints("later", 3)}));
  // Cluster "b" is gone too; its removal comes last (make before break).
  std::vector<std::string> seen;
  for (int i = 0; i < 3; ++i) {
    auto r = stream->Next();
    ASSERT_TRUE(r.has_value());
    for (const auto& res : r->resources()) seen.push_back(r->type_url() + " +" + res.name());
    for (const auto& name : r->removed_resources()) seen.push_back(r->type_url() + " -" + name);
  }
  EXPECT_EQ(seen, (std::vector<std::string>{
                      std::string(type_url::kCluster) + " +later",
                      std::string(type_url::kClusterLoadAssignment) + " +later",
                      std::string(type_url::kCluster) + " -b",
                  }));
}

TEST_F(XdsServerTest, PerTypeServiceServesItsTypeOnly) {
  cache_.Set("default", Chain("1", 80));
  auto stub = envoy::service::cluster::v3::ClusterDiscoveryService::NewStub(Channel());
  SotwStream stream([&](grpc::ClientContext* ctx) { return stub->StreamClusters(ctx); });
  DiscoveryRequest request = Req("", {}, nullptr, true);  // empty type: the service's
  ASSERT_TRUE(stream.Send(request));
  auto response = stream.Next();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->type_url(), type_url::kCluster);
  ASSERT_TRUE(stream.Send(Req(type_url::kListener)));
  EXPECT_EQ(stream.AwaitServerFinish().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(XdsServerTest, AThousandStreamsAllReceiveEachUpdate) {
  constexpr int kStreams = 1000;
  constexpr int kChannels = 10;
  cache_.Set("default", Chain("1", 80));
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  for (int i = 0; i < kChannels; ++i) channels.push_back(Channel(i));
  std::vector<std::unique_ptr<SotwStream>> streams;
  for (int i = 0; i < kStreams; ++i) {
    streams.push_back(OpenSotw(channels[i % kChannels]));
    DiscoveryRequest request = Req(type_url::kClusterLoadAssignment, {"c1"}, nullptr, true);
    request.mutable_node()->set_id(absl::StrCat("proxy-", i));
    ASSERT_TRUE(streams.back()->Send(request));
  }
  std::vector<DiscoveryResponse> first(kStreams);
  for (int i = 0; i < kStreams; ++i) {
    auto r = streams[i]->Next();
    ASSERT_TRUE(r.has_value()) << "stream " << i;
    first[i] = *r;
    ASSERT_TRUE(streams[i]->Send(Req(type_url::kClusterLoadAssignment, {"c1"}, &*r)));
  }
  cache_.Set("default", Chain("1", 81));
  for (int i = 0; i < kStreams; ++i) {
    auto r = streams[i]->Next();
    ASSERT_TRUE(r.has_value()) << "stream " << i;
    EXPECT_NE(r->version_info(), first[i].version_info());
  }
  EXPECT_EQ(proxies_.size(), static_cast<size_t>(kStreams));
}

// One connection may not hold more than its share of streams: the cap is
// advertised in SETTINGS, so gRPC clients queue further streams; a client
// that opens more anyway loses its connection (gRPC 1.51 treats it as a
// connection error), while other connections' streams go on.
TEST_F(XdsServerTest, AConnectionPastItsStreamCapIsClosedAndOthersGoOn) {
  using testing::RawHttp2Client;
  StartServer({}, [](XdsServerOptions& options) { options.max_streams_per_connection = 3; });
  cache_.Set("default", Chain("1", 80));
  auto good = OpenSotw(Channel(1));
  ASSERT_TRUE(good->Send(Req(type_url::kCluster, {}, nullptr, true)));
  std::optional<DiscoveryResponse> first = good->Next();
  ASSERT_TRUE(first.has_value());
  ASSERT_TRUE(good->Send(Req(type_url::kCluster, {}, &*first)));

  RawHttp2Client client(server_->port(), 10);
  ASSERT_TRUE(client.connected());
  ASSERT_TRUE(client.SendPreface());
  std::optional<RawHttp2Client::Frame> settings = client.ReadFrame();
  ASSERT_TRUE(settings.has_value());
  ASSERT_EQ(settings->type, RawHttp2Client::kSettings);
  EXPECT_EQ(RawHttp2Client::Setting(*settings, RawHttp2Client::kMaxConcurrentStreams), 3u);
  ASSERT_TRUE(client.AckSettings());
  const std::string ads =
      "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources";
  for (uint32_t stream_id : {1, 3, 5, 7}) ASSERT_TRUE(client.OpenGrpcStream(stream_id, ads));
  while (client.ReadFrame().has_value()) {
  }
  EXPECT_TRUE(client.closed_by_server()) << "the connection must end, not time out";

  cache_.Set("default", Chain("2", 80));
  std::optional<DiscoveryResponse> update = good->Next();
  ASSERT_TRUE(update.has_value()) << "a stream of another connection keeps its updates";
  EXPECT_NE(update->version_info(), first->version_info());
}

TEST_F(XdsServerTest, AProxyThatStopsReadingDoesNotDelayOthers) {
  // ~2 MB of clusters per version: more than flow control lets through
  // unread, so the stuck stream's writes stay in flight.
  auto big_snapshot = [](int version) {
    std::vector<ResourcePtr> resources;
    for (int i = 0; i < 200; ++i) {
      envoy::config::cluster::v3::Cluster cluster;
      cluster.set_name(absl::StrCat("c", i));
      cluster.set_type(envoy::config::cluster::v3::Cluster::STATIC);
      (*cluster.mutable_metadata()->mutable_filter_metadata())["pad"]
          .mutable_fields()
          ->operator[]("v")
          .set_string_value(std::string(10'000, 'a' + version % 26));
      resources.push_back(Resource::FromMessage(cluster.name(), cluster));
    }
    return Build(std::move(resources));
  };
  cache_.Set("default", big_snapshot(0));

  // The stuck proxy: subscribes, then never reads.
  auto stub = AggregatedDiscoveryService::NewStub(Channel(1));
  grpc::ClientContext stuck_context;
  auto stuck = stub->StreamAggregatedResources(&stuck_context);
  ASSERT_TRUE(stuck->Write(Req(type_url::kCluster, {}, nullptr, true)));

  auto healthy = OpenSotw(Channel(2));
  ASSERT_TRUE(healthy->Send(Req(type_url::kCluster, {}, nullptr, true)));
  auto r = healthy->Next();
  ASSERT_TRUE(r.has_value());
  for (int v = 1; v <= 20; ++v) {
    auto snapshot = big_snapshot(v);
    cache_.Set("default", snapshot);
    ASSERT_TRUE(healthy->Send(Req(type_url::kCluster, {}, &*r)));
    r = healthy->Next();
    ASSERT_TRUE(r.has_value()) << "version " << v;
    EXPECT_EQ(r->version_info(), snapshot->TypeVersion(type_url::kCluster));
  }
  EXPECT_GT(metrics_.GetCounter("holdfast_xds_coalesced_updates_total", "")->value(), 0u)
      << "the stuck stream should have folded updates instead of queueing them";
  stuck_context.TryCancel();
}

// Writes a CA, a server certificate for 127.0.0.1 and a client certificate.
class TlsFiles {
 public:
  TlsFiles() {
    dir_ = std::filesystem::temp_directory_path() /
           absl::StrCat("holdfast-tls-", getpid(), "-", reinterpret_cast<uintptr_t>(this));
    std::filesystem::create_directories(dir_);
    std::string d = dir_.string();
    std::string script =
        absl::StrCat("set -e; cd ", d, "; ",
                     "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=test-ca -keyout "
                     "ca.key -out ca.pem 2>/dev/null; ",
                     "openssl req -newkey rsa:2048 -nodes -subj /CN=localhost -keyout server.key "
                     "-out server.csr 2>/dev/null; ",
                     "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost' > san.ext; ",
                     "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
                     "-days 1 -extfile san.ext -out server.pem 2>/dev/null; ",
                     "openssl req -newkey rsa:2048 -nodes -subj /CN=proxy -keyout client.key -out "
                     "client.csr 2>/dev/null; ",
                     "openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
                     "-days 1 -out client.pem 2>/dev/null");
    ok_ = std::system(script.c_str()) == 0;
  }
  ~TlsFiles() { std::filesystem::remove_all(dir_); }
  bool ok() const { return ok_; }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  std::string Read(const std::string& name) const {
    std::ifstream in(Path(name));
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

 private:
  std::filesystem::path dir_;
  bool ok_ = false;
};

TEST_F(XdsServerTest, MutualTlsRequiresAClientCertificate) {
  TlsFiles tls;
  ASSERT_TRUE(tls.ok());
  StartServer({tls.Path("server.pem"), tls.Path("server.key"), tls.Path("ca.pem")});
  cache_.Set("default", Chain("1", 80));
  const std::string target = absl::StrCat("127.0.0.1:", server_->port());

  auto try_stream = [&](std::shared_ptr<grpc::ChannelCredentials> creds) {
    auto stub = AggregatedDiscoveryService::NewStub(grpc::CreateChannel(target, creds));
    SotwStream stream([&](grpc::ClientContext* ctx) {
      ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
      return stub->StreamAggregatedResources(ctx);
    });
    stream.Send(Req(type_url::kCluster, {}, nullptr, true));
    return stream.Next().has_value();
  };

  grpc::SslCredentialsOptions with_cert{tls.Read("ca.pem"), tls.Read("client.key"),
                                        tls.Read("client.pem")};
  EXPECT_TRUE(try_stream(grpc::SslCredentials(with_cert)));
  grpc::SslCredentialsOptions without_cert{tls.Read("ca.pem"), "", ""};
  EXPECT_FALSE(try_stream(grpc::SslCredentials(without_cert)));
  EXPECT_FALSE(try_stream(grpc::InsecureChannelCredentials()));
}

// A CA in `dir`/`name`: a server certificate for 127.0.0.1 and a client
// certificate whose DNS SAN is `client_dns`.
bool MakePki(const std::string& dir, const std::string& name, const std::string& client_dns) {
  std::string script =
      absl::StrCat("set -e; mkdir -p ", dir, "/", name, "; cd ", dir, "/", name, "; ",
                   "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=", name,
                   "-ca -keyout ca.key -out ca.pem 2>/dev/null; ",
                   "openssl req -newkey rsa:2048 -nodes -subj /CN=localhost -keyout server.key "
                   "-out server.csr 2>/dev/null; ",
                   "printf 'subjectAltName=IP:127.0.0.1' > server.ext; ",
                   "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
                   "-days 1 -extfile server.ext -out server.pem 2>/dev/null; ",
                   "openssl req -newkey rsa:2048 -nodes -subj /CN=client -keyout client.key -out "
                   "client.csr 2>/dev/null; ",
                   "printf 'subjectAltName=DNS:", client_dns, "' > client.ext; ",
                   "openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
                   "-days 1 -extfile client.ext -out client.pem 2>/dev/null");
  return std::system(script.c_str()) == 0;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class IdentityTest : public XdsServerTest {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           absl::StrCat("holdfast-identity-", getpid(), "-", reinterpret_cast<uintptr_t>(this));
    ASSERT_TRUE(MakePki(dir_.string(), "one", "proxy-1"));
    // What holdfast is given: files it re-reads when they change.
    std::filesystem::create_directories(dir_ / "live");
    Install("one");
    identity_ = *ClientIdentityPolicy::Parse("san-dns");
    grouper_ = *NodeGrouper::Parse("identity", "default");
    StartServer({Live("server.pem"), Live("server.key"), Live("ca.pem")});
  }
  void TearDown() override {
    server_.reset();
    std::filesystem::remove_all(dir_);
  }
  std::string Live(const std::string& file) const { return (dir_ / "live" / file).string(); }
  std::string Of(const std::string& pki, const std::string& file) const {
    return (dir_ / pki / file).string();
  }
  // Replaces the served files the way an operator would: a new file renamed
  // over each.
  void Install(const std::string& pki) {
    for (const char* file : {"server.pem", "server.key", "ca.pem"}) {
      std::filesystem::copy_file(Of(pki, file), Live(file) + ".new",
                                 std::filesystem::copy_options::overwrite_existing);
      std::filesystem::rename(Live(file) + ".new", Live(file));
    }
  }
  std::shared_ptr<grpc::ChannelCredentials> ClientOf(const std::string& pki) const {
    return grpc::SslCredentials({ReadText(Of(pki, "ca.pem")), ReadText(Of(pki, "client.key")),
                                 ReadText(Of(pki, "client.pem"))});
  }
  std::unique_ptr<SotwStream> Open(std::shared_ptr<grpc::ChannelCredentials> creds,
                                   const std::string& node_id, int channel = 0) {
    grpc::ChannelArguments args;
    args.SetInt("holdfast.test.channel", channel);
    auto stub = AggregatedDiscoveryService::NewStub(
        grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", server_->port()), creds, args));
    auto stream = std::make_unique<SotwStream>([&](grpc::ClientContext* ctx) {
      ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
      return stub->StreamAggregatedResources(ctx);
    });
    DiscoveryRequest request = Req(type_url::kCluster);
    request.mutable_node()->set_id(node_id);
    request.mutable_node()->set_cluster("default");  // a claim of a group: ignored
    stream->Send(request);
    return stream;
  }

  std::filesystem::path dir_;
};

TEST_F(IdentityTest, ANodeWhoseIdIsItsCertificatesGetsItsIdentitysGroup) {
  cache_.Set("default", Chain("default", 80));
  cache_.Set("proxy-1", Chain("mine", 81));
  auto stream = Open(ClientOf("one"), "proxy-1");
  auto response = stream->Next();
  ASSERT_TRUE(response.has_value());
  EXPECT_THAT(Names(*response), ::testing::Contains(::testing::HasSubstr("mine")));
  std::vector<ProxyView> proxies = proxies_.List();
  ASSERT_EQ(proxies.size(), 1u);
  EXPECT_EQ(proxies[0].group, "proxy-1");
  EXPECT_EQ(proxies[0].identity, "proxy-1");
}

TEST_F(IdentityTest, ANodeClaimingAnotherIdIsRefusedWithPermissionDenied) {
  cache_.Set("default", Chain("default", 80));
  auto stream = Open(ClientOf("one"), "proxy-2");
  EXPECT_FALSE(stream->Next().has_value());
  grpc::Status status = stream->Close();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(status.error_message(), ::testing::HasSubstr("\"proxy-2\""));
  EXPECT_THAT(status.error_message(), ::testing::HasSubstr("expected \"proxy-1\""));
  EXPECT_TRUE(proxies_.List().empty());
  std::vector<IdentityRefusalRecord> refusals = proxies_.Refusals();
  ASSERT_EQ(refusals.size(), 1u);
  EXPECT_EQ(refusals[0].reason, "mismatch");
  EXPECT_EQ(refusals[0].claimed_node_id, "proxy-2");
  EXPECT_EQ(CounterValue("holdfast_xds_identity_refusals_total", {{"reason", "mismatch"}}), 1u);
}

TEST_F(IdentityTest, DeltaStreamsAreCheckedToo) {
  cache_.Set("default", Chain("default", 80));
  auto stub = AggregatedDiscoveryService::NewStub(
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", server_->port()), ClientOf("one")));
  auto open = [&](const std::string& node_id) {
    auto stream = std::make_unique<DeltaStream>([&](grpc::ClientContext* ctx) {
      ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
      return stub->DeltaAggregatedResources(ctx);
    });
    DeltaDiscoveryRequest request;
    request.set_type_url(std::string(type_url::kCluster));
    request.mutable_node()->set_id(node_id);
    stream->Send(request);
    return stream;
  };
  auto impostor = open("proxy-2");
  EXPECT_FALSE(impostor->Next().has_value());
  EXPECT_EQ(impostor->Close().error_code(), grpc::StatusCode::PERMISSION_DENIED);
  auto proxy = open("proxy-1");
  EXPECT_TRUE(proxy->Next().has_value());
}

TEST_F(IdentityTest, RotatedFilesServeNewConnectionsAndKeepOpenStreams) {
  cache_.Set("default", Chain("a", 80));
  auto old_stream = Open(ClientOf("one"), "proxy-1", 1);
  ASSERT_TRUE(old_stream->Next().has_value());

  ASSERT_TRUE(MakePki(dir_.string(), "two", "proxy-1"));
  Install("two");
  // A client of the new CA connects once the files have been reloaded
  // (two checks a second apart, then gRPC's one-second refresh).
  for (int i = 0; i < 100 && server_->TlsState().reloads == 0; ++i) {
    absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_EQ(server_->TlsState().reloads, 1u);
  bool connected = false;
  for (int attempt = 0; attempt < 40 && !connected; ++attempt) {
    auto stream = Open(ClientOf("two"), "proxy-1", 100 + attempt);
    connected = stream->Next(absl::Seconds(2)).has_value();
    if (!connected) absl::SleepFor(absl::Milliseconds(250));
  }
  EXPECT_TRUE(connected);
  // A client that trusts only the old CA no longer verifies the server.
  EXPECT_FALSE(Open(ClientOf("one"), "proxy-1", 999)->Next(absl::Seconds(3)).has_value());
  // The stream opened before the rotation still gets updates.
  cache_.Set("default", Chain("b", 80));
  auto update = old_stream->Next();
  ASSERT_TRUE(update.has_value());
  EXPECT_THAT(Names(*update), ::testing::Contains(::testing::HasSubstr("b")));
}

TEST_F(IdentityTest, ABadNewFileKeepsTheOldOnesServed) {
  cache_.Set("default", Chain("a", 80));
  std::ofstream(Live("server.key") + ".new") << "not a key\n";
  std::filesystem::rename(Live("server.key") + ".new", Live("server.key"));
  for (int i = 0; i < 50 && server_->TlsState().error.empty(); ++i) {
    absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_THAT(server_->TlsState().error, ::testing::HasSubstr("not a PEM private key"));
  absl::SleepFor(absl::Seconds(2));  // past gRPC's refresh
  EXPECT_TRUE(Open(ClientOf("one"), "proxy-1", 7)->Next().has_value());
  EXPECT_EQ(GaugeValue("holdfast_xds_tls_reload_failing"), 1);
}

}  // namespace
}  // namespace holdfast
