// EtcdClient and EtcdConfigSource against a real etcd server.
#include "src/etcd/etcd_client.h"

#include <atomic>
#include <cstdlib>
#include <thread>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "src/source/etcd_config_source.h"
#include "test/etcd/etcd_test_server.h"

namespace holdfast {
namespace {

using testing::EtcdTestServer;

TEST(PrefixRangeEnd, IncrementsTheLastByte) {
  EXPECT_EQ(PrefixRangeEnd("/a/"), "/a0");
  EXPECT_EQ(PrefixRangeEnd(std::string("a\xff", 2)), "b");
}

TEST(EtcdClient, PutGetDeleteAndPagedListingAtOneRevision) {
  EtcdTestServer server;
  auto client = server.Client();
  // More keys than one page holds.
  for (int batch = 0; batch < 13; ++batch) {
    etcdserverpb::TxnRequest txn;
    for (int i = 0; i < 100; ++i) {
      auto* put = txn.add_success()->mutable_request_put();
      put->set_key(absl::StrCat("/t/k", batch * 100 + i));
      put->set_value("v");
    }
    ASSERT_TRUE(client->Txn(txn).ok());
  }
  ASSERT_TRUE(client->Put("/u/outside", "x").ok());
  absl::StatusOr<RangeResult> listing = client->GetPrefix("/t/");
  ASSERT_TRUE(listing.ok()) << listing.status();
  EXPECT_EQ(listing->kvs.size(), 1300u);
  absl::StatusOr<int64_t> deleted = client->Delete("/t/", /*prefix=*/true);
  ASSERT_TRUE(deleted.ok());
  EXPECT_EQ(*deleted, 1300);
  // Reading at the old revision still sees them all.
  absl::StatusOr<RangeResult> past = client->GetPrefix("/t/", listing->revision);
  ASSERT_TRUE(past.ok());
  EXPECT_EQ(past->kvs.size(), 1300u);
}

TEST(EtcdClient, FailsOverToAnEndpointThatAnswers) {
  EtcdTestServer server;
  EtcdClientOptions options;
  options.endpoints = {absl::StrCat("127.0.0.1:", testing::FreeLoopbackPort()), server.endpoint()};
  options.call_timeout = absl::Seconds(2);
  auto client = std::move(EtcdClient::Create(options)).value();
  ASSERT_TRUE(client->Put("/k", "v").ok());
  EXPECT_EQ(client->current_endpoint(), server.endpoint());
}

TEST(EtcdClient, AuthenticatesWithUsernameAndPassword) {
  EtcdTestServer server;
  std::string etcdctl = absl::StrCat("ETCDCTL_API=3 etcdctl --endpoints ", server.endpoint(), " ");
  ASSERT_EQ(std::system((etcdctl + "user add root:s3cret --interactive=false >/dev/null").c_str()),
            0);
  ASSERT_EQ(std::system((etcdctl + "auth enable >/dev/null").c_str()), 0);

  EtcdClientOptions options;
  options.endpoints = {server.endpoint()};
  options.username = "root";
  options.password = "s3cret";
  auto client = std::move(EtcdClient::Create(options)).value();
  EXPECT_TRUE(client->Put("/auth/k", "v").ok());
  EXPECT_EQ(client->Get("/auth/k").value().kvs.size(), 1u);

  EXPECT_EQ(client->contact().refused, "");

  options.password = "wrong";
  auto refused = std::move(EtcdClient::Create(options)).value();
  absl::Status status = refused->Put("/auth/k", "v").status();
  EXPECT_FALSE(status.ok());
  EXPECT_TRUE(absl::StrContains(status.message(), "authenticat")) << status;
  // A refusal, not an unreachable store.
  EXPECT_TRUE(absl::StrContains(refused->contact().refused, "authentication failed"))
      << refused->contact().refused;
  EXPECT_FALSE(refused->contact().failing);

  options.username.clear();
  auto anonymous = std::move(EtcdClient::Create(options)).value();
  EXPECT_FALSE(anonymous->Put("/auth/k", "v").ok());
}

TEST(EtcdClient, AUserWithNoStoreToAuthenticateWithGetsAFailureNotAnEmptyAnswer) {
  EtcdClientOptions options;
  options.endpoints = {absl::StrCat("127.0.0.1:", testing::FreeLoopbackPort()),
                       absl::StrCat("127.0.0.1:", testing::FreeLoopbackPort())};
  options.username = "root";
  options.password = "s3cret";
  options.call_timeout = absl::Seconds(1);
  auto client = std::move(EtcdClient::Create(options)).value();
  absl::StatusOr<RangeResult> listing = client->GetPrefix("/k/");
  EXPECT_TRUE(absl::IsUnavailable(listing.status())) << listing.status();
  absl::StatusOr<int64_t> lease = client->LeaseGrant(absl::Seconds(5));
  EXPECT_TRUE(absl::IsUnavailable(lease.status())) << lease.status();
  EXPECT_TRUE(client->contact().failing);
  EXPECT_EQ(client->contact().refused, "");
}

TEST(EtcdClient, MutualTls) {
  EtcdTestServer server(EtcdTestServer::Options{.mutual_tls = true});
  auto client = server.Client();  // CA, client certificate and key
  EXPECT_TRUE(client->Put("/tls/k", "v").ok());

  // Without a client certificate the server refuses the handshake.
  EtcdClientOptions options;
  options.endpoints = {"https://" + server.endpoint()};
  options.ca_file = server.ca_file();
  options.call_timeout = absl::Seconds(2);
  auto anonymous = std::move(EtcdClient::Create(options)).value();
  EXPECT_FALSE(anonymous->Put("/tls/k", "v").ok());

  options.cert_file = server.client_cert_file();
  EXPECT_FALSE(EtcdClient::Create(options).ok());  // a certificate needs its key
}

TEST(EtcdClient, LeaseKeepAliveSaysNotFoundOnceRevoked) {
  EtcdTestServer server;
  auto client = server.Client();
  absl::StatusOr<int64_t> lease = client->LeaseGrant(absl::Seconds(5));
  ASSERT_TRUE(lease.ok());
  EXPECT_TRUE(client->LeaseKeepAlive(*lease).ok());
  ASSERT_TRUE(client->LeaseRevoke(*lease).ok());
  EXPECT_TRUE(absl::IsNotFound(client->LeaseKeepAlive(*lease)));
}

TEST(EtcdClient, WatchDeliversEventsInOrderAndReportsCompaction) {
  EtcdTestServer server;
  auto client = server.Client();
  int64_t start = client->Put("/w/a", "1").value();
  ASSERT_TRUE(client->Put("/w/b", "2").ok());
  ASSERT_TRUE(client->Delete("/w/a").ok());

  absl::Notification stop;
  std::vector<std::string> seen;
  std::thread watcher([&] {
    absl::Status ended = client->Watch(
        WatchOptions{.prefix = "/w/", .start_revision = start},
        [&](const WatchBatch& batch) {
          for (const WatchEvent& e : batch.events) {
            seen.push_back(
                absl::StrCat(e.type == WatchEvent::Type::kPut ? "put " : "delete ", e.kv.key));
          }
          if (seen.size() >= 3 && !stop.HasBeenNotified()) stop.Notify();
        },
        &stop);
    EXPECT_TRUE(absl::IsCancelled(ended)) << ended;
  });
  watcher.join();
  EXPECT_EQ(seen, (std::vector<std::string>{"put /w/a", "put /w/b", "delete /w/a"}));

  int64_t now = client->Put("/w/c", "3").value();
  ASSERT_TRUE(client->Compact(now).ok());
  absl::Notification never;
  int64_t compacted = 0;
  absl::Status ended = client->Watch(
      WatchOptions{.prefix = "/w/", .start_revision = start}, [](const WatchBatch&) {}, &never,
      &compacted);
  EXPECT_TRUE(absl::IsOutOfRange(ended)) << ended;
  EXPECT_EQ(compacted, now);
}

TEST(EtcdClient, WatchEndsWhenTheServerDies) {
  EtcdTestServer server;
  auto client = server.Client();
  absl::Notification stop;
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    server.Kill();
  });
  absl::Status ended = client->Watch(
      WatchOptions{.prefix = "/x/",
                   .progress_interval = absl::Milliseconds(200),
                   .stall_timeout = absl::Seconds(2)},
      [](const WatchBatch&) {}, &stop);
  killer.join();
  EXPECT_FALSE(ended.ok());
  EXPECT_FALSE(absl::IsCancelled(ended)) << ended;
}

