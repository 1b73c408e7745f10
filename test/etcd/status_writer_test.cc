// StatusWriter with a real LeaseElector, against a real etcd server.
#include "src/status/status_writer.h"

#include <chrono>
#include <functional>
#include <random>
#include <thread>

#include "gtest/gtest.h"
#include "src/common/backoff.h"
#include "src/election/etcd_election_backend.h"
#include "test/etcd/etcd_test_server.h"

namespace holdfast {
namespace {

using testing::EtcdTestServer;

ObjectStatus Rejected(const ObjectKey& key, const std::string& message) {
  ObjectStatus status;
  status.key = key;
  status.Reject("spec.port", message, {"/p/config/Upstream/shop/api", 4});
  return status;
}

class StatusWriterTest : public ::testing::Test {
 protected:
  StatusWriterTest()
      : client_(server_.Client()),
        backend_(client_.get()),
        elector_(LeaseElector::Options{.prefix = "/p/election/", .replica_id = "replica-a"},
                 &backend_, Clock::Real(), random_, &metrics_),
        writer_(StatusWriter::Options{.prefix = "/p", .replica_id = "replica-a"}, client_.get(),
                &elector_, random_, &metrics_) {}

  std::map<std::string, std::string> Stored() {
    std::map<std::string, std::string> out;
    RangeResult listing = client_->GetPrefix("/p/status/").value();
    for (const KeyValue& kv : listing.kvs) out[kv.key] = kv.value;
    return out;
  }
  uint64_t Counter(const std::string& name) {
    return metrics_.GetCounter(name, "")->value();
  }

