#include "src/election/lease_elector.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "src/common/clock.h"
#include "src/common/metrics.h"
#include "src/common/random.h"

namespace holdfast {
namespace {

constexpr char kPrefix[] = "/holdfast/election/";

// An in-memory etcd for election: leases expiring on a clock (measured from
// when a grant or renewal reaches the store), keys bound to leases and deleted
// with them, and a revision bumped by every create and delete.
class FakeStore {
 public:
  explicit FakeStore(const Clock& clock) : clock_(clock) {}

  int64_t Grant(absl::Duration ttl) {
    absl::MutexLock lock(&mu_);
    ExpireLocked();
    int64_t id = next_lease_++;
    leases_[id] = Lease{ttl, clock_.Monotonic() + ttl};
    return id;
  }
  absl::Status Renew(int64_t id) {
    absl::MutexLock lock(&mu_);
    ExpireLocked();
    auto it = leases_.find(id);
    if (it == leases_.end()) return absl::NotFoundError("lease not found");
    it->second.expiry = clock_.Monotonic() + it->second.ttl;
    return absl::OkStatus();
  }
  absl::Status Revoke(int64_t id) {
    absl::MutexLock lock(&mu_);
    ExpireLocked();
    if (!leases_.count(id)) return absl::NotFoundError("lease not found");
    EndLeaseLocked(id, clock_.Monotonic());
    return absl::OkStatus();
  }
  absl::StatusOr<int64_t> Create(const std::string& key, const std::string& value, int64_t lease) {
    absl::MutexLock lock(&mu_);
    ExpireLocked();
    if (auto it = keys_.find(key); it != keys_.end()) return it->second.create_revision;
    if (!leases_.count(lease)) return absl::NotFoundError("lease not found");
    keys_[key] = Entry{value, lease, ++revision_};
    return revision_;
  }
  std::optional<Candidate> First(const std::string& prefix) {
    absl::MutexLock lock(&mu_);
    ExpireLocked();
    std::optional<Candidate> first;
    for (const auto& [key, entry] : keys_) {
      if (!absl::StartsWith(key, prefix)) continue;
      if (!first || entry.create_revision < first->create_revision) {
        first = Candidate{key, entry.value, entry.create_revision, entry.lease};
      }
    }
    return first;
  }

  // Ends a lease now, as if etcd had expired it early (e.g. after an etcd
  // restart lost it).
  void ExpireLease(int64_t id) {
    absl::MutexLock lock(&mu_);
    ExpireLocked();
    if (leases_.count(id)) EndLeaseLocked(id, clock_.Monotonic());
  }
  bool LeaseAlive(int64_t id) {
    absl::MutexLock lock(&mu_);
    ExpireLocked();
    return leases_.count(id) > 0;
  }
  // Monotonic time a lease expired or was revoked, if it has.
  std::optional<absl::Duration> EndedAt(int64_t id) {
    absl::MutexLock lock(&mu_);
    ExpireLocked();
    auto it = ended_.find(id);
    if (it == ended_.end()) return std::nullopt;
    return it->second;
  }
  // The lease a key is bound to; 0 when the key does not exist.
  int64_t LeaseOfKey(const std::string& key) {
    absl::MutexLock lock(&mu_);
    ExpireLocked();
    auto it = keys_.find(key);
    return it == keys_.end() ? 0 : it->second.lease;
  }
  std::string ValueOfKey(const std::string& key) {
    absl::MutexLock lock(&mu_);
    ExpireLocked();
    auto it = keys_.find(key);
    return it == keys_.end() ? "" : it->second.value;
  }
  int KeyCount() {
    absl::MutexLock lock(&mu_);
    ExpireLocked();
    return static_cast<int>(keys_.size());
  }

 private:
  struct Lease {
    absl::Duration ttl;
    absl::Duration expiry;
  };
  struct Entry {
    std::string value;
    int64_t lease;
    int64_t create_revision;
  };

  void ExpireLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    absl::Duration now = clock_.Monotonic();
    std::vector<std::pair<int64_t, absl::Duration>> expired;
    for (const auto& [id, lease] : leases_) {
      if (lease.expiry <= now) expired.emplace_back(id, lease.expiry);
    }
    for (const auto& [id, at] : expired) EndLeaseLocked(id, at);
  }
  void EndLeaseLocked(int64_t id, absl::Duration at) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    leases_.erase(id);
    ended_[id] = at;
    for (auto it = keys_.begin(); it != keys_.end();) {
      if (it->second.lease == id) {
        it = keys_.erase(it);
        ++revision_;
      } else {
        ++it;
      }
    }
  }

  const Clock& clock_;
  absl::Mutex mu_;
  // Large ids, like etcd's, so the key's hex formatting is exercised.
  int64_t next_lease_ ABSL_GUARDED_BY(mu_) = 0x694d7a1b2c3d0001;
  int64_t revision_ ABSL_GUARDED_BY(mu_) = 100;
  std::map<int64_t, Lease> leases_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, Entry> keys_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, absl::Duration> ended_ ABSL_GUARDED_BY(mu_);
};

// One replica's connection to the FakeStore, with its own failures, so one
// replica can be partitioned while another still reaches the store.
class FakeElectionBackend : public ElectionBackend {
 public:
  // `sim` may be null (real clock); hangs need it.
  FakeElectionBackend(FakeStore* store, SimulatedClock* sim) : store_(store), sim_(sim) {}

  // Every call fails with Unavailable until cleared, without reaching the store.
  void SetUnreachable(bool unreachable) {
    absl::MutexLock lock(&mu_);
    unreachable_ = unreachable;
  }
  // The next call hangs for `d` before reaching the store (the clock advances
  // inside the call), then completes normally.
  void HangNextCall(absl::Duration d) {
    absl::MutexLock lock(&mu_);
    hang_ = d;
  }
  // Runs `hook` inside the next call, before it reaches the store.
  void OnNextCall(std::function<void()> hook) {
    absl::MutexLock lock(&mu_);
    hook_ = std::move(hook);
  }
  // Every call takes `d` (the clock advances inside it) before reaching the
  // store.
  void SetLatency(absl::Duration d) {
    absl::MutexLock lock(&mu_);
    latency_ = d;
  }