// Nothing arrives on an idle watch; stop ends it all the same.
TEST(EtcdClient, IdleWatchEndsWhenStopped) {
  EtcdTestServer server;
  auto client = server.Client();
  absl::Notification stop;
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    stop.Notify();
  });
  absl::Status ended = client->Watch(
      WatchOptions{.prefix = "/idle/"}, [](const WatchBatch&) {}, &stop);
  stopper.join();
  EXPECT_TRUE(absl::IsCancelled(ended)) << ended;
}

// An idle watch lives on progress answers; once the member is paused (it
// keeps the connection open and answers nothing) the watch ends as stalled
// after stall_timeout, long before the connection's keepalive would notice
// (10 s + 5 s), and as DeadlineExceeded, which only the stall check returns.
TEST(EtcdClient, IdleWatchLivesOnProgressAndEndsWhenTheMemberFallsSilent) {
  EtcdTestServer server;
  auto client = server.Client();
  absl::Notification stop;
  std::atomic<bool> paused = false;
  std::thread pauser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // 2.5 stall timeouts
    server.Pause();
    paused = true;
  });
  absl::Status ended = client->Watch(
      WatchOptions{.prefix = "/quiet/",
                   .progress_interval = absl::Milliseconds(200),
                   .stall_timeout = absl::Seconds(1)},
      [](const WatchBatch&) {}, &stop);
  const bool ended_after_pause = paused;
  pauser.join();
  server.Resume();
  EXPECT_TRUE(ended_after_pause) << "the idle watch ended while the member answered: " << ended;
  EXPECT_TRUE(absl::IsDeadlineExceeded(ended)) << ended;
  EXPECT_TRUE(absl::StrContains(ended.message(), "no answer for 1s")) << ended;
}

