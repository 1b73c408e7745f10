// The Lease backend driven by the same LeaseElector as etcd, on simulated
// time: client-go's rules (expiry by the observer's clock, release, leader
// transitions, preferred holder) and the elector's promise of at most one
// acting leader at every instant.
#include "src/election/kube_lease_backend.h"

#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "src/common/metrics.h"
#include "src/common/random.h"
#include "src/election/lease_elector.h"

namespace holdfast {
namespace {

// One Lease in memory, with resourceVersions and conflicts like the API
// server's. Each replica reaches it through its own view, which can be cut.
class FakeLeaseStore {
 public:
  absl::StatusOr<LeaseStore::Versioned> Get() {
    if (!exists_) return absl::NotFoundError("lease not found");
    return LeaseStore::Versioned{record_, absl::StrCat(version_)};
  }
  absl::StatusOr<std::string> Create(const LeaseRecord& record) {
    if (exists_) return absl::AlreadyExistsError("lease exists");
    exists_ = true;
    return Write(record);
  }
  absl::StatusOr<std::string> Update(const LeaseRecord& record, const std::string& version) {
    if (!exists_) return absl::NotFoundError("lease not found");
    if (version != absl::StrCat(version_)) return absl::AbortedError("conflict");
    if (record == record_) return absl::StrCat(version_);  // the API server keeps the version
    return Write(record);
  }
  const LeaseRecord& record() const { return record_; }
  void SetPreferredHolder(const std::string& holder) {
    record_.preferred_holder = holder;
    ++version_;
  }

 private:
  absl::StatusOr<std::string> Write(const LeaseRecord& record) {
    record_ = record;
    return absl::StrCat(++version_);
  }
  bool exists_ = false;
  LeaseRecord record_;
  int64_t version_ = 0;
};

class ReplicaView : public LeaseStore {
 public:
  explicit ReplicaView(FakeLeaseStore* store) : store_(store) {}
  void SetUnreachable(bool unreachable) { unreachable_ = unreachable; }
  absl::StatusOr<Versioned> Get() override {
    if (unreachable_) return absl::UnavailableError("blackholed");
    return store_->Get();
  }
  absl::StatusOr<std::string> Create(const LeaseRecord& record) override {
    if (unreachable_) return absl::UnavailableError("blackholed");
    return store_->Create(record);
  }
  absl::StatusOr<std::string> Update(const LeaseRecord& record,
                                     const std::string& version) override {
    if (unreachable_) return absl::UnavailableError("blackholed");
    return store_->Update(record, version);
  }

 private:
  FakeLeaseStore* store_;
  bool unreachable_ = false;
};

LeaseElector::Options Options(const std::string& id) {
  LeaseElector::Options options;
  options.prefix = "/holdfast/election/";
  options.replica_id = id;
  options.lease_duration = absl::Seconds(15);
  options.renew_deadline = absl::Seconds(10);
  options.retry_period = absl::Seconds(2);
  return options;
}

struct BackendReplica {
  BackendReplica(const std::string& id, FakeLeaseStore* store, const Clock& clock)
      : view(store),
        backend(id, &view, clock),
        elector(Options(id), &backend, clock, random, &metrics) {}
  ReplicaView view;
  FixedRandom random{0.5};
  MetricsRegistry metrics;
  KubeLeaseBackend backend;
  LeaseElector elector;
};

class KubeLeaseElectionTest : public ::testing::Test {
 protected:
  BackendReplica& Add(const std::string& id) {
    replicas_.push_back(std::make_unique<BackendReplica>(id, &store_, clock_));
    return *replicas_.back();
  }
  // Advances one retry period, ticking the replicas that are not paused,
  // and checks that at most one replica acts as leader at every second.
  void Rounds(int rounds, const std::vector<BackendReplica*>& ticking) {
    for (int i = 0; i < rounds; ++i) {
      for (int s = 0; s < 2; ++s) {
        clock_.Advance(absl::Seconds(1));
        ExpectAtMostOneLeader();
      }
      for (BackendReplica* r : ticking) r->elector.Tick();
      ExpectAtMostOneLeader();
    }
  }
  void ExpectAtMostOneLeader() {
    int leaders = 0;
    for (const auto& r : replicas_) leaders += r->elector.Current().is_leader;
    ASSERT_LE(leaders, 1) << "at " << clock_.Now();
  }
  std::string Leader() {
    for (const auto& r : replicas_) {
      if (r->elector.Current().is_leader) return r->elector.Current().replica_id;
    }
    return "";
  }

