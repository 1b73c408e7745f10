// KubeStatusWriter on the in-memory API, electing through a Lease on the
// same API with simulated time: only the leader writes, each status names its
// writer and observedGeneration, unchanged statuses are not rewritten, a
// conflict is read again, a refusal after the term ended steps down while a
// refusal under a live term does not, and a new term converges what an
// earlier one left.
#include "src/status/kube_status_writer.h"

#include "gtest/gtest.h"
#include "src/election/kube_lease_backend.h"
#include "src/election/kube_lease_store.h"
#include "src/gateway_api/objects.h"
#include "src/kube/fake_kube_api.h"

namespace holdfast {
namespace {

const KubeResource kUpstreams{"holdfast.dev", "v1", "upstreams", "Upstream"};
const KubeResource kGatewayClasses{"gateway.networking.k8s.io", "v1", "gatewayclasses",
                                   "GatewayClass"};
const ObjectKey kApi{"Upstream", "shop", "api"};

nlohmann::json Upstream(const std::string& uid, int64_t generation) {
  return {{"metadata",
           {{"namespace", "shop"}, {"name", "api"}, {"uid", uid}, {"generation", generation}}},
          {"spec", {{"hosts", {{{"address", "10.0.0.1"}, {"port", 80}}}}}}};
}

ObjectStatus Rejected() {
  ObjectStatus status;
  status.key = kApi;
  status.Reject("spec.hosts[0].port", "must be 1-65535");
  status.serving_last_good = true;
  return status;
}

class KubeStatusWriterTest : public ::testing::Test {
 protected:
  KubeStatusWriterTest()
      : lease_store_(&api_, "holdfast-system", "holdfast-leader"),
        backend_("a", &lease_store_, clock_),
        elector_(LeaseElector::Options{.prefix = "kubernetes/holdfast-system/holdfast-leader/",
                                       .replica_id = "a"},
                 &backend_, clock_, random_, &metrics_),
        writer_(KubeStatusWriter::Options{.replica_id = "a",
                                          .resources = {kUpstreams},
                                          .gateway_api_resources = {{gateway_api::kGatewayClassKind,
                                                                     kGatewayClasses}}},
                &api_, &elector_, &lease_store_, clock_, random_, &metrics_) {}

  void Lead() {
    elector_.Tick();
    ASSERT_TRUE(elector_.Current().is_leader);
  }
  // Another replica takes the Lease, as after this one was paused.
  void LeaseTakenBy(const std::string& holder) {
    absl::StatusOr<LeaseStore::Versioned> lease = lease_store_.Get();
    ASSERT_TRUE(lease.ok()) << lease.status();
    LeaseRecord record = lease->record;
    record.holder_identity = holder;
    record.lease_transitions += 1;
    ASSERT_TRUE(lease_store_.Update(record, lease->resource_version).ok());
  }
  void Publish(const ObjectStatus& status, const ObservedObject& observed) {
    writer_.Update({{status.key, status}}, {{status.key, observed}});
  }
  // A spec change: the API server keeps the status, moves the generation.
  void NewGeneration(int64_t generation) {
    absl::StatusOr<nlohmann::json> object = api_.Get(kUpstreams, "shop", "api");
    ASSERT_TRUE(object.ok()) << object.status();
    (*object)["metadata"]["generation"] = generation;
    api_.Put(kUpstreams, *object);
  }
  nlohmann::json Stored() {
    absl::StatusOr<nlohmann::json> object = api_.Get(kUpstreams, "shop", "api");
    EXPECT_TRUE(object.ok()) << object.status();
    return object.ok() ? JsonField(*object, "status") : nlohmann::json();
  }
  double Metric(const std::string& name) { return metrics_.GetCounter(name, "")->value(); }