  EtcdTestServer server_;
  std::unique_ptr<EtcdClient> client_;
  EtcdElectionBackend backend_;
  MetricsRegistry metrics_;
  SeededRandom random_{1};
  LeaseElector elector_;
  StatusWriter writer_;
};

const ObjectKey kApi{"Upstream", "shop", "api"};
const ObjectKey kWeb{"Upstream", "shop", "web"};

TEST_F(StatusWriterTest, FollowerNeverWrites) {
  // Another replica leads.
  EtcdElectionBackend other_backend(client_.get());
  MetricsRegistry other_metrics;
  LeaseElector other(LeaseElector::Options{.prefix = "/p/election/", .replica_id = "replica-b"},
                     &other_backend, Clock::Real(), random_, &other_metrics);
  other.Tick();
  elector_.Tick();
  ASSERT_TRUE(other.Current().is_leader);
  ASSERT_FALSE(elector_.Current().is_leader);
  EXPECT_EQ(elector_.Current().leader_id, "replica-b");
  writer_.Update({{kApi, Rejected(kApi, "bad")}});
  EXPECT_TRUE(writer_.Sync().ok());
  EXPECT_TRUE(Stored().empty());
}

TEST_F(StatusWriterTest, LeaderWritesOnlyChangesAndReconcilesOnTakeover) {
  // Left over from an earlier term: garbage for an object that exists and a
  // status for one that no longer does.
  ASSERT_TRUE(client_->Put("/p/status/Upstream/shop/api", "garbage").ok());
  ASSERT_TRUE(client_->Put("/p/status/Upstream/shop/gone", "{}").ok());
  elector_.Tick();
  ASSERT_TRUE(elector_.Current().is_leader);
  ObjectStatus web;
  web.key = kWeb;
  writer_.Update({{kApi, Rejected(kApi, "bad")}, {kWeb, web}});
  ASSERT_TRUE(writer_.Sync().ok());
  std::map<std::string, std::string> stored = Stored();
  ASSERT_EQ(stored.size(), 2u);
  nlohmann::json api = nlohmann::json::parse(stored.at("/p/status/Upstream/shop/api"));
  EXPECT_EQ(api["state"], "Rejected");
  EXPECT_EQ(api["writer"], "replica-a");
  EXPECT_EQ(api["term"], elector_.Current().term);
  EXPECT_EQ(api["reasons"][0]["location"], "/p/config/Upstream/shop/api:4");
  EXPECT_EQ(nlohmann::json::parse(stored.at("/p/status/Upstream/shop/web"))["state"], "Accepted");
  EXPECT_EQ(Counter("holdfast_status_writes_total"), 2u);

  // Nothing changed: nothing written.
  int64_t revision = client_->Get("/any").value().revision;
  ASSERT_TRUE(writer_.Sync().ok());
  EXPECT_EQ(client_->Get("/any").value().revision, revision);

  // One change: one write.
  writer_.Update({{kApi, Rejected(kApi, "worse")}, {kWeb, web}});
  ASSERT_TRUE(writer_.Sync().ok());
  EXPECT_EQ(Counter("holdfast_status_writes_total"), 3u);
}

TEST_F(StatusWriterTest, WriteOfAnEndedTermIsRefusedCountedAndNotRetried) {
  elector_.Tick();
  Leadership leadership = elector_.Current();
  ASSERT_TRUE(leadership.is_leader);
  // The term ends in the store (as when the lease expires during a pause)
  // while this replica's clock still says it leads.
  absl::StatusOr<RangeResult> key = client_->Get(leadership.leader_key);
  ASSERT_TRUE(key.ok());
  ASSERT_EQ(key->kvs.size(), 1u);
  ASSERT_TRUE(client_->LeaseRevoke(key->kvs[0].lease).ok());
  ASSERT_TRUE(elector_.Current().is_leader);

  writer_.Update({{kApi, Rejected(kApi, "bad")}});
  absl::Status synced = writer_.Sync();
  EXPECT_TRUE(absl::IsFailedPrecondition(synced)) << synced;
  EXPECT_EQ(Counter("holdfast_status_writes_fenced_total"), 1u);
  EXPECT_TRUE(Stored().empty());
  // The elector was told and stepped down; the next pass writes nothing.
  EXPECT_FALSE(elector_.Current().is_leader);
  EXPECT_TRUE(writer_.Sync().ok());
  EXPECT_EQ(Counter("holdfast_status_writes_fenced_total"), 1u);
  EXPECT_TRUE(Stored().empty());

  // A new term writes.
  elector_.Tick();
  ASSERT_TRUE(elector_.Current().is_leader);
  EXPECT_GT(elector_.Current().term, leadership.term);
  ASSERT_TRUE(writer_.Sync().ok());
  EXPECT_EQ(Stored().size(), 1u);
}

// A failed pass is retried on its own (nothing else wakes the writer here),
// paced by the backoff, until the store answers again.
TEST_F(StatusWriterTest, FailedPassIsRetriedWithBackoffUntilTheStoreReturns) {
  // Restarting the test etcd sometimes takes about 10s before its readiness
  // probe gets an answer: a term that outlives that.
  MetricsRegistry election_metrics;
  SeededRandom writer_random(2);  // not random_: the writer draws on its own thread
  LeaseElector elector(LeaseElector::Options{.prefix = "/p/election/",
                                             .replica_id = "replica-a",
                                             .lease_duration = absl::Seconds(90),
                                             .renew_deadline = absl::Seconds(60)},
                       &backend_, Clock::Real(), random_, &election_metrics);
  auto wait = [](const std::function<bool()>& condition) {
    for (int i = 0; i < 200 && !condition(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return condition();
  };
  auto stored_message = [&]() -> std::string {
    absl::StatusOr<RangeResult> got = client_->Get("/p/status/Upstream/shop/api");
    if (!got.ok() || got->kvs.empty()) return "";
    nlohmann::json value = nlohmann::json::parse(got->kvs[0].value);
    return value["reasons"][0]["message"];
  };
  elector.Tick();
  ASSERT_TRUE(elector.Current().is_leader);
  StatusWriter retrying(StatusWriter::Options{.prefix = "/p",
                                              .replica_id = "replica-a",
                                              .min_backoff = absl::Milliseconds(50),
                                              .max_backoff = absl::Milliseconds(400)},
                        client_.get(), &elector, writer_random, &metrics_);
  retrying.Start();
  retrying.Update({{kApi, Rejected(kApi, "bad")}});
  ASSERT_TRUE(wait([&] { return stored_message() == "bad"; }));

  server_.Kill();
  retrying.Update({{kApi, Rejected(kApi, "worse")}});
  // Several failed passes after the one Update() woke: retries.
  ASSERT_TRUE(wait([&] { return Counter("holdfast_status_write_errors_total") >= 4; }));

  server_.Start();
  // Renewals keep the term (the lease outlives the restart); they cause no
  // transition, so only the writer's own retries can write this.
  ASSERT_TRUE(wait([&] {
    elector.Tick();
    return stored_message() == "worse";
  }));
  EXPECT_EQ(elector.Current().transitions, 1u);
  EXPECT_TRUE(elector.Current().is_leader);
  retrying.Stop();
}

TEST(StatusWriterBackoffTest, DefaultBackoffDoublesFrom200msTo5sWithJitterAndResets) {
  StatusWriter::Options defaults;
  EXPECT_EQ(defaults.min_backoff, absl::Milliseconds(200));
  EXPECT_EQ(defaults.max_backoff, absl::Seconds(5));

  // Each delay drawn from the upper half of a window doubling up to the max.
  FixedRandom lowest(0), highest(0.999999);
  Backoff low(defaults.min_backoff, defaults.max_backoff, lowest);
  Backoff high(defaults.min_backoff, defaults.max_backoff, highest);
  const absl::Duration windows[] = {absl::Milliseconds(200), absl::Milliseconds(400),
                                    absl::Milliseconds(800), absl::Milliseconds(1600),
                                    absl::Milliseconds(3200), absl::Seconds(5),
                                    absl::Seconds(5)};
  for (absl::Duration window : windows) {
    EXPECT_EQ(low.Next(), window / 2);
    absl::Duration longest = high.Next();
    EXPECT_LE(longest, window);
    EXPECT_GT(longest, window * 0.999);
  }
  low.Reset();
  EXPECT_EQ(low.Next(), absl::Milliseconds(100));

  // Two writers drawing differently retry at different times.
  SeededRandom one(1), two(2);
  Backoff a(defaults.min_backoff, defaults.max_backoff, one);
  Backoff b(defaults.min_backoff, defaults.max_backoff, two);
  absl::Duration at_a, at_b;
  for (int i = 0; i < 8; ++i) {
    at_a += a.Next();
    at_b += b.Next();
    EXPECT_NE(at_a, at_b) << "retry " << i;
  }
}

}  // namespace
}  // namespace holdfast
