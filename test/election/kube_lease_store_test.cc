// KubeLeaseStore on the in-memory API server: the Lease JSON client-go
// writes and reads, resourceVersion preconditions, and the LeaseElector
// electing through it.
#include "src/election/kube_lease_store.h"

#include "gtest/gtest.h"
#include "src/common/metrics.h"
#include "src/common/random.h"
#include "src/election/kube_lease_backend.h"
#include "src/election/lease_elector.h"
#include "src/kube/fake_kube_api.h"

namespace holdfast {
namespace {

absl::Time At(const char* rfc3339) {
  absl::Time time;
  std::string error;
  EXPECT_TRUE(absl::ParseTime(absl::RFC3339_full, rfc3339, &time, &error)) << error;
  return time;
}

LeaseRecord Held(const std::string& holder) {
  return LeaseRecord{.holder_identity = holder,
                     .lease_duration_seconds = 15,
                     .acquire_time = At("2026-01-02T03:04:05.123456Z"),
                     .renew_time = At("2026-01-02T03:04:07.000001Z"),
                     .lease_transitions = 2};
}

class KubeLeaseStoreTest : public ::testing::Test {
 protected:
  nlohmann::json Stored() {
    absl::StatusOr<nlohmann::json> lease = api_.Get(kKubeLeases, "hs", "leader");
    EXPECT_TRUE(lease.ok()) << lease.status();
    return lease.ok() ? *lease : nlohmann::json();
  }
  FakeKubeApi api_;
  KubeLeaseStore store_{&api_, "hs", "leader"};
};

TEST_F(KubeLeaseStoreTest, CreatesTheLeaseClientGoWrites) {
  EXPECT_TRUE(absl::IsNotFound(store_.Get().status()));
  absl::StatusOr<std::string> version = store_.Create(Held("a"));
  ASSERT_TRUE(version.ok()) << version.status();
  nlohmann::json lease = Stored();
  EXPECT_EQ(lease["apiVersion"], "coordination.k8s.io/v1");
  EXPECT_EQ(lease["metadata"]["namespace"], "hs");
  EXPECT_EQ(lease["metadata"]["resourceVersion"], *version);
  EXPECT_EQ(lease["spec"], nlohmann::json({{"holderIdentity", "a"},
                                           {"leaseDurationSeconds", 15},
                                           {"acquireTime", "2026-01-02T03:04:05.123456Z"},
                                           {"renewTime", "2026-01-02T03:04:07.000001Z"},
                                           {"leaseTransitions", 2}}));
  absl::StatusOr<LeaseStore::Versioned> read = store_.Get();
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->record, Held("a"));
  EXPECT_EQ(read->resource_version, *version);
  EXPECT_TRUE(absl::IsAlreadyExists(store_.Create(Held("b")).status()));
}

TEST_F(KubeLeaseStoreTest, ReadsOtherWritersLeniently) {
  api_.Put(kKubeLeases, {{"metadata", {{"namespace", "hs"}, {"name", "leader"}}},
                         {"spec",
                          {{"holderIdentity", "other"},
                           {"acquireTime", "2026-01-02T04:04:05.5+01:00"},
                           {"renewTime", "2026-01-02T03:04:06Z"},
                           {"leaseTransitions", "seven"},
                           {"preferredHolder", "b"}}}});
  absl::StatusOr<LeaseStore::Versioned> read = store_.Get();
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->record.holder_identity, "other");
  EXPECT_EQ(read->record.lease_duration_seconds, 0) << "absent";
  EXPECT_EQ(read->record.lease_transitions, 0) << "mistyped";
  EXPECT_EQ(read->record.acquire_time, At("2026-01-02T03:04:05.5Z"));
  EXPECT_EQ(read->record.renew_time, At("2026-01-02T03:04:06Z"));
  EXPECT_EQ(read->record.preferred_holder, "b");

  api_.Put(kKubeLeases, {{"metadata", {{"namespace", "hs"}, {"name", "leader"}}},
                         {"spec", {{"renewTime", "yesterday"}, {"acquireTime", nullptr}}}});
  read = store_.Get();
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->record, LeaseRecord()) << "unparseable times read as unset";
  api_.Put(kKubeLeases, {{"metadata", {{"namespace", "hs"}, {"name", "leader"}}}});
  read = store_.Get();
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->record, LeaseRecord()) << "no spec at all";
}

TEST_F(KubeLeaseStoreTest, UpdatesOnlyTheVersionItRead) {
  ASSERT_TRUE(store_.Create(Held("a")).ok());
  absl::StatusOr<LeaseStore::Versioned> read = store_.Get();
  ASSERT_TRUE(read.ok());
  LeaseRecord renewed = read->record;
  renewed.renew_time += absl::Seconds(2);
  absl::StatusOr<std::string> version = store_.Update(renewed, read->resource_version);
  ASSERT_TRUE(version.ok()) << version.status();
  EXPECT_NE(*version, read->resource_version);
  EXPECT_EQ(Stored()["spec"]["renewTime"], "2026-01-02T03:04:09.000001Z");
  absl::Status stale = store_.Update(Held("b"), read->resource_version).status();
  EXPECT_TRUE(absl::IsAborted(stale)) << stale;
  EXPECT_EQ(Stored()["spec"]["holderIdentity"], "a");
}