  FakeKubeApi api_;
  SimulatedClock clock_;
  FixedRandom random_{0.5};
  MetricsRegistry metrics_;
  KubeLeaseStore lease_store_;
  KubeLeaseBackend backend_;
  LeaseElector elector_;
  KubeStatusWriter writer_;
};

TEST_F(KubeStatusWriterTest, AFollowerWritesNothing) {
  api_.Put(kUpstreams, Upstream("u1", 1));
  Publish(Rejected(), {"u1", 1});
  ASSERT_TRUE(writer_.Sync().ok());
  EXPECT_EQ(api_.calls(FakeKubeApi::Call::kUpdateStatus), 0);
  EXPECT_TRUE(Stored().is_null());
}

TEST_F(KubeStatusWriterTest, TheLeaderWritesStateReasonsConditionsAndItsTerm) {
  api_.Put(kUpstreams, Upstream("u1", 4));
  Lead();
  Publish(Rejected(), {"u1", 4});
  ASSERT_TRUE(writer_.Sync().ok());
  nlohmann::json status = Stored();
  EXPECT_EQ(status["state"], "Rejected");
  EXPECT_EQ(status["servingLastGood"], true);
  EXPECT_EQ(status["observedGeneration"], 4);
  EXPECT_EQ(status["reasons"][0]["field"], "spec.hosts[0].port");
  EXPECT_EQ(status["reasons"][0]["message"], "must be 1-65535");
  const nlohmann::json& accepted = status["conditions"][0];
  EXPECT_EQ(accepted["type"], "Accepted");
  EXPECT_EQ(accepted["status"], "False");
  EXPECT_EQ(accepted["reason"], "Rejected");
  EXPECT_EQ(accepted["observedGeneration"], 4);
  EXPECT_EQ(accepted["lastTransitionTime"], "2023-11-14T22:13:20Z");
  EXPECT_EQ(status["writer"],
            (nlohmann::json{{"replica", "a"}, {"term", elector_.Current().term}}));
  EXPECT_EQ(elector_.Current().term, 1);  // leaseTransitions 0, plus one
  EXPECT_EQ(Metric("holdfast_status_writes_total"), 1);
}

// The API server abandons a write it cannot commit before the renew
// deadline, instead of applying it after another replica took the Lease.
TEST_F(KubeStatusWriterTest, EachWriteIsBoundedByTheTimeLeftInTheTerm) {
  api_.Put(kUpstreams, Upstream("u1", 1));
  Lead();  // renewed now; the renew deadline is 10 s away
  clock_.Advance(absl::Seconds(3));
  Publish(Rejected(), {"u1", 1});
  ASSERT_TRUE(writer_.Sync().ok());
  EXPECT_EQ(api_.status_timeouts(), std::vector<absl::Duration>{absl::Seconds(7)});
  EXPECT_EQ(Stored()["state"], "Rejected");
}

TEST_F(KubeStatusWriterTest, AnUnchangedStatusIsNotWrittenAgainAndTransitionTimesHold) {
  api_.Put(kUpstreams, Upstream("u1", 1));
  Lead();
  ObjectStatus accepted;
  accepted.key = kApi;
  Publish(accepted, {"u1", 1});
  ASSERT_TRUE(writer_.Sync().ok());
  const int gets = api_.calls(FakeKubeApi::Call::kGet);
  ASSERT_TRUE(writer_.Sync().ok());
  EXPECT_EQ(api_.calls(FakeKubeApi::Call::kUpdateStatus), 1);
  EXPECT_EQ(api_.calls(FakeKubeApi::Call::kGet), gets) << "known within the term: not read again";

  // A new generation with the same outcome: observedGeneration moves, the
  // condition's transition time does not.
  clock_.Advance(absl::Seconds(5));
  elector_.Tick();  // renews
  NewGeneration(2);
  Publish(accepted, {"u1", 2});
  ASSERT_TRUE(writer_.Sync().ok());
  EXPECT_EQ(Stored()["observedGeneration"], 2);
  EXPECT_EQ(Stored()["conditions"][0]["lastTransitionTime"], "2023-11-14T22:13:20Z");
  // Rejected now: the condition changes status, so its time moves.
  NewGeneration(3);
  Publish(Rejected(), {"u1", 3});
  ASSERT_TRUE(writer_.Sync().ok());
  EXPECT_EQ(Stored()["conditions"][0]["lastTransitionTime"], "2023-11-14T22:13:25Z");
}

TEST_F(KubeStatusWriterTest, AConflictIsReadAgainAndWritten) {
  api_.Put(kUpstreams, Upstream("u1", 1));
  Lead();
  api_.FailNext(FakeKubeApi::Call::kUpdateStatus, absl::AbortedError("HTTP 409"));
  Publish(Rejected(), {"u1", 1});
  ASSERT_TRUE(writer_.Sync().ok());
  EXPECT_EQ(Stored()["state"], "Rejected");
  EXPECT_EQ(api_.calls(FakeKubeApi::Call::kUpdateStatus), 2);
}

TEST_F(KubeStatusWriterTest, ARefusalAfterTheTermEndedIsFencedAndStepsDown) {
  api_.Put(kUpstreams, Upstream("u1", 1));
  Lead();
  const int64_t term = elector_.Current().term;
  LeaseTakenBy("b");
  // What deploy/status-fencing.yaml answers: 403.
  api_.FailNext(FakeKubeApi::Call::kUpdateStatus, absl::PermissionDeniedError("fenced"));
  Publish(Rejected(), {"u1", 1});
  absl::Status status = writer_.Sync();
  EXPECT_TRUE(absl::IsFailedPrecondition(status)) << status;
  EXPECT_EQ(Metric("holdfast_status_writes_fenced_total"), 1);
  EXPECT_FALSE(elector_.Current().is_leader) << "term " << term << " ended: step down";
  EXPECT_TRUE(Stored().is_null());
}

TEST_F(KubeStatusWriterTest, ARefusalUnderALiveTermIsAnErrorNotFencing) {
  api_.Put(kUpstreams, Upstream("u1", 1));
  Lead();
  api_.FailNext(FakeKubeApi::Call::kUpdateStatus, absl::PermissionDeniedError("RBAC"));
  Publish(Rejected(), {"u1", 1});
  EXPECT_TRUE(absl::IsPermissionDenied(writer_.Sync()));
  EXPECT_EQ(Metric("holdfast_status_writes_fenced_total"), 0);
  EXPECT_EQ(Metric("holdfast_status_write_errors_total"), 1);
  EXPECT_TRUE(elector_.Current().is_leader);
  ASSERT_TRUE(writer_.Sync().ok()) << "retried";
  EXPECT_EQ(Stored()["state"], "Rejected");
}

TEST_F(KubeStatusWriterTest, DeletedOrReplacedObjectsAreSkipped) {
  Lead();
  Publish(Rejected(), {"u1", 1});  // not stored (deleted after translation)
  ASSERT_TRUE(writer_.Sync().ok());
  api_.Put(kUpstreams, Upstream("u2", 1));  // created again: another uid
  ASSERT_TRUE(writer_.Sync().ok());
  EXPECT_EQ(api_.calls(FakeKubeApi::Call::kUpdateStatus), 0);
  Publish(Rejected(), {"u2", 1});
  ASSERT_TRUE(writer_.Sync().ok());
  EXPECT_EQ(Stored()["state"], "Rejected");
}

TEST_F(KubeStatusWriterTest, StatusesOfOtherKindsAreNotWritten) {
  Lead();
  ObjectStatus file;
  file.key = {"File", "", "gateway/bad.yaml"};
  file.Reject("", "syntax error");
  writer_.Update({{file.key, file}}, {});
  const int gets = api_.calls(FakeKubeApi::Call::kGet);  // the elector's included
  ASSERT_TRUE(writer_.Sync().ok());
  EXPECT_EQ(api_.calls(FakeKubeApi::Call::kGet), gets);
}

TEST_F(KubeStatusWriterTest, ANewTermConvergesWhatAnEarlierTermLeft) {
  // Written by "b" in term 1, about generation 1.
  nlohmann::json object = Upstream("u1", 2);
  object["status"] = KubeStatusContent(kApi, Rejected(), {"u1", 1});
  object["status"]["writer"] = {{"replica", "b"}, {"term", 1}};
  api_.Put(kUpstreams, object);
  Lead();
  Publish(Rejected(), {"u1", 2});
  ASSERT_TRUE(writer_.Sync().ok());
  EXPECT_EQ(Stored()["observedGeneration"], 2);
  EXPECT_EQ(Stored()["writer"]["replica"], "a");

  // Same content as stored: read once in the new term, not rewritten.
  nlohmann::json same = Upstream("u1", 2);
  same["status"] = Stored();
  api_.Put(kUpstreams, same);
  const int writes = api_.calls(FakeKubeApi::Call::kUpdateStatus);
  elector_.ReportFenced(elector_.Current().term);
  clock_.Advance(absl::Seconds(1));
  elector_.Tick();  // campaigns again
  elector_.Tick();
  ASSERT_TRUE(elector_.Current().is_leader);
  ASSERT_TRUE(writer_.Sync().ok());
  EXPECT_EQ(api_.calls(FakeKubeApi::Call::kUpdateStatus), writes);
}

gateway_api::GatewayApiStatus ClassAccepted(int64_t generation) {
  gateway_api::GatewayApiStatus status;
  status.key = {gateway_api::kGatewayClassKind, "", "holdfast"};
  status.generation = generation;
  status.conditions = {{.type = "Accepted", .status = true, .reason = "Accepted"}};
  return status;
}

gateway_api::GatewayApiStatuses Statuses(const gateway_api::GatewayApiStatus& status) {
  gateway_api::GatewayApiStatuses statuses;
  statuses.Put(std::make_shared<gateway_api::GatewayApiStatus>(status));
  return statuses;
}

TEST_F(KubeStatusWriterTest, GatewayApiStatusesAreWrittenByTheLeaderForTheirGeneration) {
  api_.Put(kGatewayClasses, {{"metadata", {{"name", "holdfast"}, {"generation", 2}}},
                             {"spec", {{"controllerName", "holdfast.dev/gateway-controller"}}}});
  writer_.UpdateGatewayApi(Statuses(ClassAccepted(2)));
  ASSERT_TRUE(writer_.Sync().ok());
  EXPECT_EQ(api_.calls(FakeKubeApi::Call::kUpdateStatus), 0) << "a follower wrote";

  Lead();
  ASSERT_TRUE(writer_.Sync().ok());
  absl::StatusOr<nlohmann::json> stored = api_.Get(kGatewayClasses, "", "holdfast");
  ASSERT_TRUE(stored.ok());
  const nlohmann::json& condition = (*stored)["status"]["conditions"][0];
  EXPECT_EQ(condition["type"], "Accepted");
  EXPECT_EQ(condition["status"], "True");
  EXPECT_EQ(condition["observedGeneration"], 2);
  const int writes = api_.calls(FakeKubeApi::Call::kUpdateStatus);
  EXPECT_EQ(writes, 1);
  ASSERT_TRUE(writer_.Sync().ok());
  EXPECT_EQ(api_.calls(FakeKubeApi::Call::kUpdateStatus), writes) << "unchanged: not rewritten";
  // The same status made again (another object): compared, not rewritten.
  writer_.UpdateGatewayApi(Statuses(ClassAccepted(2)));
  ASSERT_TRUE(writer_.Sync().ok());
  EXPECT_EQ(api_.calls(FakeKubeApi::Call::kUpdateStatus), writes) << "equal: not rewritten";

  // About generation 1 while the object is at 2: left for the next translation.
  writer_.UpdateGatewayApi(Statuses(ClassAccepted(1)));
  ASSERT_TRUE(writer_.Sync().ok());
  EXPECT_EQ(api_.calls(FakeKubeApi::Call::kUpdateStatus), writes);

  // Changed: written.
  gateway_api::GatewayApiStatus refused = ClassAccepted(2);
  refused.conditions[0].status = false;
  writer_.UpdateGatewayApi(Statuses(refused));
  ASSERT_TRUE(writer_.Sync().ok());
  EXPECT_EQ(api_.calls(FakeKubeApi::Call::kUpdateStatus), writes + 1);
  stored = api_.Get(kGatewayClasses, "", "holdfast");
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ((*stored)["status"]["conditions"][0]["status"], "False");
}

}  // namespace
}  // namespace holdfast