// The source keeps what it served while the store is down, and catches up
// (including changes made while it was away) when the store returns.
TEST(EtcdConfigSource, SurvivesTheStoreGoingAwayAndCatchesUp) {
  EtcdTestServer server;
  auto client = server.Client(absl::Milliseconds(500));
  const std::string key = "/s/config/Upstream/shop/api";
  auto upstream = [](int port) {
    return absl::StrCat(
        "apiVersion: holdfast.dev/v1\nkind: Upstream\nmetadata: {name: api, namespace: shop}\n"
        "spec:\n  hosts:\n  - {address: 127.0.0.1, port: ",
        port, "}\n");
  };
  ASSERT_TRUE(client->Put(key, upstream(8081)).ok());

  MetricsRegistry metrics;
  absl::Mutex mu;
  std::string version;
  int published = 0;
  EtcdConfigSource::Options options;
  options.prefix = "/s";
  options.watch.progress_interval = absl::Milliseconds(200);
  options.watch.stall_timeout = absl::Seconds(2);
  options.max_backoff = absl::Milliseconds(500);
  EtcdConfigSource source(options, client.get(), Clock::Real(), &metrics, [&](SnapshotPtr s) {
    absl::MutexLock lock(&mu);
    version = s->version();
    ++published;
  });
  source.Start();
  auto wait = [&](const std::function<bool()>& condition) {
    for (int i = 0; i < 300 && !condition(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return condition();
  };
  ASSERT_TRUE(wait([&] {
    absl::MutexLock lock(&mu);
    return published == 1;
  }));
  std::string first;
  {
    absl::MutexLock lock(&mu);
    first = version;
  }

  server.Kill();
  EXPECT_TRUE(wait([&] { return !source.health().connected; }));
  EXPECT_FALSE(source.health().last_error.empty());

  server.Start();
  ASSERT_TRUE(client->Put(key, upstream(9091)).ok());
  EXPECT_TRUE(wait([&] {
    absl::MutexLock lock(&mu);
    return published == 2 && version != first;
  }));
  EXPECT_TRUE(source.health().connected);
  source.Stop();
}

}  // namespace
}  // namespace holdfast
