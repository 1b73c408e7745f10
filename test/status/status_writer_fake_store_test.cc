// StatusWriter over FakeKeyValueStore: the fence (a transaction comparing
// the leader key's create revision with the term) and store failures,
// without a server. test/etcd/status_writer_test.cc runs against real etcd.
#include <optional>

#include "gtest/gtest.h"
#include "src/election/etcd_election_backend.h"
#include "src/etcd/fake_key_value_store.h"
#include "src/status/status_writer.h"

namespace holdfast {
namespace {

// Election keys in the fake store, written as EtcdElectionBackend writes
// them, bound to leases that only end when the test says
// (FakeKeyValueStore::RevokeLease, or deleting the key).
class FakeStoreElectionBackend : public ElectionBackend {
 public:
  explicit FakeStoreElectionBackend(FakeKeyValueStore* store) : store_(store) {}

  absl::StatusOr<int64_t> GrantLease(absl::Duration) override { return ++leases_; }
  absl::Status RenewLease(int64_t) override { return absl::OkStatus(); }
  absl::Status RevokeLease(int64_t lease_id) override {
    store_->RevokeLease(lease_id);
    return absl::OkStatus();
  }
  absl::StatusOr<int64_t> CreateCandidate(const std::string& key, const std::string& replica_id,
                                          int64_t lease_id) override {
    return CreateCandidateKey(*store_, key, replica_id, lease_id);
  }
  absl::StatusOr<std::optional<Candidate>> FirstCandidate(const std::string& prefix) override {
    return FirstCandidateKey(*store_, prefix);
  }

 private:
  FakeKeyValueStore* store_;
  int64_t leases_ = 0;
};

ObjectStatus Rejected(const ObjectKey& key, const std::string& message) {
  ObjectStatus status;
  status.key = key;
  status.Reject("spec.port", message, {"/p/config/Upstream/shop/api", 4});
  return status;
}

const ObjectKey kApi{"Upstream", "shop", "api"};

class StatusWriterFakeStoreTest : public ::testing::Test {
 protected:
  StatusWriterFakeStoreTest()
      : store_(clock_),
        backend_(&store_),
        elector_(LeaseElector::Options{.prefix = "/p/election/", .replica_id = "replica-a"},
                 &backend_, clock_, random_, &metrics_),
        writer_(StatusWriter::Options{.prefix = "/p", .replica_id = "replica-a"}, &store_,
                &elector_, random_, &metrics_) {}

  std::vector<KeyValue> Stored() { return store_.GetPrefix("/p/status/", 0).value().kvs; }
  uint64_t Counter(const std::string& name) { return metrics_.GetCounter(name, "")->value(); }
  Leadership Lead() {
    elector_.Tick();
    Leadership leadership = elector_.Current();
    EXPECT_TRUE(leadership.is_leader);
    return leadership;
  }

  SimulatedClock clock_;
  FakeKeyValueStore store_;
  FakeStoreElectionBackend backend_;
  MetricsRegistry metrics_;
  SeededRandom random_{1};
  LeaseElector elector_;
  StatusWriter writer_;
};

TEST_F(StatusWriterFakeStoreTest, LeaderWritesWithItsTerm) {
  Leadership leadership = Lead();
  writer_.Update({{kApi, Rejected(kApi, "bad")}});
  ASSERT_TRUE(writer_.Sync().ok());
  std::vector<KeyValue> stored = Stored();
  ASSERT_EQ(stored.size(), 1u);
  nlohmann::json value = nlohmann::json::parse(stored[0].value);
  EXPECT_EQ(value["term"], leadership.term);
  EXPECT_EQ(value["writer"], "replica-a");
  EXPECT_EQ(Counter("holdfast_status_writes_total"), 1u);
}

// The term's key recreated (same name, same value, a later create
// revision) is not the term: only the create revision vouches for it.
TEST_F(StatusWriterFakeStoreTest, WriteIsRefusedOnceTheFenceNoLongerHolds) {
  Leadership leadership = Lead();
  writer_.Update({{kApi, Rejected(kApi, "bad")}});
  ASSERT_TRUE(writer_.Sync().ok());
  store_.Delete(leadership.leader_key);
  store_.Put(leadership.leader_key, "replica-a");
  ASSERT_TRUE(elector_.Current().is_leader);  // its clock still says so

  writer_.Update({{kApi, Rejected(kApi, "worse")}});
  absl::Status synced = writer_.Sync();
  EXPECT_TRUE(absl::IsFailedPrecondition(synced)) << synced;
  EXPECT_EQ(Counter("holdfast_status_writes_fenced_total"), 1u);
  EXPECT_EQ(nlohmann::json::parse(Stored()[0].value)["reasons"][0]["message"], "bad");
  // The elector was told and stepped down; nothing more is written.
  EXPECT_FALSE(elector_.Current().is_leader);
  EXPECT_TRUE(writer_.Sync().ok());
  EXPECT_EQ(Counter("holdfast_status_writes_fenced_total"), 1u);
}

TEST_F(StatusWriterFakeStoreTest, StoreDownIsAnErrorNotAFence) {
  Lead();
  writer_.Update({{kApi, Rejected(kApi, "bad")}});
  ASSERT_TRUE(writer_.Sync().ok());

  store_.SetUnavailable(true);
  writer_.Update({{kApi, Rejected(kApi, "worse")}});
  absl::Status synced = writer_.Sync();
  EXPECT_TRUE(absl::IsUnavailable(synced)) << synced;
  EXPECT_EQ(Counter("holdfast_status_write_errors_total"), 1u);
  EXPECT_EQ(Counter("holdfast_status_writes_fenced_total"), 0u);
  EXPECT_TRUE(elector_.Current().is_leader);

  store_.SetUnavailable(false);
  ASSERT_TRUE(writer_.Sync().ok());
  EXPECT_EQ(nlohmann::json::parse(Stored()[0].value)["reasons"][0]["message"], "worse");
}

}  // namespace
}  // namespace holdfast
