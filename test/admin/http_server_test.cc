#include "src/admin/http_server.h"

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "test/admin/http_test_client.h"

namespace holdfast {
namespace {

using std::chrono::milliseconds;
using testing_http::Get;
using testing_http::TestClient;

// Echoes the path; a few paths misbehave on purpose.
HttpResponse EchoHandler(const HttpRequest& request) {
  if (request.path == "/throw") throw std::runtime_error("boom");
  if (request.path == "/big") return HttpResponse::Text(200, std::string(64 << 20, 'x'));
  return HttpResponse::Text(200, absl::StrCat("path=", request.path, "\n"));
}

// Short limits keep the tests fast; each test sets the one it exercises.
HttpServerOptions FastOptions() {
  HttpServerOptions options;
  options.header_timeout = absl::Milliseconds(300);
  options.idle_timeout = absl::Milliseconds(300);
  options.write_timeout = absl::Milliseconds(300);
  options.max_head_bytes = 1024;
  options.max_connections = 8;
  return options;
}

std::unique_ptr<HttpServer> StartServer(HttpServerOptions options) {
  absl::StatusOr<ListenSocket> socket = ListenSocket::Open("127.0.0.1:0");
  EXPECT_TRUE(socket.ok()) << socket.status();
  EXPECT_TRUE(socket->loopback());
  return HttpServer::Start(*std::move(socket), options, EchoHandler);
}

TEST(HttpServer, AnswersGetAndKeepsTheConnection) {
  auto server = StartServer(FastOptions());
  TestClient client(server->port());
  for (const char* path : {"/a", "/b"}) {
    ASSERT_TRUE(client.Send(Get(path)));
    auto response = client.Read();
    ASSERT_TRUE(response.has_value());
    EXPECT_EQ(response->status, 200);
    EXPECT_EQ(response->body, absl::StrCat("path=", path, "\n"));
    EXPECT_EQ(response->head.find("Connection: close"), std::string::npos);
  }
  EXPECT_EQ(server->stats().accepted, 1u);
  EXPECT_EQ(server->stats().requests, 2u);
}

TEST(HttpServer, HeadSendsLengthWithoutBody) {
  auto server = StartServer(FastOptions());
  TestClient client(server->port());
  ASSERT_TRUE(client.Send("HEAD /abc HTTP/1.1\r\n\r\n" + Get("/after")));
  auto head = client.Read(std::chrono::seconds(5), /*head_only=*/true);
  ASSERT_TRUE(head.has_value());
  EXPECT_EQ(head->status, 200);
  EXPECT_NE(head->head.find("Content-Length: 10\r\n"), std::string::npos) << head->head;
  // The next response follows at once: no body bytes came between.
  auto after = client.Read();
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(after->body, "path=/after\n");
}

TEST(HttpServer, AnswersPipelinedRequestsInOrder) {
  auto server = StartServer(FastOptions());
  TestClient client(server->port());
  ASSERT_TRUE(client.Send(Get("/1") + Get("/2") + Get("/3", "Connection: close\r\n")));
  for (const char* body : {"path=/1\n", "path=/2\n", "path=/3\n"}) {
    auto response = client.Read();
    ASSERT_TRUE(response.has_value()) << body;
    EXPECT_EQ(response->body, body);
  }
  EXPECT_TRUE(client.ClosedWithin(milliseconds(2000)));
}

struct RefusalCase {
  std::string name;
  std::string request;
  int status;
};

class HttpServerRefusalTest : public testing::TestWithParam<RefusalCase> {};

TEST_P(HttpServerRefusalTest, AnswersAndCloses) {
  const RefusalCase& c = GetParam();
  auto server = StartServer(FastOptions());
  TestClient client(server->port());
  client.Send(c.request);
  auto response = client.Read();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, c.status) << response->head;
  EXPECT_NE(response->head.find("Connection: close"), std::string::npos);
  EXPECT_TRUE(client.ClosedWithin(milliseconds(2000)));
}

INSTANTIATE_TEST_SUITE_P(
    Requests, HttpServerRefusalTest,
    testing::Values(RefusalCase{"body", "POST /x HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc", 413},
                    RefusalCase{"chunked_body",
                                "GET /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                                413},
                    RefusalCase{"oversized_head",
                                "GET /x HTTP/1.1\r\nCookie: " + std::string(4096, 'c') + "\r\n\r\n",
                                431},
                    // A TLS ClientHello's first bytes, as a client configured for TLS sends.
                    RefusalCase{"tls_hello",
                                std::string("\x16\x03\x01\x02\x00\x01\x00\x01 x\r\n\r\n", 14), 400},
                    RefusalCase{"http2_preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505},
                    RefusalCase{"http_1_0", "GET /x HTTP/1.0\r\n\r\n", 200}),
    [](const testing::TestParamInfo<RefusalCase>& info) { return info.param.name; });

TEST(HttpServer, UnknownMethodGets405AndKeepsTheConnection) {
  auto server = StartServer(FastOptions());
  TestClient client(server->port());
  ASSERT_TRUE(client.Send("DELETE /x HTTP/1.1\r\n\r\n" + Get("/y")));
  auto refused = client.Read();
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->status, 405);
  EXPECT_NE(refused->head.find("Allow: GET, HEAD\r\n"), std::string::npos);
  auto next = client.Read();
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->body, "path=/y\n");
}

TEST(HttpServer, HandlerExceptionIs500) {
  auto server = StartServer(FastOptions());
  TestClient client(server->port());
  ASSERT_TRUE(client.Send(Get("/throw")));
  auto response = client.Read();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 500);
  EXPECT_EQ(response->body, "internal error: boom\n");
}

