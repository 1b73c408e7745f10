// StatusWriter with a real LeaseElector, against a real etcd server.
#include "src/status/status_writer.h"

#include "gtest/gtest.h"
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
                 &backend_, Clock::Real(), &metrics_),
        writer_(StatusWriter::Options{.prefix = "/p", .replica_id = "replica-a"}, client_.get(),
                &elector_, &metrics_) {}

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
                     &other_backend, Clock::Real(), &other_metrics);
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

}  // namespace
}  // namespace holdfast