  absl::StatusOr<int64_t> GrantLease(absl::Duration ttl) override {
    if (absl::Status s = Enter(); !s.ok()) return s;
    return store_->Grant(ttl);
  }
  absl::Status RenewLease(int64_t lease_id) override {
    if (absl::Status s = Enter(); !s.ok()) return s;
    return store_->Renew(lease_id);
  }
  absl::Status RevokeLease(int64_t lease_id) override {
    if (absl::Status s = Enter(); !s.ok()) return s;
    return store_->Revoke(lease_id);
  }
  absl::StatusOr<int64_t> CreateCandidate(const std::string& key, const std::string& replica_id,
                                          int64_t lease_id) override {
    if (absl::Status s = Enter(); !s.ok()) return s;
    return store_->Create(key, replica_id, lease_id);
  }
  absl::StatusOr<std::optional<Candidate>> FirstCandidate(const std::string& prefix) override {
    if (absl::Status s = Enter(); !s.ok()) return s;
    return store_->First(prefix);
  }

 private:
  absl::Status Enter() {
    absl::Duration hang;
    std::function<void()> hook;
    {
      absl::MutexLock lock(&mu_);
      if (unreachable_) return absl::UnavailableError("connection refused");
      hang = hang_ + latency_;
      hang_ = absl::ZeroDuration();
      hook.swap(hook_);
    }
    if (hang > absl::ZeroDuration()) sim_->Advance(hang);
    if (hook) hook();
    return absl::OkStatus();
  }

  FakeStore* const store_;
  SimulatedClock* const sim_;
  absl::Mutex mu_;
  bool unreachable_ ABSL_GUARDED_BY(mu_) = false;
  absl::Duration hang_ ABSL_GUARDED_BY(mu_);
  absl::Duration latency_ ABSL_GUARDED_BY(mu_);
  std::function<void()> hook_ ABSL_GUARDED_BY(mu_);
};

LeaseElector::Options MakeOptions(const std::string& replica_id) {
  LeaseElector::Options options;
  options.prefix = kPrefix;
  options.replica_id = replica_id;
  options.lease_duration = absl::Seconds(15);
  options.renew_deadline = absl::Seconds(10);
  options.retry_period = absl::Seconds(2);
  return options;
}

// One replica under test: its connection, metrics, source of jitter,
// elector, and every value its listener received.
struct Replica {
  Replica(const std::string& id, FakeStore* store, SimulatedClock* clock, uint32_t seed = 1)
      : Replica(MakeOptions(id), store, clock, std::make_unique<SeededRandom>(seed)) {}
  Replica(LeaseElector::Options options, FakeStore* store, SimulatedClock* clock,
          std::unique_ptr<Random> jitter)
      : random(std::move(jitter)),
        backend(store, clock),
        elector(std::move(options), &backend, *clock, *random, &metrics) {
    elector.OnChange([this](const Leadership& l) {
      absl::MutexLock lock(&mu);
      events.push_back(l);
    });
  }
  std::vector<Leadership> Events() {
    absl::MutexLock lock(&mu);
    return events;
  }
  uint64_t TransitionsMetric() {
    return metrics.GetCounter("holdfast_leader_transitions_total", "")->value();
  }

  absl::Mutex mu;
  std::vector<Leadership> events ABSL_GUARDED_BY(mu);
  std::unique_ptr<Random> random;
  FakeElectionBackend backend;
  MetricsRegistry metrics;
  LeaseElector elector;
};

int64_t LeaseOf(FakeStore& store, const Leadership& l) { return store.LeaseOfKey(l.leader_key); }

class LeaseElectorTest : public ::testing::Test {
 protected:
  // Advances in retry-period steps, ticking the given replicas after each.
  void TickRounds(int rounds, std::vector<Replica*> replicas) {
    for (int i = 0; i < rounds; ++i) {
      clock_.Advance(absl::Seconds(2));
      for (Replica* r : replicas) r->elector.Tick();
    }
  }

  SimulatedClock clock_;
  FakeStore store_{clock_};
};

TEST_F(LeaseElectorTest, SingleReplicaLeadsAfterFirstTick) {
  Replica a("a", &store_, &clock_);
  EXPECT_FALSE(a.elector.Current().is_leader);
  a.elector.Tick();

  Leadership l = a.elector.Current();
  EXPECT_TRUE(l.is_leader);
  EXPECT_EQ(l.replica_id, "a");
  EXPECT_EQ(l.leader_id, "a");
  EXPECT_EQ(l.transitions, 1u);
  int64_t lease = LeaseOf(store_, l);
  ASSERT_NE(lease, 0);
  EXPECT_EQ(l.leader_key, absl::StrCat(kPrefix, absl::Hex(lease)));
  EXPECT_EQ(store_.ValueOfKey(l.leader_key), "a");
  ASSERT_TRUE(store_.First(kPrefix).has_value());
  EXPECT_EQ(l.term, store_.First(kPrefix)->create_revision);

  // Renewals keep the same lease and term, far past the lease duration.
  TickRounds(20, {&a});
  Leadership later = a.elector.Current();
  EXPECT_TRUE(later.is_leader);
  EXPECT_EQ(later.term, l.term);
  EXPECT_EQ(LeaseOf(store_, later), lease);
  EXPECT_EQ(later.transitions, 1u);
  ASSERT_EQ(a.Events().size(), 1u);
  EXPECT_TRUE(a.Events()[0].is_leader);
  EXPECT_EQ(a.Events()[0].term, l.term);
}

TEST_F(LeaseElectorTest, MetricsFollowLeadership) {
  Replica a("a", &store_, &clock_);
  a.elector.Tick();
  int64_t term = a.elector.Current().term;
  std::string text = a.metrics.RenderPrometheus();
  EXPECT_TRUE(absl::StrContains(text, "\nholdfast_is_leader 1\n")) << text;
  EXPECT_TRUE(absl::StrContains(text, absl::StrCat("\nholdfast_leader_term ", term, "\n"))) << text;
  EXPECT_TRUE(absl::StrContains(text, "\nholdfast_leader_transitions_total 1\n")) << text;

  // No tick: the gauge follows the deadline at scrape time.
  clock_.Advance(absl::Seconds(10));
  text = a.metrics.RenderPrometheus();
  EXPECT_TRUE(absl::StrContains(text, "\nholdfast_is_leader 0\n")) << text;
}

struct TwoReplicaCase {
  const char* name;
  bool b_first;
};

class TwoReplicasTest : public LeaseElectorTest,
                        public ::testing::WithParamInterface<TwoReplicaCase> {};