TEST(HttpServer, CutsOffAHeadSentSlowly) {
  auto server = StartServer(FastOptions());  // 300 ms for a head
  TestClient slow(server->port());
  auto start = std::chrono::steady_clock::now();
  std::string request = Get("/slow");
  bool cut = false;
  // One byte every 50 ms: the head would take over a second.
  for (char c : request) {
    if (!slow.Send(std::string(1, c)) || slow.ClosedWithin(milliseconds(50))) {
      cut = true;
      break;
    }
  }
  auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(cut);
  EXPECT_LT(elapsed, milliseconds(900));
  EXPECT_NE(slow.unread().find("HTTP/1.1 408 "), std::string::npos) << slow.unread();
  EXPECT_EQ(server->stats().header_timeouts, 1u);
  EXPECT_EQ(server->stats().requests, 0u);
}

TEST(HttpServer, ClosesAConnectionThatSendsNothing) {
  auto server = StartServer(FastOptions());
  TestClient silent(server->port());
  EXPECT_TRUE(silent.ClosedWithin(milliseconds(2000)));
  EXPECT_EQ(server->stats().header_timeouts, 1u);
}

TEST(HttpServer, ClosesAnIdleKeepAliveConnection) {
  auto server = StartServer(FastOptions());
  TestClient client(server->port());
  ASSERT_TRUE(client.Send(Get("/once")));
  ASSERT_TRUE(client.Read().has_value());
  EXPECT_TRUE(client.ClosedWithin(milliseconds(2000)));
  EXPECT_EQ(server->stats().idle_timeouts, 1u);
}

TEST(HttpServer, DropsAResponseTheClientDoesNotRead) {
  auto server = StartServer(FastOptions());
  TestClient client(server->port());
  int small = 4096;
  setsockopt(client.fd(), SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
  ASSERT_TRUE(client.Send(Get("/big")));  // 64 MiB, never read
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  // The timeout is counted a moment before the connection is closed and
  // uncounted: wait for both.
  while ((server->stats().write_timeouts == 0 || server->stats().open != 0) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_EQ(server->stats().write_timeouts, 1u);
  EXPECT_EQ(server->stats().open, 0u);
}

// The slowloris case: more slow clients than connections allowed, each
// trickling a head that never ends, and a probe still answered at once.
TEST(HttpServer, SlowClientsNeverStopOthersBeingAnswered) {
  HttpServerOptions options = FastOptions();
  options.header_timeout = absl::Seconds(30);  // eviction, not timeouts, must save the probe
  auto server = StartServer(options);
  std::vector<TestClient> slow;
  for (int i = 0; i < 3 * options.max_connections; ++i) {
    slow.emplace_back(server->port());
    ASSERT_TRUE(slow.back().Send("GET /slow HTTP/1.1\r\nX-A: "));
  }
  for (int round = 0; round < 5; ++round) {
    for (TestClient& client : slow) client.Send("a");  // keep trickling
    auto start = std::chrono::steady_clock::now();
    TestClient probe(server->port());
    ASSERT_TRUE(probe.Send(Get("/readyz")));
    auto response = probe.Read(milliseconds(2000));
    ASSERT_TRUE(response.has_value()) << "round " << round;
    EXPECT_EQ(response->body, "path=/readyz\n");
    EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(1000));
  }
  HttpServerStats stats = server->stats();
  EXPECT_LE(stats.open, static_cast<uint64_t>(options.max_connections));
  EXPECT_GE(stats.evicted, static_cast<uint64_t>(2 * options.max_connections));
}

TEST(HttpServer, ManyIdleConnectionsAreEvictedOldestFirst) {
  HttpServerOptions options = FastOptions();
  options.header_timeout = absl::Seconds(30);
  auto server = StartServer(options);
  std::vector<TestClient> idle;
  for (int i = 0; i < options.max_connections; ++i) idle.emplace_back(server->port());
  // Let the server accept them all before the newcomer arrives.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (server->stats().open < static_cast<uint64_t>(options.max_connections) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  TestClient newcomer(server->port());
  ASSERT_TRUE(newcomer.Send(Get("/new")));
  ASSERT_TRUE(newcomer.Read().has_value());
  EXPECT_TRUE(idle.front().ClosedWithin(milliseconds(2000)));
  EXPECT_FALSE(idle.back().ClosedWithin(milliseconds(50)));
  EXPECT_EQ(server->stats().evicted, 1u);
}

TEST(HttpServer, StopClosesEverything) {
  auto server = StartServer(FastOptions());
  TestClient client(server->port());
  ASSERT_TRUE(client.Send(Get("/x")));
  ASSERT_TRUE(client.Read().has_value());
  server->Stop();
  EXPECT_TRUE(client.ClosedWithin(milliseconds(2000)));
  server->Stop();  // idempotent
}

}  // namespace
}  // namespace holdfast
