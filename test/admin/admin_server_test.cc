#include "src/admin/admin_server.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "envoy/config/listener/v3/listener.pb.h"
#include "envoy/extensions/transport_sockets/tls/v3/tls.pb.h"
#include "gtest/gtest.h"
#include "src/admin/event_log.h"
#include "test/admin/http_test_client.h"

namespace holdfast {
namespace {

using testing_http::Get;
using testing_http::TestClient;

constexpr char kToken[] = "admin-test-token";

// A listener as the gateway translator makes it for a TLS Gateway.
SnapshotPtr SnapshotWithTlsKey() {
  envoy::extensions::transport_sockets::tls::v3::DownstreamTlsContext tls;
  auto* certificate = tls.mutable_common_tls_context()->add_tls_certificates();
  certificate->mutable_certificate_chain()->set_inline_string("PUBLIC-CERT");
  certificate->mutable_private_key()->set_inline_string("-----BEGIN PRIVATE KEY-----SECRETKEY");
  envoy::config::listener::v3::Listener listener;
  listener.set_name("gateway");
  listener.add_filter_chains()->mutable_transport_socket()->mutable_typed_config()->PackFrom(tls);
  auto snapshot = Snapshot::Build({Resource::FromMessage("gateway", listener)}, absl::UnixEpoch());
  EXPECT_TRUE(snapshot.ok()) << snapshot.status();
  return *snapshot;
}

class AdminServerTest : public testing::Test {
 protected:
  void SetUp() override {
    cache_.Set(cache_.default_group(), SnapshotWithTlsKey());
    char dir[] = "/tmp/admin_server_test.XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    token_file_ = dir_ + "/token";
    std::ofstream(token_file_) << kToken << "\n";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  AdminSources Sources() {
    return AdminSources{
        .metrics = &metrics_,
        .cache = &cache_,
        .proxies = &proxies_,
        .clock = &clock_,
        .readiness =
            [] {
              return Readiness{true, "serving snapshot v1"};
            },
        .status =
            [] {
              return nlohmann::json{{"objects", nlohmann::json::array()}};
            },
    };
  }

  // GET `path` on a fresh connection; {status, body}.
  std::pair<int, std::string> Fetch(int port, const std::string& path,
                                    const std::string& headers = "") {
    TestClient client(port);
    if (!client.Send(Get(path, headers))) return {0, ""};
    auto response = client.Read();
    if (!response.has_value()) return {0, ""};
    return {response->status, response->body};
  }

  MetricsRegistry metrics_;
  SnapshotCache cache_;
  ProxyRegistry proxies_;
  SimulatedClock clock_;
  std::string dir_;
  std::string token_file_;
};

TEST_F(AdminServerTest, RefusesToStartReachableFromOtherHostsWithoutAToken) {
  for (const char* address : {"0.0.0.0:0", ":0"}) {
    auto server = AdminServer::Start(address, {}, Sources());
    ASSERT_FALSE(server.ok()) << address;
    EXPECT_EQ(server.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(server.status().message().find("--admin-token-file"), std::string::npos)
        << server.status();
  }
}

TEST_F(AdminServerTest, RefusesToStartWithAnUnreadableTokenFile) {
  auto server = AdminServer::Start("0.0.0.0:0", {.token_file = dir_ + "/missing"}, Sources());
  EXPECT_FALSE(server.ok());
}

TEST_F(AdminServerTest, WithATokenOnlyProbesAnswerWithoutIt) {
  auto server = AdminServer::Start("0.0.0.0:0", {.token_file = token_file_}, Sources());
  ASSERT_TRUE(server.ok()) << server.status();
  int port = (*server)->port();
  EXPECT_EQ(Fetch(port, "/healthz"), std::make_pair(200, std::string("ok\n")));
  // Ready or not, but not why, to someone without the token.
  EXPECT_EQ(Fetch(port, "/readyz"), std::make_pair(200, std::string("ready\n")));
  // The status page is code without data: it answers, its data does not.
  auto [page_status, page] = Fetch(port, "/");
  EXPECT_EQ(page_status, 200);
  EXPECT_NE(page.find("<title>holdfast</title>"), std::string::npos);
  EXPECT_EQ(page.find("SECRETKEY"), std::string::npos);
  for (const char* path : {"/metrics", "/debug/snapshot", "/debug/proxies", "/debug/status",
                           "/debug/fleet", "/debug/client_status", "/no-such-page"}) {
    EXPECT_EQ(Fetch(port, path).first, 401) << path;
    EXPECT_EQ(Fetch(port, path, "Authorization: Bearer wrong\r\n").first, 401) << path;
  }
  std::string bearer = std::string("Authorization: Bearer ") + kToken + "\r\n";
  EXPECT_EQ(Fetch(port, "/readyz", bearer),
            std::make_pair(200, std::string("ready: serving snapshot v1\n")));
  for (const char* path : {"/metrics", "/debug/snapshot", "/debug/proxies", "/debug/status",
                           "/debug/fleet", "/debug/client_status"}) {
    EXPECT_EQ(Fetch(port, path, bearer).first, 200) << path;
  }
  EXPECT_EQ(Fetch(port, "/no-such-page", bearer).first, 404);
}

TEST_F(AdminServerTest, OnLoopbackWithoutATokenEveryPageAnswers) {
  auto server = AdminServer::Start("127.0.0.1:0", {}, Sources());
  ASSERT_TRUE(server.ok()) << server.status();
  int port = (*server)->port();
  EXPECT_EQ(Fetch(port, "/readyz"),
            std::make_pair(200, std::string("ready: serving snapshot v1\n")));
  for (const char* path :
       {"/healthz", "/metrics", "/debug/snapshot", "/debug/proxies", "/debug/status"}) {
    EXPECT_EQ(Fetch(port, path).first, 200) << path;
  }
  EXPECT_EQ(Fetch(port, "/nope").first, 404);
}

TEST_F(AdminServerTest, DebugSnapshotShowsNoPrivateKey) {
  auto server = AdminServer::Start("127.0.0.1:0", {}, Sources());
  ASSERT_TRUE(server.ok()) << server.status();
  auto [status, body] = Fetch((*server)->port(), "/debug/snapshot");
  ASSERT_EQ(status, 200);
  EXPECT_EQ(body.find("SECRETKEY"), std::string::npos) << body;
  EXPECT_NE(body.find("[redacted]"), std::string::npos) << body;
  EXPECT_NE(body.find("PUBLIC-CERT"), std::string::npos) << body;
  // The served resource itself is untouched.
  const auto& served = cache_.Current(cache_.default_group())
                           .snapshot->Resources(type_url::kListener)
                           .begin()
                           ->second;
  EXPECT_NE(served->serialized().find("SECRETKEY"), std::string::npos);
}

TEST_F(AdminServerTest, ResourcesToJsonShowsNoPrivateKey) {
  std::string json = ResourcesToJson(*SnapshotWithTlsKey()).dump();
  EXPECT_EQ(json.find("SECRETKEY"), std::string::npos) << json;
  EXPECT_NE(json.find("[redacted]"), std::string::npos) << json;
}

TEST_F(AdminServerTest, NothingMutatesState) {
  auto server = AdminServer::Start("127.0.0.1:0", {}, Sources());
  ASSERT_TRUE(server.ok()) << server.status();
  for (const char* method : {"POST", "PUT", "DELETE", "PATCH"}) {
    TestClient client((*server)->port());
    ASSERT_TRUE(client.Send(std::string(method) + " /debug/snapshot HTTP/1.1\r\n\r\n"));
    auto response = client.Read();
    ASSERT_TRUE(response.has_value()) << method;
    EXPECT_EQ(response->status, 405) << method;
  }
}

TEST_F(AdminServerTest, ReportsConnectionLimitsInMetrics) {
  auto server = AdminServer::Start("127.0.0.1:0", {}, Sources());
  ASSERT_TRUE(server.ok()) << server.status();
  auto [status, body] = Fetch((*server)->port(), "/metrics");
  ASSERT_EQ(status, 200);
  EXPECT_NE(body.find("holdfast_admin_connections_cut_total{reason=\"header_timeout\"}"),
            std::string::npos)
      << body;
  EXPECT_NE(body.find("holdfast_admin_connections "), std::string::npos) << body;
}

TEST_F(AdminServerTest, AnActionNeedsPostItsHeaderAndTheToken) {
  AdminSources sources = Sources();
  int acted = 0;
  std::string below;
  sources.actions["/rollout/promote"] = [&acted, &below](const std::string& path_below) {
    ++acted;
    below = path_below;
    return nlohmann::json{{"done", true}};
  };
  auto server = AdminServer::Start("127.0.0.1:0", {.token_file = token_file_}, std::move(sources));
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();
  auto send = [port](const std::string& request) {
    TestClient client(port);
    EXPECT_TRUE(client.Send(request));
    auto response = client.Read();
    return response.has_value() ? std::make_pair(response->status, response->body)
                                : std::make_pair(0, std::string());
  };
  const std::string bearer = std::string("Authorization: Bearer ") + kToken + "\r\n";
  auto post = [](const std::string& path, const std::string& headers) {
    return absl::StrCat("POST ", path, " HTTP/1.1\r\nHost: test\r\nContent-Length: 0\r\n", headers,
                        "\r\n");
  };
  EXPECT_EQ(send(post("/rollout/promote", "X-Holdfast-Action: test\r\n")).first, 401);
  EXPECT_EQ(send(post("/rollout/promote", bearer)).first, 403) << "no action header";
  EXPECT_EQ(send(Get("/rollout/promote", bearer)).first, 405) << "an action is POST only";
  EXPECT_EQ(send(post("/debug/status", bearer + "X-Holdfast-Action: test\r\n")).first, 405)
      << "a page is not an action";
  EXPECT_EQ(acted, 0);
  auto [status, body] = send(post("/rollout/promote", bearer + "X-Holdfast-Action: test\r\n"));
  EXPECT_EQ(status, 200);
  EXPECT_NE(body.find("\"done\": true"), std::string::npos) << body;
  EXPECT_EQ(acted, 1);
  EXPECT_EQ(below, "");
  // A path below an action is that action's, with what is below it (a
  // node group, which may hold slashes).
  EXPECT_EQ(send(post("/rollout/promote/spiffe://x/edge", bearer + "X-Holdfast-Action: t\r\n"))
                .first,
            200);
  EXPECT_EQ(below, "spiffe://x/edge");
  EXPECT_EQ(send(post("/rollout/promotex", bearer + "X-Holdfast-Action: t\r\n")).first, 405)
      << "a name that only starts like an action is not one";
}

TEST(FleetToJsonTest, CountsByGroupAndStateAndListsTroubleFirstWithinALimit) {
  std::vector<ProxyView> proxies;
  auto add = [&](const std::string& node, const std::string& group, const std::string& sent,
                 const std::string& acked, bool nack) {
    ProxyView view;
    view.node_id = node;
    view.group = group;
    TypeProgress& cds = view.types["type.googleapis.com/envoy.config.cluster.v3.Cluster"];
    cds.last_sent_version = sent;
    cds.acked_version = acked;
    cds.sent_at = absl::FromUnixSeconds(100);
    if (nack)
      cds.nack = NackRecord{.version = sent, .error = "bad", .at = absl::FromUnixSeconds(50)};
    proxies.push_back(view);
  };
  add("ok", "a", "v1", "v1", false);
  add("waiting", "a", "v2", "v1", false);
  add("rejecting-2", "b", "v2", "v1", true);
  add("rejecting-1", "b", "v2", "v1", true);
  nlohmann::json fleet = FleetToJson(proxies, 2);
  EXPECT_EQ(fleet["total"], 4);
  EXPECT_EQ(fleet["by_group"]["a"],
            (nlohmann::json{{"synced", 1}, {"pending", 1}, {"nacking", 0}}));
  EXPECT_EQ(fleet["by_group"]["b"]["nacking"], 2);
  EXPECT_EQ(fleet["troubled_total"], 3);
  ASSERT_EQ(fleet["troubled"].size(), 2u) << "the limit";
  EXPECT_EQ(fleet["troubled"][0]["node_id"], "rejecting-1");
  EXPECT_EQ(fleet["troubled"][1]["node_id"], "rejecting-2");
  EXPECT_EQ(fleet["troubled"][0]["types"][0]["error"], "bad");
  EXPECT_EQ(fleet["troubled"][0]["since"], "1970-01-01T00:00:50.000Z");
}

TEST(ClientStatusToJsonTest, AnswersForOneNodeOrAll) {
  std::vector<ProxyView> proxies;
  for (const char* id : {"a", "b", "c"}) {
    auto node = std::make_shared<envoy::config::core::v3::Node>();
    node->set_id(id);
    proxies.push_back({.node_id = id, .node = node});
  }
  absl::StatusOr<nlohmann::json> one = ClientStatusToJson(proxies, "b");
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_EQ((*one)["config"].size(), 1u) << one->dump();
  EXPECT_EQ((*one)["config"][0]["node"]["id"], "b");
  absl::StatusOr<nlohmann::json> all = ClientStatusToJson(proxies, "");
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ((*all)["config"].size(), 3u);
  // The bound on an answer too large is client_status_test's
  // AnAnswerTooLargeIsRefusedWithAWayOut; the page answers it with 400.
}

TEST(EventLogTest, KeepsTheNewestFirstAndForgetsTheOldest) {
  SimulatedClock clock;
  EventLog log(clock, /*capacity=*/3);
  for (int i = 0; i < 5; ++i) {
    log.Record("store", "event " + std::to_string(i));
    clock.Advance(absl::Seconds(1));
  }
  std::vector<EventLog::Event> recent = log.Recent();
  ASSERT_EQ(recent.size(), 3u);
  EXPECT_EQ(recent[0].message, "event 4");
  EXPECT_EQ(recent[2].message, "event 2");
  EXPECT_EQ(log.ToJson()[0]["kind"], "store");
}

}  // namespace
}  // namespace holdfast