TEST_P(TwoReplicasTest, ExactlyOneLeaderAndFollowerKnowsIt) {
  Replica a("a", &store_, &clock_);
  Replica b("b", &store_, &clock_);
  Replica* first = GetParam().b_first ? &b : &a;
  Replica* second = GetParam().b_first ? &a : &b;
  std::string first_id = GetParam().b_first ? "b" : "a";

  first->elector.Tick();
  second->elector.Tick();
  for (int round = 0; round < 12; ++round) {
    Leadership lf = first->elector.Current();
    Leadership ls = second->elector.Current();
    EXPECT_TRUE(lf.is_leader) << "round " << round;
    EXPECT_FALSE(ls.is_leader) << "round " << round;
    EXPECT_EQ(ls.leader_id, first_id);
    EXPECT_EQ(ls.leader_key, lf.leader_key);
    EXPECT_EQ(ls.term, lf.term);
    EXPECT_NE(ls.replica_id, ls.leader_id);
    TickRounds(1, {&a, &b});
  }
  EXPECT_EQ(first->elector.Current().transitions, 1u);
  EXPECT_EQ(second->elector.Current().transitions, 0u);
  EXPECT_EQ(store_.KeyCount(), 2);
}

INSTANTIATE_TEST_SUITE_P(TickOrder, TwoReplicasTest,
                         ::testing::Values(TwoReplicaCase{"AFirst", false},
                                           TwoReplicaCase{"BFirst", true}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST_F(LeaseElectorTest, PartitionedLeaderStepsDownBeforeItsLeaseExpires) {
  Replica a("a", &store_, &clock_);
  Replica b("b", &store_, &clock_);
  a.elector.Tick();
  b.elector.Tick();
  TickRounds(2, {&a, &b});  // t=4s: a renewed at 4s, its lease now ends at 19s.
  int64_t a_lease = LeaseOf(store_, a.elector.Current());
  ASSERT_NE(a_lease, 0);
  absl::Duration partitioned_at = clock_.Monotonic();
  a.backend.SetUnreachable(true);

  // Step 100ms at a time, checking before ticking so a tick cannot hide what
  // Current() says; tick both on every retry period.
  std::optional<absl::Duration> a_stopped, b_started;
  for (int step = 1; step <= 300; ++step) {
    clock_.Advance(absl::Milliseconds(100));
    absl::Duration now = clock_.Monotonic();
    bool a_leads = a.elector.Current().is_leader;
    bool b_leads = b.elector.Current().is_leader;
    ASSERT_FALSE(a_leads && b_leads) << "two leaders at " << now;
    if (!a_leads && !a_stopped) a_stopped = now;
    if (b_leads && !b_started) b_started = now;
    if (step % 20 == 0) {
      a.elector.Tick();
      b.elector.Tick();
    }
  }
  std::optional<absl::Duration> a_expired = store_.EndedAt(a_lease);
  ASSERT_TRUE(a_stopped && b_started && a_expired);
  // a stops exactly at its renew deadline, without a tick, before the store
  // could free its key; b takes over only once the store has.
  EXPECT_EQ(*a_stopped, partitioned_at + absl::Seconds(10));
  EXPECT_EQ(*a_expired, partitioned_at + absl::Seconds(15));
  EXPECT_LT(*a_stopped, *a_expired);
  EXPECT_GE(*b_started, *a_expired);
  EXPECT_EQ(b.elector.Current().leader_id, "b");
  EXPECT_GT(b.elector.Current().term, 0);

  // Healed: a campaigns again with a new lease and follows b.
  a.backend.SetUnreachable(false);
  a.elector.Tick();
  Leadership la = a.elector.Current();
  EXPECT_FALSE(la.is_leader);
  EXPECT_EQ(la.leader_id, "b");
  EXPECT_EQ(la.term, b.elector.Current().term);
  EXPECT_EQ(la.transitions, 2u);
  EXPECT_EQ(a.TransitionsMetric(), 2u);
  EXPECT_EQ(store_.KeyCount(), 2);
  ASSERT_EQ(a.Events().size(), 2u);
  EXPECT_TRUE(a.Events()[0].is_leader);
  EXPECT_FALSE(a.Events()[1].is_leader);
}

TEST_F(LeaseElectorTest, PausedLeaderIsNotLeaderBeforeAnyTickThenFollows) {
  Replica a("a", &store_, &clock_);
  Replica b("b", &store_, &clock_);
  a.elector.Tick();
  b.elector.Tick();
  Leadership before = a.elector.Current();
  ASSERT_TRUE(before.is_leader);
  int64_t old_lease = LeaseOf(store_, before);

  // a's process is paused (no ticks) while b goes on.
  TickRounds(4, {&b});  // t=8s
  EXPECT_TRUE(a.elector.Current().is_leader);
  TickRounds(1, {&b});  // t=10s: a's renew deadline
  Leadership paused = a.elector.Current();
  EXPECT_FALSE(paused.is_leader);
  EXPECT_EQ(paused.term, 0);
  EXPECT_EQ(paused.leader_id, "");
  EXPECT_TRUE(store_.LeaseAlive(old_lease));  // stopped before etcd could notice
  EXPECT_FALSE(b.elector.Current().is_leader);
  TickRounds(3, {&b});  // t=16s: a's lease expired at 15s
  EXPECT_FALSE(store_.LeaseAlive(old_lease));
  EXPECT_TRUE(b.elector.Current().is_leader);

  // Resumed: one tick campaigns with a new lease and follows b.
  a.elector.Tick();
  Leadership after = a.elector.Current();
  EXPECT_FALSE(after.is_leader);
  EXPECT_EQ(after.leader_id, "b");
  EXPECT_EQ(after.term, b.elector.Current().term);
  EXPECT_EQ(store_.KeyCount(), 2);
  EXPECT_EQ(after.transitions, 2u);
  ASSERT_EQ(a.Events().size(), 2u);
  EXPECT_FALSE(a.Events()[1].is_leader);
  TickRounds(10, {&a, &b});
  EXPECT_FALSE(a.elector.Current().is_leader);
  EXPECT_TRUE(b.elector.Current().is_leader);
}

TEST_F(LeaseElectorTest, WholeSystemPausedPastTheLease) {
  Replica a("a", &store_, &clock_);
  Replica b("b", &store_, &clock_);
  a.elector.Tick();
  b.elector.Tick();
  int64_t term = a.elector.Current().term;
  clock_.Advance(absl::Seconds(20));  // no ticks at all, both leases expire
  EXPECT_FALSE(a.elector.Current().is_leader);

  // Whoever ticks first campaigns first and leads with a later term.
  b.elector.Tick();
  a.elector.Tick();
  EXPECT_TRUE(b.elector.Current().is_leader);
  EXPECT_GT(b.elector.Current().term, term);
  EXPECT_FALSE(a.elector.Current().is_leader);
  EXPECT_EQ(a.elector.Current().leader_id, "b");
}

TEST_F(LeaseElectorTest, ShortOutageKeepsLeadershipAndLogsOnce) {
  Replica a("a", &store_, &clock_);
  a.elector.Tick();
  int64_t term = a.elector.Current().term;
  a.backend.SetUnreachable(true);
  ::testing::internal::CaptureStderr();
  TickRounds(3, {&a});  // t=6s: three failed renewals, deadline (10s) not reached
  EXPECT_TRUE(a.elector.Current().is_leader);
  a.backend.SetUnreachable(false);
  TickRounds(1, {&a});  // t=8s: renewed
  std::string log = ::testing::internal::GetCapturedStderr();

  EXPECT_TRUE(a.elector.Current().is_leader);
  TickRounds(4, {&a});  // t=16s, past the old deadline: the renewal at 8s counted
  Leadership l = a.elector.Current();
  EXPECT_TRUE(l.is_leader);
  EXPECT_EQ(l.term, term);
  EXPECT_EQ(l.transitions, 1u);
  int warnings = 0;
  for (size_t pos = 0; (pos = log.find("could not renew lease", pos)) != std::string::npos; ++pos) {
    ++warnings;
  }
  EXPECT_EQ(warnings, 1) << log;
  EXPECT_TRUE(absl::StrContains(log, "reaches the store again")) << log;
}

TEST_F(LeaseElectorTest, LeaderBackAfterItsDeadlineEndsItsTermAndRevokes) {
  Replica a("a", &store_, &clock_);
  Replica b("b", &store_, &clock_);
  a.elector.Tick();
  b.elector.Tick();
  Leadership first = a.elector.Current();
  int64_t old_lease = LeaseOf(store_, first);
  a.backend.SetUnreachable(true);
  TickRounds(4, {&a, &b});  // t=8s: a's renewals fail
  a.backend.SetUnreachable(false);
  clock_.Advance(absl::Seconds(3));  // t=11s: past a's deadline, its lease lives until 15s
  ASSERT_TRUE(store_.LeaseAlive(old_lease));

  // Reachable again, but the term is over: a must not resume it with a
  // renewal; it revokes the old lease (freeing b now, not at 15s) and follows.
  a.elector.Tick();
  EXPECT_FALSE(a.elector.Current().is_leader);
  EXPECT_EQ(store_.EndedAt(old_lease), clock_.Monotonic());
  EXPECT_EQ(a.elector.Current().transitions, 2u);
  b.elector.Tick();
  EXPECT_TRUE(b.elector.Current().is_leader);
  a.elector.Tick();
  EXPECT_EQ(a.elector.Current().leader_id, "b");
  EXPECT_FALSE(a.elector.Current().is_leader);
}

// The chaos suite found this: a leader steps down while the store is
// unreachable, so revoking its lease fails; the store comes back before that
// lease expires (etcd even extends leases when it elects a raft leader), and
// the old key, first in line, would leave nobody leading until it expired.
TEST_F(LeaseElectorTest, LeaseDroppedDuringAnOutageIsRevokedOnceTheStoreAnswers) {
  Replica a("a", &store_, &clock_);
  a.elector.Tick();
  int64_t old_lease = LeaseOf(store_, a.elector.Current());
  a.backend.SetUnreachable(true);
  TickRounds(6, {&a});  // t=12s: stepped down at 10s, its revoke failed
  EXPECT_FALSE(a.elector.Current().is_leader);
  a.backend.SetUnreachable(false);
  ASSERT_TRUE(store_.LeaseAlive(old_lease));  // alive until 15s

  TickRounds(1, {&a});  // t=14s: the revoke is retried, then a new candidacy leads
  EXPECT_FALSE(store_.LeaseAlive(old_lease));
  EXPECT_TRUE(a.elector.Current().is_leader);
  EXPECT_NE(LeaseOf(store_, a.elector.Current()), old_lease);
}

// The chaos suite found this too: a replica killed (no chance to resign)
// leaves its election key first in line; etcd restarts the lease's TTL when it
// elects a raft leader, so after a quorum loss nobody led for a whole lease.
// The restarted process of that replica recognises the key as its own
// leftover and revokes it.
TEST_F(LeaseElectorTest, RestartedReplicaRevokesTheKeyItsKilledProcessLeft) {
  int64_t leftover_lease;
  {
    Replica killed("a", &store_, &clock_);
    killed.elector.Tick();
    ASSERT_TRUE(killed.elector.Current().is_leader);
    leftover_lease = LeaseOf(store_, killed.elector.Current());
  }  // destroyed without Resign(), as SIGKILL would
  Replica b("b", &store_, &clock_);
  b.elector.Tick();
  EXPECT_FALSE(b.elector.Current().is_leader);
  EXPECT_EQ(b.elector.Current().leader_id, "a");

  Replica restarted("a", &store_, &clock_);
  clock_.Advance(absl::Seconds(1));
  restarted.elector.Tick();
  EXPECT_EQ(store_.EndedAt(leftover_lease), clock_.Monotonic());  // revoked, not expired
  // b campaigned before the restarted process did, so b is next in line.
  EXPECT_FALSE(restarted.elector.Current().is_leader);
  EXPECT_EQ(restarted.elector.Current().leader_id, "b");
  b.elector.Tick();
  EXPECT_TRUE(b.elector.Current().is_leader);
}

TEST_F(LeaseElectorTest, AloneTheRestartedReplicaLeadsAtOnce) {
  {
    Replica killed("a", &store_, &clock_);
    killed.elector.Tick();
    ASSERT_TRUE(killed.elector.Current().is_leader);
  }
  Replica restarted("a", &store_, &clock_);
  clock_.Advance(absl::Seconds(1));
  restarted.elector.Tick();
  EXPECT_TRUE(restarted.elector.Current().is_leader);
  EXPECT_EQ(store_.KeyCount(), 1);
}

// Two live processes under one replica id (a misconfiguration) must not
// revoke each other forever: only keys older than a process's first
// candidacy count as leftovers, so the older process loses one candidacy
// and then both settle.
TEST_F(LeaseElectorTest, DuplicateReplicaIdsSettleAfterOneRevocation) {
  Replica first("a", &store_, &clock_, /*seed=*/1);
  first.elector.Tick();
  ASSERT_TRUE(first.elector.Current().is_leader);
  Replica second("a", &store_, &clock_, /*seed=*/2);
  clock_.Advance(absl::Seconds(1));
  second.elector.Tick();  // revokes first's key: it looks like a leftover
  EXPECT_TRUE(second.elector.Current().is_leader);
  TickRounds(5, {&first, &second});
  EXPECT_TRUE(second.elector.Current().is_leader);
  EXPECT_FALSE(first.elector.Current().is_leader);
  EXPECT_EQ(store_.KeyCount(), 2);  // first campaigns again, and is left alone
  EXPECT_EQ(first.elector.Current().transitions, 2u);
  EXPECT_EQ(second.elector.Current().transitions, 1u);
}

TEST_F(LeaseElectorTest, FencedDuringATickDiscardsThatTicksResult) {
  Replica a("a", &store_, &clock_);
  a.elector.Tick();
  Leadership first = a.elector.Current();
  int64_t old_lease = LeaseOf(store_, first);
  // The status writer reports a fenced write while the tick is inside its
  // renewal call.
  a.backend.OnNextCall([&] { a.elector.ReportFenced(first.term); });
  TickRounds(1, {&a});
  Leadership fenced = a.elector.Current();
  EXPECT_FALSE(fenced.is_leader);
  EXPECT_EQ(fenced.transitions, 2u);

  TickRounds(1, {&a});
  Leadership second = a.elector.Current();
  EXPECT_FALSE(store_.LeaseAlive(old_lease));
  EXPECT_TRUE(second.is_leader);
  EXPECT_GT(second.term, first.term);
  EXPECT_EQ(second.transitions, 3u);
}

TEST_F(LeaseElectorTest, RenewalTimeIsTakenBeforeTheCallIsSent) {
  Replica a("a", &store_, &clock_);
  a.elector.Tick();
  int64_t old_lease = LeaseOf(store_, a.elector.Current());
  clock_.Advance(absl::Seconds(2));
  // The renewal reaches the store 11s after it was sent and succeeds there,
  // but a cannot know how late it arrived: its term is over.
  a.backend.HangNextCall(absl::Seconds(11));
  a.elector.Tick();
  Leadership l = a.elector.Current();
  EXPECT_FALSE(l.is_leader);
  EXPECT_EQ(l.transitions, 2u);
  EXPECT_TRUE(store_.LeaseAlive(old_lease));

  // Next tick revokes the old lease and campaigns again.
  clock_.Advance(absl::Seconds(2));
  a.elector.Tick();
  EXPECT_FALSE(store_.LeaseAlive(old_lease));
  EXPECT_TRUE(a.elector.Current().is_leader);
  EXPECT_NE(LeaseOf(store_, a.elector.Current()), old_lease);
  EXPECT_EQ(a.elector.Current().transitions, 3u);
}

TEST_F(LeaseElectorTest, LeaseExpiredInStoreCampaignsAgain) {
  Replica a("a", &store_, &clock_);
  a.elector.Tick();
  Leadership first = a.elector.Current();
  int64_t old_lease = LeaseOf(store_, first);
  store_.ExpireLease(old_lease);

  TickRounds(1, {&a});  // renewal finds NotFound; same tick campaigns again
  Leadership second = a.elector.Current();
  EXPECT_TRUE(second.is_leader);
  EXPECT_GT(second.term, first.term);
  EXPECT_NE(second.leader_key, first.leader_key);
  EXPECT_EQ(second.transitions, 3u);
  EXPECT_EQ(a.TransitionsMetric(), 3u);
  std::vector<Leadership> events = a.Events();
  ASSERT_EQ(events.size(), 3u);
  EXPECT_TRUE(events[0].is_leader);
  EXPECT_FALSE(events[1].is_leader);
  EXPECT_TRUE(events[2].is_leader);
  EXPECT_EQ(events[2].term, second.term);
}

TEST_F(LeaseElectorTest, ReportFencedStepsDownAtOnceForTheCurrentTermOnly) {
  Replica a("a", &store_, &clock_);
  a.elector.Tick();
  Leadership first = a.elector.Current();
  int64_t old_lease = LeaseOf(store_, first);

  a.elector.ReportFenced(first.term - 1);  // an older term: nothing to do
  EXPECT_TRUE(a.elector.Current().is_leader);
  EXPECT_EQ(a.Events().size(), 1u);

  a.elector.ReportFenced(first.term);
  Leadership fenced = a.elector.Current();
  EXPECT_FALSE(fenced.is_leader);
  EXPECT_EQ(fenced.transitions, 2u);
  ASSERT_EQ(a.Events().size(), 2u);  // told before ReportFenced returned
  EXPECT_FALSE(a.Events()[1].is_leader);

  a.elector.ReportFenced(first.term);  // repeated report: already handled
  EXPECT_EQ(a.elector.Current().transitions, 2u);

  TickRounds(1, {&a});
  Leadership second = a.elector.Current();
  EXPECT_FALSE(store_.LeaseAlive(old_lease));
  EXPECT_TRUE(second.is_leader);
  EXPECT_GT(second.term, first.term);
  EXPECT_EQ(second.transitions, 3u);
  EXPECT_EQ(a.TransitionsMetric(), 3u);
}

TEST_F(LeaseElectorTest, ListenerMayCallBackIntoTheElector) {
  Replica a("a", &store_, &clock_);
  std::vector<std::pair<bool, bool>> seen;  // (event, Current()) per call
  int depth = 0, max_depth = 0;
  a.elector.OnChange([&](const Leadership& l) {
    max_depth = std::max(max_depth, ++depth);
    seen.emplace_back(l.is_leader, a.elector.Current().is_leader);
    // Fences the first term from inside the listener: must neither deadlock
    // nor deliver the loss before this call returns.
    if (l.is_leader && seen.size() == 1) a.elector.ReportFenced(l.term);
    --depth;
  });
  a.elector.Tick();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], std::make_pair(true, true));
  EXPECT_EQ(seen[1], std::make_pair(false, false));
  EXPECT_EQ(max_depth, 1);
  EXPECT_EQ(a.Events().size(), 2u);
}

