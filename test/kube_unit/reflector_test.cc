// The reflector on the in-memory API, step by step on simulated time: list
// then watch, resume from the last version (bookmarks included), 410 ->
// list again without withdrawing, failures -> jittered backoff and health.
#include "src/kube/reflector.h"

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "src/kube/fake_kube_api.h"
#include "src/kube/kube_client.h"

namespace holdfast {
namespace {

const KubeResource kUpstreams{"holdfast.dev", "v1", "upstreams", "Upstream"};

nlohmann::json Upstream(const std::string& ns, const std::string& name, int port) {
  return {{"metadata", {{"namespace", ns}, {"name", name}}},
          {"spec", {{"hosts", {{{"address", "10.0.0.1"}, {"port", port}}}}}}};
}

class ReflectorTest : public ::testing::Test {
 protected:
  ReflectorTest() : random_(0.0) {}

  std::unique_ptr<Reflector> Make(std::string ns = "") {
    Reflector::Options options;
    options.resource = kUpstreams;
    options.ns = std::move(ns);
    options.min_backoff = absl::Milliseconds(200);
    options.max_backoff = absl::Seconds(5);
    return std::make_unique<Reflector>(options, &api_, clock_, random_, [this] { ++changes_; });
  }

  int PortOf(const Reflector& reflector, const std::string& key) {
    KubeObjects objects = reflector.objects();
    auto it = objects.find(key);
    if (it == objects.end()) return -1;
    return it->second->object["spec"]["hosts"][0]["port"].get<int>();
  }