TEST_F(KubeLeaseStoreTest, UpdateKeepsWhatOthersPutOnTheLease) {
  api_.Put(kKubeLeases, {{"metadata",
                          {{"namespace", "hs"},
                           {"name", "leader"},
                           {"labels", {{"team", "edge"}}},
                           {"annotations", {{"note", "kept"}}}}},
                         {"spec",
                          {{"holderIdentity", "a"},
                           {"strategy", "OldestEmulationVersion"},
                           {"preferredHolder", "b"}}}});
  absl::StatusOr<LeaseStore::Versioned> read = store_.Get();
  ASSERT_TRUE(read.ok());
  LeaseRecord released = read->record;
  released.holder_identity.clear();
  released.lease_duration_seconds = 1;
  ASSERT_TRUE(store_.Update(released, read->resource_version).ok());
  nlohmann::json lease = Stored();
  EXPECT_EQ(lease["metadata"]["labels"]["team"], "edge");
  EXPECT_EQ(lease["metadata"]["annotations"]["note"], "kept");
  EXPECT_EQ(lease["spec"]["strategy"], "OldestEmulationVersion");
  EXPECT_EQ(lease["spec"]["preferredHolder"], "b");
  EXPECT_EQ(lease["spec"]["holderIdentity"], "") << "released as client-go does";
  EXPECT_EQ(lease["spec"]["leaseDurationSeconds"], 1);
}

TEST_F(KubeLeaseStoreTest, ApiErrorsPassThrough) {
  api_.FailNext(FakeKubeApi::Call::kGet, absl::UnavailableError("connection refused"));
  EXPECT_TRUE(absl::IsUnavailable(store_.Get().status()));
  api_.FailNext(FakeKubeApi::Call::kCreate, absl::DeadlineExceededError("slow"));
  EXPECT_TRUE(absl::IsDeadlineExceeded(store_.Create(Held("a")).status()));
  ASSERT_TRUE(store_.Create(Held("a")).ok());
  absl::StatusOr<LeaseStore::Versioned> read = store_.Get();
  ASSERT_TRUE(read.ok());
  api_.FailNext(FakeKubeApi::Call::kReplace, absl::PermissionDeniedError("forbidden"));
  EXPECT_TRUE(absl::IsPermissionDenied(store_.Update(Held("a"), read->resource_version).status()));
}

// Two replicas, each with its own store over one API server, elect through
// the Lease object itself.
TEST(KubeLeaseStoreElectionTest, ElectsResignsAndHandsOverThroughTheLeaseObject) {
  FakeKubeApi api;
  SimulatedClock clock;
  FixedRandom random{0.5};
  MetricsRegistry metrics;
  struct Replica {
    Replica(const std::string& id, FakeKubeApi* api, const Clock& clock, Random& random,
            MetricsRegistry* metrics)
        : store(api, "hs", "leader"),
          backend(id, &store, clock),
          elector({.prefix = "/leases/", .replica_id = id}, &backend, clock, random, metrics) {}
    KubeLeaseStore store;
    KubeLeaseBackend backend;
    LeaseElector elector;
  };
  Replica a("a", &api, clock, random, &metrics);
  Replica b("b", &api, clock, random, &metrics);
  a.elector.Tick();
  b.elector.Tick();
  EXPECT_TRUE(a.elector.Current().is_leader);
  EXPECT_FALSE(b.elector.Current().is_leader);
  EXPECT_EQ(b.elector.Current().leader_id, "a");
  auto spec = [&] { return api.Get(kKubeLeases, "hs", "leader")->at("spec"); };
  EXPECT_EQ(spec()["holderIdentity"], "a");
  EXPECT_EQ(spec()["leaseDurationSeconds"], 15);
  EXPECT_EQ(spec()["leaseTransitions"], 0);
  EXPECT_EQ(spec()["renewTime"],
            absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", clock.Now(), absl::UTCTimeZone()));

  a.elector.Resign();
  EXPECT_EQ(spec()["holderIdentity"], "");
  EXPECT_EQ(spec()["leaseDurationSeconds"], 1);
  clock.Advance(absl::Seconds(2));
  b.elector.Tick();
  EXPECT_TRUE(b.elector.Current().is_leader);
  EXPECT_EQ(spec()["holderIdentity"], "b");
  EXPECT_EQ(spec()["leaseTransitions"], 1);
  EXPECT_EQ(b.elector.Current().term, 2);
}

}  // namespace
}  // namespace holdfast