  SimulatedClock clock_;
  FakeLeaseStore store_;
  std::vector<std::unique_ptr<BackendReplica>> replicas_;
};

TEST_F(KubeLeaseElectionTest, TheFirstReplicaTakesTheLeaseAndRenewsItLikeClientGo) {
  BackendReplica& a = Add("a");
  BackendReplica& b = Add("b");
  Rounds(1, {&a, &b});
  EXPECT_EQ(Leader(), "a");
  EXPECT_EQ(store_.record().holder_identity, "a");
  EXPECT_EQ(store_.record().lease_duration_seconds, 15);
  EXPECT_EQ(store_.record().lease_transitions, 0);
  EXPECT_EQ(a.elector.Current().term, 1);
  EXPECT_EQ(b.elector.Current().leader_id, "a");
  EXPECT_EQ(b.elector.Current().term, 1);
  const absl::Time acquired = store_.record().acquire_time;
  absl::Time renewed = store_.record().renew_time;
  for (int i = 0; i < 10; ++i) {
    Rounds(1, {&a, &b});
    EXPECT_GT(store_.record().renew_time, renewed) << "every renewal changes the object";
    renewed = store_.record().renew_time;
  }
  EXPECT_EQ(store_.record().acquire_time, acquired);
  EXPECT_EQ(a.elector.Current().term, 1);
  EXPECT_EQ(Leader(), "a");
}

// The paused leader stops acting at its renew deadline (10 s after it sent
// its last renewal); the follower takes over only once its own clock shows
// no change for the lease duration (15 s after it saw that renewal).
TEST_F(KubeLeaseElectionTest, APausedLeaderIsReplacedOnlyAfterTheLeaseExpiresByTheObserversClock) {
  BackendReplica& a = Add("a");
  BackendReplica& b = Add("b");
  Rounds(2, {&a, &b});
  ASSERT_EQ(Leader(), "a");
  Rounds(5, {&b});  // a paused for 10 s
  EXPECT_FALSE(a.elector.Current().is_leader) << "past its renew deadline";
  EXPECT_EQ(store_.record().holder_identity, "a") << "b waits out the lease";
  Rounds(3, {&b});
  EXPECT_EQ(Leader(), "b");
  EXPECT_EQ(store_.record().lease_transitions, 1);
  EXPECT_EQ(b.elector.Current().term, 2);
  // a wakes up: it follows, and never renews b's Lease as its own.
  Rounds(3, {&a, &b});
  EXPECT_EQ(Leader(), "b");
  EXPECT_EQ(a.elector.Current().leader_id, "b");
  EXPECT_EQ(a.elector.Current().term, 2);
}

TEST_F(KubeLeaseElectionTest, ResignReleasesTheLeaseAndAnotherReplicaTakesItAtOnce) {
  BackendReplica& a = Add("a");
  BackendReplica& b = Add("b");
  Rounds(2, {&a, &b});
  a.elector.Resign();
  EXPECT_EQ(store_.record().holder_identity, "");
  EXPECT_EQ(store_.record().lease_duration_seconds, 1);
  Rounds(1, {&b});
  EXPECT_EQ(Leader(), "b");
  EXPECT_EQ(store_.record().lease_transitions, 1);
}

TEST_F(KubeLeaseElectionTest, APreferredHolderEndsTheCurrentTerm) {
  BackendReplica& a = Add("a");
  BackendReplica& b = Add("b");
  BackendReplica& c = Add("c");
  Rounds(2, {&a, &b, &c});
  ASSERT_EQ(Leader(), "a");
  store_.SetPreferredHolder("c");
  Rounds(2, {&a, &b, &c});
  EXPECT_EQ(Leader(), "c");
  EXPECT_EQ(store_.record().holder_identity, "c");
  Rounds(10, {&a, &b, &c});
  EXPECT_EQ(Leader(), "c") << "the preferred holder keeps it";
}

TEST_F(KubeLeaseElectionTest, ALeaderCutOffStepsDownBeforeAnotherCanTakeOver) {
  BackendReplica& a = Add("a");
  BackendReplica& b = Add("b");
  Rounds(2, {&a, &b});
  ASSERT_EQ(Leader(), "a");
  a.view.SetUnreachable(true);
  Rounds(5, {&a, &b});
  EXPECT_FALSE(a.elector.Current().is_leader);
  Rounds(4, {&a, &b});
  EXPECT_EQ(Leader(), "b");
  a.view.SetUnreachable(false);
  Rounds(3, {&a, &b});
  EXPECT_EQ(Leader(), "b");
  EXPECT_EQ(a.elector.Current().leader_id, "b");
}

TEST_F(KubeLeaseElectionTest, ARestartedProcessOfTheHolderTakesItsLeaseBackAtOnce) {
  {
    BackendReplica& a = Add("a");
    Rounds(2, {&a});
  }
  replicas_.clear();  // killed: no release
  BackendReplica& a2 = Add("a");
  BackendReplica& b = Add("b");
  Rounds(1, {&a2, &b});
  EXPECT_EQ(Leader(), "a");
  EXPECT_EQ(store_.record().lease_transitions, 0) << "the same holder: no transition";
}

TEST_F(KubeLeaseElectionTest, CandidatesRacingForAFreeLeaseElectOne) {
  std::vector<BackendReplica*> all;
  for (const std::string id : {"a", "b", "c", "d"}) all.push_back(&Add(id));
  Rounds(1, all);
  EXPECT_NE(Leader(), "");
  Rounds(20, all);
  EXPECT_EQ(store_.record().lease_transitions, 0);
}

}  // namespace
}  // namespace holdfast
