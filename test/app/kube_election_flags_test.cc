// The Kubernetes election flags: client-go's timing rule, the Lease's
// default namespace, and the election client's deadlines.
#include "gtest/gtest.h"
#include "src/app/election_flags.h"
#include "src/app/kube_serving_source.h"

namespace holdfast {
namespace {

LeaseElector::Options Timings(int lease_s, int renew_s, int retry_ms) {
  return LeaseElector::Options{.prefix = "p/",
                               .replica_id = "r",
                               .lease_duration = absl::Seconds(lease_s),
                               .renew_deadline = absl::Seconds(renew_s),
                               .retry_period = absl::Milliseconds(retry_ms)};
}

TEST(KubeElectionFlagsTest, RenewDeadlineMustExceedOnePointTwoRetryPeriods) {
  EXPECT_TRUE(CheckClientGoTimings(Timings(15, 10, 2000)).ok());
  EXPECT_TRUE(CheckClientGoTimings(Timings(4, 3, 1000)).ok());
  absl::Status refused = CheckClientGoTimings(Timings(4, 3, 2500));  // 3s <= 1.2 x 2.5s
  EXPECT_TRUE(absl::IsInvalidArgument(refused));
  EXPECT_NE(refused.message().find("--renew-deadline"), std::string::npos) << refused;
  EXPECT_FALSE(CheckClientGoTimings(Timings(4, 3, 2600)).ok());
}

TEST(KubeElectionFlagsTest, ParsedTimingsAreCheckedInOrder) {
  ServeOptions options;
  options.replica_id = "r";
  options.lease_duration = "3s";
  options.renew_deadline = "3s";
  absl::StatusOr<LeaseElector::Options> parsed = ElectionOptionsFromFlags(options, "p/");
  EXPECT_FALSE(parsed.ok()) << "lease duration must exceed the renew deadline";
  options.lease_duration = "4s";
  parsed = ElectionOptionsFromFlags(options, "p/");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->renew_deadline, absl::Seconds(3));
  options.replica_id = "";
  EXPECT_EQ(ElectionOptionsFromFlags(options, "p/")->replica_id, HostName());
}

TEST(KubeElectionFlagsTest, TheLeaseLivesInThePodsNamespaceInClusterElseHoldfastSystem) {
  ServeOptions options;
  KubeConfig config;
  config.ns = "edge";
  options.kube.kubeconfig = "/kubeconfig";
  absl::StatusOr<LeaseLocation> lease = LeaseLocationFromFlags(options, config);
  ASSERT_TRUE(lease.ok()) << lease.status();
  EXPECT_EQ(lease->ns, "holdfast-system") << "a kubeconfig's namespace is the user's, not ours";
  EXPECT_EQ(lease->name, "holdfast-leader");
  options.kube.kubeconfig.clear();
  options.kube.in_cluster = true;
  EXPECT_EQ(LeaseLocationFromFlags(options, config)->ns, "edge");
  options.lease_namespace = "other";
  options.lease_name = "mine";
  lease = LeaseLocationFromFlags(options, config);
  EXPECT_EQ(lease->ns, "other");
  EXPECT_EQ(lease->name, "mine");
  options.lease_name = "Not/A-Name";
  absl::Status refused = LeaseLocationFromFlags(options, config).status();
  EXPECT_TRUE(absl::IsInvalidArgument(refused));
  EXPECT_NE(refused.message().find("--lease-name"), std::string::npos) << refused;
}

TEST(KubeElectionFlagsTest, ElectionCallsEndWellBeforeTheRenewDeadline) {
  KubeClient::Options options = ElectionClientOptions(absl::Seconds(10));
  EXPECT_EQ(options.request_timeout, absl::Milliseconds(2500));
  EXPECT_EQ(options.connect_timeout, absl::Milliseconds(2500));
  options = ElectionClientOptions(absl::Seconds(60));
  EXPECT_EQ(options.request_timeout, absl::Seconds(10)) << "never longer than other calls";
  EXPECT_EQ(options.connect_timeout, absl::Seconds(5));
}

}  // namespace
}  // namespace holdfast