TEST_F(LeaseElectorTest, ResignRevokesTheLease) {
  Replica a("a", &store_, &clock_);
  Replica b("b", &store_, &clock_);
  a.elector.Tick();
  b.elector.Tick();
  int64_t lease = LeaseOf(store_, a.elector.Current());
  a.elector.Resign();
  EXPECT_FALSE(a.elector.Current().is_leader);
  EXPECT_FALSE(store_.LeaseAlive(lease));
  TickRounds(1, {&b});  // no need to wait for the lease to expire
  EXPECT_TRUE(b.elector.Current().is_leader);
}

// Found by the Kubernetes chaos run: a status write checked against the
// term was still in flight when the stepping-down leader released its
// lease, and landed after the release. The release now waits for it.
TEST_F(LeaseElectorTest, ReleaseWaitsForWritesOfTheEndingTerm) {
  Replica a("a", &store_, &clock_);
  a.elector.Tick();
  const Leadership leading = a.elector.Current();
  ASSERT_TRUE(leading.is_leader);
  EXPECT_FALSE(a.elector.HoldTerm(leading.term + 1).has_value()) << "not our term";
  const int64_t lease = LeaseOf(store_, leading);
  // One guard per thread at a time: a thread holding one must not take
  // another (a waiting release would deadlock them).
  std::optional<LeaseElector::TermGuard> guard = a.elector.HoldTerm(leading.term);
  ASSERT_TRUE(guard.has_value());

  clock_.Advance(absl::Seconds(11));  // past the renew deadline, before the lease's end
  EXPECT_FALSE(a.elector.Current().is_leader) << "the term ends locally at once";
  absl::Notification ticked;
  std::thread tick([&] {
    a.elector.Tick();  // drops and releases the lease: waits for the guard
    ticked.Notify();
  });
  // The tick cannot finish while the write is in flight; 100 ms of real
  // time is only how long this checks that it does not.
  EXPECT_FALSE(ticked.WaitForNotificationWithTimeout(absl::Milliseconds(100)));
  EXPECT_TRUE(store_.LeaseAlive(lease)) << "released while a write of its term was in flight";
  guard.reset();  // the write returned
  ticked.WaitForNotification();
  tick.join();
  EXPECT_FALSE(store_.LeaseAlive(lease)) << "released once the write returned";
  EXPECT_FALSE(a.elector.HoldTerm(leading.term).has_value()) << "no write of it starts again";
}

