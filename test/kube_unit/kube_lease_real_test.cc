// KubeLeaseStore and KubeLeaseBackend against a real kube-apiserver, as the
// least-privileged holdfast user of deploy/rbac.yaml (create leases; get and
// update holdfast-system/holdfast-leader only). Run by
// test/kube/test_kube_client.py with the kubeconfigs kube_client_test.cc
// names; skipped without them.
#include <cstdlib>
#include <regex>

#include "gtest/gtest.h"
#include "src/common/metrics.h"
#include "src/common/random.h"
#include "src/election/kube_lease_backend.h"
#include "src/election/kube_lease_store.h"
#include "src/election/lease_elector.h"
#include "src/kube/kube_client.h"
#include "test/kube_unit/real_kube_client.h"

namespace holdfast {
namespace {

constexpr char kNamespace[] = "holdfast-system";
constexpr char kLease[] = "holdfast-leader";

std::unique_ptr<KubeClient> ConnectWithServesTimeout(const char* env) {
  KubeClient::Options options;
  options.request_timeout = absl::Milliseconds(500);  // as serve's: a quarter of the deadline
  return testing::ConnectFromEnv(env, options);
}

struct Replica {
  Replica(const std::string& id, KubeApi* api, Random& random, MetricsRegistry* metrics)
      : store(api, kNamespace, kLease),
        backend(id, &store, Clock::Real()),
        elector({.prefix = "kubernetes/",
                 .replica_id = id,
                 .lease_duration = absl::Seconds(3),
                 .renew_deadline = absl::Seconds(2),
                 .retry_period = absl::Milliseconds(500)},
                &backend, Clock::Real(), random, metrics) {}
  KubeLeaseStore store;
  KubeLeaseBackend backend;
  LeaseElector elector;
};

class KubeLeaseRealTest : public ::testing::Test {
 protected:
  void SetUp() override {
    admin_ = ConnectWithServesTimeout("HOLDFAST_TEST_KUBECONFIG");
    holdfast_ = ConnectWithServesTimeout("HOLDFAST_TEST_KUBECONFIG_HOLDFAST");
    if (admin_ == nullptr || holdfast_ == nullptr) GTEST_SKIP() << "no kubeconfigs given";
    absl::Status deleted =
        admin_->Send("DELETE", absl::StrCat(kKubeLeases.Path(kNamespace), "/", kLease), "")
            .status();
    ASSERT_TRUE(deleted.ok() || absl::IsNotFound(deleted)) << deleted;
  }
  nlohmann::json Spec() {
    absl::StatusOr<nlohmann::json> lease = admin_->Get(kKubeLeases, kNamespace, kLease);
    EXPECT_TRUE(lease.ok()) << lease.status();
    return lease.ok() ? (*lease)["spec"] : nlohmann::json();
  }

  std::unique_ptr<KubeClient> admin_;
  std::unique_ptr<KubeClient> holdfast_;
  FixedRandom random_{0.5};
  MetricsRegistry metrics_;
};

TEST_F(KubeLeaseRealTest, ElectsThroughTheLeaseWithClientGoFields) {
  Replica a("replica-a", holdfast_.get(), random_, &metrics_);
  Replica b("replica-b", holdfast_.get(), random_, &metrics_);
  a.elector.Tick();  // creates the Lease
  b.elector.Tick();
  ASSERT_TRUE(a.elector.Current().is_leader);
  EXPECT_FALSE(b.elector.Current().is_leader);
  EXPECT_EQ(b.elector.Current().leader_id, "replica-a");
  nlohmann::json spec = Spec();
  EXPECT_EQ(spec["holderIdentity"], "replica-a");
  EXPECT_EQ(spec["leaseDurationSeconds"], 3);
  EXPECT_EQ(spec["leaseTransitions"], 0);
  const std::regex micro_time(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z)");
  EXPECT_TRUE(std::regex_match(spec["renewTime"].get<std::string>(), micro_time)) << spec;
  EXPECT_TRUE(std::regex_match(spec["acquireTime"].get<std::string>(), micro_time)) << spec;

  const std::string renewed = spec["renewTime"];
  a.elector.Tick();
  EXPECT_TRUE(a.elector.Current().is_leader);
  EXPECT_NE(Spec()["renewTime"], renewed) << "a renewal writes a new renewTime";

  a.elector.Resign();
  spec = Spec();
  EXPECT_EQ(spec["holderIdentity"], "");
  EXPECT_EQ(spec["leaseDurationSeconds"], 1);
  b.elector.Tick();
  EXPECT_TRUE(b.elector.Current().is_leader);
  spec = Spec();
  EXPECT_EQ(spec["holderIdentity"], "replica-b");
  EXPECT_EQ(spec["leaseTransitions"], 1);
  EXPECT_EQ(b.elector.Current().term, 2);
}

TEST_F(KubeLeaseRealTest, AStaleWriteConflictsAndACreateOfAHeldLeaseIsRefused) {
  KubeLeaseStore store(holdfast_.get(), kNamespace, kLease);
  LeaseRecord record{.holder_identity = "x", .lease_duration_seconds = 3};
  // MicroTime keeps microseconds: start from a whole one to compare reads.
  record.renew_time = record.acquire_time = absl::FromUnixMicros(absl::ToUnixMicros(absl::Now()));
  absl::StatusOr<std::string> created = store.Create(record);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_TRUE(absl::IsAlreadyExists(store.Create(record).status()));
  record.renew_time += absl::Microseconds(1);
  absl::StatusOr<std::string> updated = store.Update(record, *created);
  ASSERT_TRUE(updated.ok()) << updated.status();
  record.holder_identity = "y";
  absl::Status stale = store.Update(record, *created).status();
  EXPECT_TRUE(absl::IsAborted(stale)) << stale;
  absl::StatusOr<LeaseStore::Versioned> read = store.Get();
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->record.holder_identity, "x");
  EXPECT_EQ(read->record.renew_time, record.renew_time) << "kept to the microsecond";
  // Another Lease is beyond the holdfast user's rights.
  KubeLeaseStore other(holdfast_.get(), kNamespace, "someone-else");
  EXPECT_TRUE(absl::IsPermissionDenied(other.Get().status()));
}

}  // namespace
}  // namespace holdfast