  FakeKubeApi api_;
  SimulatedClock clock_;
  FixedRandom random_;  // backoff draws the lower edge: half the window
  int changes_ = 0;
};

TEST_F(ReflectorTest, ListsThenFollowsTheWatch) {
  api_.Put(kUpstreams, Upstream("shop", "api", 8080));
  auto reflector = Make();
  EXPECT_EQ(reflector->RunOnce(), absl::ZeroDuration());  // the list
  EXPECT_EQ(PortOf(*reflector, "shop/api"), 8080);
  EXPECT_TRUE(reflector->health().synced);
  EXPECT_TRUE(reflector->health().connected);

  api_.Put(kUpstreams, Upstream("shop", "api", 9090));
  api_.Put(kUpstreams, Upstream("shop", "web", 80));
  EXPECT_EQ(reflector->RunOnce(), absl::ZeroDuration());  // a watch with events
  EXPECT_EQ(PortOf(*reflector, "shop/api"), 9090);
  EXPECT_EQ(PortOf(*reflector, "shop/web"), 80);
  EXPECT_EQ(reflector->health().resource_version, api_.resource_version());

  api_.Delete(kUpstreams, "shop", "web");
  reflector->RunOnce();
  EXPECT_EQ(PortOf(*reflector, "shop/web"), -1);
  EXPECT_EQ(api_.calls(FakeKubeApi::Call::kList), 1) << "resumed, never listed again";
}

TEST_F(ReflectorTest, OneNamespaceOnly) {
  api_.Put(kUpstreams, Upstream("shop", "api", 8080));
  api_.Put(kUpstreams, Upstream("other", "api", 8081));
  auto reflector = Make("shop");
  reflector->RunOnce();
  api_.Put(kUpstreams, Upstream("other", "web", 1));
  api_.Put(kUpstreams, Upstream("shop", "web", 2));
  reflector->RunOnce();
  KubeObjects objects = reflector->objects();
  EXPECT_EQ(objects.size(), 2u);
  EXPECT_TRUE(objects.contains("shop/api"));
  EXPECT_TRUE(objects.contains("shop/web"));
}

TEST_F(ReflectorTest, BookmarkMovesTheResumeVersionOn) {
  const KubeResource kOther{"holdfast.dev", "v1", "routetables", "RouteTable"};
  auto reflector = Make();
  reflector->RunOnce();
  // Changes to other resources move the version; a bookmark tells this
  // resource's watchers.
  api_.Put(kOther, Upstream("shop", "x", 1));
  api_.Put(kOther, Upstream("shop", "y", 1));
  api_.Bookmark(kUpstreams);
  const std::string bookmarked = api_.resource_version();
  reflector->RunOnce();
  EXPECT_EQ(reflector->health().resource_version, bookmarked);
  // History up to the bookmark is compacted away: the resumed watch starts
  // after it, so no 410 and no relist.
  api_.Compact();
  api_.Put(kUpstreams, Upstream("shop", "api", 7));
  reflector->RunOnce();
  EXPECT_EQ(PortOf(*reflector, "shop/api"), 7);
  EXPECT_EQ(reflector->health().gone, 0);
  EXPECT_EQ(api_.calls(FakeKubeApi::Call::kList), 1);
}

TEST_F(ReflectorTest, GoneRelistsAndReplacesWithoutWithdrawing) {
  api_.Put(kUpstreams, Upstream("shop", "api", 8080));
  api_.Put(kUpstreams, Upstream("shop", "old", 1));
  auto reflector = Make();
  reflector->RunOnce();
  // While the reflector is away, objects change and history is compacted.
  api_.Put(kUpstreams, Upstream("shop", "api", 9090));
  api_.Delete(kUpstreams, "shop", "old");
  api_.Compact();
  api_.FailNext(FakeKubeApi::Call::kList, absl::UnavailableError("connection refused"));

  EXPECT_EQ(reflector->RunOnce(), absl::ZeroDuration());  // the watch: 410
  EXPECT_EQ(reflector->health().gone, 1);
  // The relist fails: nothing is withdrawn meanwhile.
  EXPECT_EQ(reflector->RunOnce(), absl::Milliseconds(100));
  EXPECT_EQ(PortOf(*reflector, "shop/api"), 8080);
  EXPECT_EQ(PortOf(*reflector, "shop/old"), 1);
  EXPECT_FALSE(reflector->health().connected);
  // The relist succeeds: the set is replaced in one step.
  int changes = changes_;
  EXPECT_EQ(reflector->RunOnce(), absl::ZeroDuration());
  EXPECT_EQ(changes_, changes + 1);
  EXPECT_EQ(PortOf(*reflector, "shop/api"), 9090);
  EXPECT_EQ(PortOf(*reflector, "shop/old"), -1);
  EXPECT_TRUE(reflector->health().connected);
  EXPECT_EQ(api_.calls(FakeKubeApi::Call::kList), 3);
}

TEST_F(ReflectorTest, FailuresBackOffExponentiallyAndHealthSaysWhy) {
  auto reflector = Make();
  for (int i = 0; i < 7; ++i) {
    api_.FailNext(FakeKubeApi::Call::kList, absl::UnavailableError("connection refused"));
  }
  std::vector<absl::Duration> waits;
  const absl::Time start = clock_.Now();
  for (int i = 0; i < 7; ++i) {
    waits.push_back(reflector->RunOnce());
    clock_.Advance(waits.back());
  }
  // Half of a window that doubles from 200 ms up to 5 s (FixedRandom(0)).
  std::vector<absl::Duration> expected = {absl::Milliseconds(100),  absl::Milliseconds(200),
                                          absl::Milliseconds(400),  absl::Milliseconds(800),
                                          absl::Milliseconds(1600), absl::Milliseconds(2500),
                                          absl::Milliseconds(2500)};
  EXPECT_EQ(waits, expected);
  Reflector::Health health = reflector->health();
  EXPECT_FALSE(health.connected);
  EXPECT_FALSE(health.synced);
  EXPECT_EQ(health.last_error, "connection refused");
  EXPECT_EQ(health.disconnected_since, start);

  EXPECT_EQ(reflector->RunOnce(), absl::ZeroDuration());
  health = reflector->health();
  EXPECT_TRUE(health.connected);
  EXPECT_EQ(health.last_contact, clock_.Now());
}

TEST_F(ReflectorTest, StalledWatchResumesFromTheSameVersion) {
  api_.Put(kUpstreams, Upstream("shop", "api", 8080));
  auto reflector = Make();
  reflector->RunOnce();
  const std::string version = reflector->health().resource_version;
  // What KubeClient returns when a watch goes silent past its bound.
  api_.FailNext(FakeKubeApi::Call::kWatch, absl::DeadlineExceededError("watch: stalled"));
  EXPECT_EQ(reflector->RunOnce(), absl::Milliseconds(100));
  EXPECT_FALSE(reflector->health().connected);
  EXPECT_EQ(reflector->health().resource_version, version);
  api_.Put(kUpstreams, Upstream("shop", "api", 9090));
  reflector->RunOnce();
  EXPECT_EQ(PortOf(*reflector, "shop/api"), 9090);
  EXPECT_TRUE(reflector->health().connected);
  EXPECT_EQ(api_.calls(FakeKubeApi::Call::kList), 1);
}

TEST_F(ReflectorTest, RetryAfterIsRespectedWhenLonger) {
  auto reflector = Make();
  api_.FailNext(FakeKubeApi::Call::kList,
                StatusFromHttp(429, R"({"kind":"Status","message":"slow down"})", "7"));
  EXPECT_EQ(reflector->RunOnce(), absl::Seconds(7));
  EXPECT_EQ(reflector->health().last_error, "HTTP 429: slow down");
}

TEST_F(ReflectorTest, AWatchThatEndsAtOnceEmptyWaitsABackoff) {
  auto reflector = Make();
  reflector->RunOnce();
  // Nothing happens: the (fake) server ends the watch at once.
  EXPECT_EQ(reflector->RunOnce(), absl::Milliseconds(100));
  EXPECT_TRUE(reflector->health().connected);
}

TEST_F(ReflectorTest, StopEndsAWatchInProgress) {
  api_.set_linger(absl::Hours(1));
  auto reflector = Make();
  reflector->Start();
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (!reflector->health().synced && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  ASSERT_TRUE(reflector->health().synced);
  api_.Put(kUpstreams, Upstream("shop", "api", 1));
  while (PortOf(*reflector, "shop/api") != 1 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  ASSERT_EQ(PortOf(*reflector, "shop/api"), 1) << "the watch in progress delivered nothing";
  const absl::Time stopping = absl::Now();
  reflector->Stop();  // returns although the watch would last an hour
  EXPECT_LT(absl::Now() - stopping, absl::Seconds(5));
}

struct HttpCase {
  long code;
  absl::StatusCode expected;
};

TEST(StatusFromHttpTest, MapsCodesOnce) {
  const std::vector<HttpCase> cases = {
      {200, absl::StatusCode::kOk},
      {201, absl::StatusCode::kOk},
      {401, absl::StatusCode::kUnauthenticated},
      {403, absl::StatusCode::kPermissionDenied},
      {404, absl::StatusCode::kNotFound},
      {409, absl::StatusCode::kAborted},
      {410, absl::StatusCode::kOutOfRange},
      {422, absl::StatusCode::kInvalidArgument},
      {429, absl::StatusCode::kUnavailable},
      {500, absl::StatusCode::kUnavailable},
      {503, absl::StatusCode::kUnavailable},
      {504, absl::StatusCode::kDeadlineExceeded},
  };
  for (const HttpCase& c : cases) {
    EXPECT_EQ(StatusFromHttp(c.code, "", "").code(), c.expected) << c.code;
  }
  absl::Status busy = StatusFromHttp(503, R"({"kind":"Status","message":"etcd down"})", "3");
  EXPECT_EQ(busy.message(), "HTTP 503: etcd down");
  EXPECT_EQ(RetryAfter(busy), absl::Seconds(3));
  EXPECT_EQ(RetryAfter(StatusFromHttp(409, "", "3")), std::nullopt);
}

}  // namespace
}  // namespace holdfast