TEST_F(LeaseElectorTest, ATermGuardTellsTheTimeLeftBeforeTheRenewDeadline) {
  Replica a("a", &store_, &clock_);
  a.elector.Tick();
  const Leadership leading = a.elector.Current();
  ASSERT_TRUE(leading.is_leader);
  clock_.Advance(absl::Seconds(4));
  std::optional<LeaseElector::TermGuard> guard = a.elector.HoldTerm(leading.term);
  ASSERT_TRUE(guard.has_value());
  EXPECT_EQ(guard->TimeLeft(), absl::Seconds(6));  // renew deadline 10 s
  clock_.Advance(absl::Seconds(7));
  EXPECT_EQ(guard->TimeLeft(), absl::Seconds(-1)) << "counts on past the deadline";
  guard.reset();
  EXPECT_FALSE(a.elector.HoldTerm(leading.term).has_value());
}

TEST_F(LeaseElectorTest, ReadersAndFencingRaceWithTicks) {
  Replica a("a", &store_, &clock_);
  Replica b("b", &store_, &clock_);
  std::atomic<bool> done{false};
  std::atomic<int> inconsistent{0};
  std::thread reader([&] {
    while (!done) {
      // Each view is taken whole, under the elector's lock.
      for (Replica* r : {&a, &b}) {
        Leadership l = r->elector.Current();
        if (l.is_leader && (l.leader_id != l.replica_id || l.term == 0)) ++inconsistent;
      }
      a.metrics.RenderPrometheus();
    }
  });
  std::thread fencer([&] {
    while (!done) a.elector.ReportFenced(a.elector.Current().term);
  });
  for (int i = 0; i < 300; ++i) TickRounds(1, {&a, &b});
  done = true;
  reader.join();
  fencer.join();
  EXPECT_EQ(inconsistent, 0);
  // a keeps being fenced, so b ends up leading; a never leads against it.
  TickRounds(2, {&a, &b});
  EXPECT_NE(a.elector.Current().is_leader, b.elector.Current().is_leader);
}

// Runs replicas as their Start() threads do, on simulated time: each ticks,
// then waits what its Tick() returned before ticking again. All tick at once
// when the schedule is made, as replicas started (or freed of an outage) at
// the same moment would without jitter. Replicas due at the same instant tick
// in the order given, at that instant.
class Schedule {
 public:
  Schedule(SimulatedClock* clock, std::vector<Replica*> replicas) : clock_(clock) {
    for (Replica* r : replicas) slots_.push_back(Slot{r, clock->Monotonic()});
    next_sample_ = clock->Monotonic();
  }

  // Runs until monotonic time `end`, calling `observe` every 100ms and at
  // every tick instant, before the ticks of that instant.
  void RunUntil(absl::Duration end, const std::function<void()>& observe) {
    while (true) {
      absl::Duration at = next_sample_;
      for (const Slot& slot : slots_) at = std::min(at, slot.next);
      if (at > end) break;
      if (at > clock_->Monotonic()) clock_->Advance(at - clock_->Monotonic());
      observe();
      if (at == next_sample_) next_sample_ += absl::Milliseconds(100);
      for (Slot& slot : slots_) {
        if (slot.next > at) continue;
        slot.ticks.push_back(clock_->Monotonic());
        absl::Duration wait = slot.replica->elector.Tick();
        slot.waits.push_back(wait);
        slot.next = clock_->Monotonic() + wait;
      }
    }
    if (end > clock_->Monotonic()) clock_->Advance(end - clock_->Monotonic());
  }

  // When replica `i` (in the order given) started each tick, and what each
  // tick returned.
  const std::vector<absl::Duration>& Ticks(size_t i) const { return slots_[i].ticks; }
  const std::vector<absl::Duration>& Waits(size_t i) const { return slots_[i].waits; }

 private:
  struct Slot {
    Replica* replica;
    absl::Duration next;
    std::vector<absl::Duration> ticks;
    std::vector<absl::Duration> waits;
  };
  SimulatedClock* const clock_;
  std::vector<Slot> slots_;
  absl::Duration next_sample_;
};

// What SharedOutage() saw.
struct OutageRun {
  // Tick instants of a and b from the moment the store came back.
  std::vector<absl::Duration> a_after, b_after;
  // Every wait either returned.
  std::vector<absl::Duration> waits;
};

// a and b start together on one store, lead and follow for 20s, lose the
// store together for 40s (long enough for both leases to expire), and get
// it back for 30s. Checks safety all along: never two leaders, and the
// leader stops leading within the renew deadline of its last tick before the
// outage (its last successful renewal), whatever its waits.
OutageRun SharedOutage(SimulatedClock& clock, FakeStore& store, Replica& a, Replica& b) {
  const absl::Duration start = clock.Monotonic();
  Schedule schedule(&clock, {&a, &b});
  auto no_two_leaders = [&] {
    ASSERT_FALSE(a.elector.Current().is_leader && b.elector.Current().is_leader)
        << "two leaders at " << clock.Monotonic() - start;
  };
  schedule.RunUntil(start + absl::Seconds(20), no_two_leaders);
  EXPECT_TRUE(a.elector.Current().is_leader);
  EXPECT_EQ(b.elector.Current().leader_id, "a");
  const absl::Duration last_renewal = schedule.Ticks(0).back();

  a.backend.SetUnreachable(true);
  b.backend.SetUnreachable(true);
  schedule.RunUntil(start + absl::Seconds(60), [&] {
    no_two_leaders();
    if (clock.Monotonic() >= last_renewal + absl::Seconds(10)) {
      ASSERT_FALSE(a.elector.Current().is_leader)
          << "still leading " << clock.Monotonic() - last_renewal << " after its last renewal";
    }
  });
  EXPECT_EQ(store.KeyCount(), 0);  // both leases expired in the store

  a.backend.SetUnreachable(false);
  b.backend.SetUnreachable(false);
  const size_t a_from = schedule.Ticks(0).size(), b_from = schedule.Ticks(1).size();
  schedule.RunUntil(start + absl::Seconds(90), no_two_leaders);
  EXPECT_NE(a.elector.Current().is_leader, b.elector.Current().is_leader);

  OutageRun run;
  run.a_after.assign(schedule.Ticks(0).begin() + a_from, schedule.Ticks(0).end());
  run.b_after.assign(schedule.Ticks(1).begin() + b_from, schedule.Ticks(1).end());
  for (size_t i : {0, 1}) {
    run.waits.insert(run.waits.end(), schedule.Waits(i).begin(), schedule.Waits(i).end());
  }
  return run;
}

// Shortest time between a tick of one list and a tick of the other.
absl::Duration ClosestTicks(const std::vector<absl::Duration>& x,
                            const std::vector<absl::Duration>& y) {
  absl::Duration closest = absl::InfiniteDuration();
  for (absl::Duration tx : x) {
    for (absl::Duration ty : y) closest = std::min(closest, absl::AbsDuration(tx - ty));
  }
  return closest;
}

TEST_F(LeaseElectorTest, JitterKeepsReplicasFromRetryingTogetherAfterASharedOutage) {
  Replica a("a", &store_, &clock_, /*seed=*/1);
  Replica b("b", &store_, &clock_, /*seed=*/2);
  OutageRun run = SharedOutage(clock_, store_, a, b);

  // Once the store is back, no attempt of a falls at the instant of one of
  // b's: not the first after the outage, nor any since.
  ASSERT_GE(run.a_after.size(), 10u);
  ASSERT_GE(run.b_after.size(), 10u);
  EXPECT_GT(ClosestTicks(run.a_after, run.b_after), absl::ZeroDuration());
  EXPECT_NE(run.a_after.front(), run.b_after.front());

  // Every wait (leading, following, failing, campaigning) within the jitter
  // range, and spread over it.
  absl::Duration shortest = absl::InfiniteDuration(), longest = absl::ZeroDuration();
  for (absl::Duration wait : run.waits) {
    EXPECT_GE(wait, absl::Milliseconds(1600));
    EXPECT_LE(wait, absl::Milliseconds(2400));
    shortest = std::min(shortest, wait);
    longest = std::max(longest, wait);
  }
  EXPECT_LT(shortest, absl::Milliseconds(1800));
  EXPECT_GT(longest, absl::Milliseconds(2200));
}

// The control for the test above: the same run with the same draws for both
// replicas (as without jitter) has them retry at the very same instants,
// every time.
TEST_F(LeaseElectorTest, WithTheSameDrawsReplicasRetryTogetherAfterASharedOutage) {
  Replica a("a", &store_, &clock_, /*seed=*/7);
  Replica b("b", &store_, &clock_, /*seed=*/7);
  OutageRun run = SharedOutage(clock_, store_, a, b);
  ASSERT_GE(run.a_after.size(), 10u);
  EXPECT_EQ(run.a_after, run.b_after);
}

// A healthy leader that always draws the longest wait keeps its term: the
// jitter lengthens waits only while the next renewal stays well inside the
// renew deadline.
TEST_F(LeaseElectorTest, JitteredRenewalsKeepAHealthyLeader) {
  struct Case {
    const char* name;
    absl::Duration retry_period;
    // The longest wait the leader may be given.
    absl::Duration longest;
  };
  for (const Case& c : {
           // Defaults: the whole jitter range, up to 1.2 * 2s, far inside 10s.
           Case{"defaults", absl::Seconds(2), absl::Milliseconds(2400)},
           // A retry period close to the deadline: 1.2 * 9s would renew after
           // the 10s deadline; capped at the retry period.
           Case{"tight", absl::Seconds(9), absl::Seconds(9)},
       }) {
    SCOPED_TRACE(c.name);
    SimulatedClock clock;
    FakeStore store(clock);
    LeaseElector::Options options = MakeOptions("a");
    options.retry_period = c.retry_period;
    ASSERT_TRUE(LeaseElector::Validate(options).ok());
    Replica a(options, &store, &clock, std::make_unique<FixedRandom>(0.999999));
    // Per call: a step (grant, create, read; later renew, read) takes 400ms
    // to 600ms.
    a.backend.SetLatency(absl::Milliseconds(200));
    Schedule schedule(&clock, {&a});
    const absl::Duration start = clock.Monotonic();
    schedule.RunUntil(start + absl::Milliseconds(1), [] {});
    Leadership first = a.elector.Current();
    ASSERT_TRUE(first.is_leader);
    int64_t lease = LeaseOf(store, first);

    schedule.RunUntil(start + absl::Minutes(10), [&] {
      ASSERT_TRUE(a.elector.Current().is_leader) << "at " << clock.Monotonic() - start;
    });
    Leadership last = a.elector.Current();
    EXPECT_TRUE(last.is_leader);
    EXPECT_EQ(last.transitions, 1u);
    EXPECT_EQ(last.term, first.term);
    EXPECT_EQ(LeaseOf(store, last), lease);
    ASSERT_GE(schedule.Waits(0).size(), 50u);
    for (absl::Duration wait : schedule.Waits(0)) {
      EXPECT_GT(wait, c.retry_period * 0.8);
      EXPECT_LE(wait, c.longest);
    }
    // Each renewal (sent as its tick starts) comes before the deadline of the
    // one before (or of the grant, sent as the first tick started).
    const std::vector<absl::Duration>& ticks = schedule.Ticks(0);
    for (size_t i = 1; i < ticks.size(); ++i) {
      EXPECT_LE(ticks[i] - ticks[i - 1], c.longest + absl::Milliseconds(600));
      EXPECT_LT(ticks[i] - ticks[i - 1], absl::Seconds(10));
    }
  }
}

// A leader whose renewals fail, always drawing the longest wait: within a
// retry period or two of its deadline its waits are capped at the retry
// period (no later than without jitter), it makes as many attempts before the
// deadline as it would without jitter, and it stops leading exactly at the
// deadline.
TEST_F(LeaseElectorTest, JitteredRetriesOfAFailingLeaderAreCappedNearItsDeadline) {
  Replica a(MakeOptions("a"), &store_, &clock_, std::make_unique<FixedRandom>(0.999999));
  Schedule schedule(&clock_, {&a});
  const absl::Duration start = clock_.Monotonic();
  schedule.RunUntil(start, [] {});
  ASSERT_TRUE(a.elector.Current().is_leader);
  const absl::Duration renewed = schedule.Ticks(0).back();
  a.backend.SetUnreachable(true);
  std::optional<absl::Duration> stopped;
  schedule.RunUntil(start + absl::Seconds(12), [&] {
    if (!stopped && !a.elector.Current().is_leader) stopped = clock_.Monotonic();
  });
  ASSERT_TRUE(stopped.has_value());
  EXPECT_EQ(*stopped, renewed + absl::Seconds(10));

  // Attempts before the deadline: without jitter at 2, 4, 6 and 8s.
  std::vector<absl::Duration> attempts;
  for (absl::Duration tick : schedule.Ticks(0)) {
    if (tick > renewed && tick < renewed + absl::Seconds(10)) attempts.push_back(tick - renewed);
  }
  EXPECT_GE(attempts.size(), 4u);
  ASSERT_FALSE(attempts.empty());
  EXPECT_GT(attempts.front(), absl::Milliseconds(2300));  // far from it: jittered up
  // Each wait is at most max(retry period, time left - retry period): longer
  // than the retry period only while a full retry period would remain.
  for (size_t i = 0; i < attempts.size(); ++i) {
    absl::Duration left = absl::Seconds(10) - attempts[i];
    absl::Duration wait = schedule.Waits(0)[i + 1];
    EXPECT_LE(wait, std::max(absl::Seconds(2), left - absl::Seconds(2))) << "attempt " << i;
  }
}

TEST(LeaseElectorThreadTest, StartTicksAndStopIsPrompt) {
  FakeStore store(Clock::Real());
  FakeElectionBackend backend(&store, nullptr);
  MetricsRegistry metrics;
  LeaseElector::Options options = MakeOptions("a");
  options.lease_duration = absl::Seconds(120);
  options.renew_deadline = absl::Seconds(90);
  options.retry_period = absl::Seconds(60);
  LeaseElector elector(options, &backend, Clock::Real(), Random::Real(), &metrics);
  absl::Notification leading;
  elector.OnChange([&](const Leadership& l) {
    if (l.is_leader && !leading.HasBeenNotified()) leading.Notify();
  });
  elector.Start();
  ASSERT_TRUE(leading.WaitForNotificationWithTimeout(absl::Seconds(10)));
  absl::Time stop_began = absl::Now();
  elector.Stop();
  EXPECT_LT(absl::Now() - stop_began, absl::Seconds(5));  // not the 60s retry period
  EXPECT_TRUE(elector.Current().is_leader);
  elector.Resign();
  EXPECT_FALSE(elector.Current().is_leader);
  EXPECT_EQ(store.KeyCount(), 0);
}

struct ValidateCase {
  const char* name;
  void (*mutate)(LeaseElector::Options&);
  bool ok;
};

class ValidateTest : public ::testing::TestWithParam<ValidateCase> {};

TEST_P(ValidateTest, ChecksOptions) {
  LeaseElector::Options options = MakeOptions("a");
  GetParam().mutate(options);
  absl::Status status = LeaseElector::Validate(options);
  EXPECT_EQ(status.ok(), GetParam().ok) << status;
  if (!GetParam().ok) EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ValidateTest,
    ::testing::Values(
        ValidateCase{"Defaults", [](LeaseElector::Options&) {}, true},
        ValidateCase{"Tight",
                     [](LeaseElector::Options& o) {
                       o.lease_duration = absl::Seconds(3);
                       o.renew_deadline = absl::Seconds(2);
                       o.retry_period = absl::Seconds(1);
                     },
                     true},
        ValidateCase{"RenewDeadlineEqualsLease",
                     [](LeaseElector::Options& o) { o.renew_deadline = o.lease_duration; }, false},
        ValidateCase{"RenewDeadlineLongerThanLease",
                     [](LeaseElector::Options& o) { o.renew_deadline = absl::Seconds(20); }, false},
        ValidateCase{"RetryEqualsRenewDeadline",
                     [](LeaseElector::Options& o) { o.retry_period = o.renew_deadline; }, false},
        ValidateCase{"RetryLongerThanRenewDeadline",
                     [](LeaseElector::Options& o) { o.retry_period = absl::Seconds(11); }, false},
        ValidateCase{"ZeroRetry",
                     [](LeaseElector::Options& o) { o.retry_period = absl::ZeroDuration(); },
                     false},
        ValidateCase{"NegativeRetry",
                     [](LeaseElector::Options& o) { o.retry_period = absl::Seconds(-1); }, false},
        ValidateCase{"EmptyReplicaId", [](LeaseElector::Options& o) { o.replica_id.clear(); },
                     false},
        ValidateCase{"EmptyPrefix", [](LeaseElector::Options& o) { o.prefix.clear(); }, false},
        ValidateCase{"PrefixWithoutSlash",
                     [](LeaseElector::Options& o) { o.prefix = "/holdfast/election"; }, false},
        ValidateCase{"NoJitter", [](LeaseElector::Options& o) { o.retry_jitter = 0; }, true},
        ValidateCase{"LargeJitter", [](LeaseElector::Options& o) { o.retry_jitter = 0.9; }, true},
        ValidateCase{"JitterOne", [](LeaseElector::Options& o) { o.retry_jitter = 1; }, false},
        ValidateCase{"NegativeJitter", [](LeaseElector::Options& o) { o.retry_jitter = -0.1; },
                     false},
        ValidateCase{"NanJitter", [](LeaseElector::Options& o) { o.retry_jitter = std::nan(""); },
                     false}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace holdfast
