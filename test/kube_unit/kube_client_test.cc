// KubeClient against a real kube-apiserver. Run by test/kube/test_kube_client.py,
// which starts the API server, applies holdfast's CRDs and RBAC and passes:
//   HOLDFAST_TEST_KUBECONFIG           the admin's kubeconfig
//   HOLDFAST_TEST_KUBECONFIG_HOLDFAST  the least-privileged holdfast user's
//   HOLDFAST_TEST_KUBECONFIG_PROXY     the admin's, through a fault proxy
//   HOLDFAST_TEST_STALL_SIGNAL         a file the stall test writes once its
//                                      watch is open; the driver then
//                                      blackholes the proxy
//   HOLDFAST_TEST_STATUS_OBJECT        an Upstream (JSON) whose status the
//                                      bounded-write test writes while the
//                                      driver holds the API server's etcd down
// Skipped when those are not set.
#include "src/kube/kube_client.h"

#include <cstdlib>
#include <fstream>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "test/kube_unit/real_kube_client.h"

namespace holdfast {
namespace {

const KubeResource kUpstreams{"holdfast.dev", "v1", "upstreams", "Upstream"};

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

using testing::ConnectFromEnv;

nlohmann::json Upstream(const std::string& ns, const std::string& name, int port) {
  return {{"apiVersion", "holdfast.dev/v1"},
          {"kind", "Upstream"},
          {"metadata", {{"namespace", ns}, {"name", name}}},
          {"spec", {{"hosts", {{{"address", "192.0.2.1"}, {"port", port}}}}}}};
}

class KubeClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    admin_ = ConnectFromEnv("HOLDFAST_TEST_KUBECONFIG");
    if (admin_ == nullptr) GTEST_SKIP() << "HOLDFAST_TEST_KUBECONFIG is not set";
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    ns_ = absl::AsciiStrToLower(absl::StrCat("client-", info->name()));
    ns_ = ns_.substr(0, 60);
    ASSERT_TRUE(
        admin_
            ->Send("PATCH", absl::StrCat("/api/v1/namespaces/", ns_, "?fieldManager=test"),
                   nlohmann::json{
                       {"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns_}}}}
                       .dump(),
                   "application/apply-patch+yaml")
            .ok());
  }

  nlohmann::json Apply(const nlohmann::json& object) {
    const std::string name = object["metadata"]["name"];
    absl::StatusOr<nlohmann::json> stored = admin_->Send(
        "PATCH", absl::StrCat(kUpstreams.Path(ns_), "/", name, "?fieldManager=test&force=true"),
        object.dump(), "application/apply-patch+yaml");
    EXPECT_TRUE(stored.ok()) << stored.status();
    return stored.ok() ? *stored : nlohmann::json();
  }
  void Delete(const std::string& name) {
    ASSERT_TRUE(admin_->Send("DELETE", absl::StrCat(kUpstreams.Path(ns_), "/", name), "").ok());
  }

  // Watches from `version` on a thread of its own until `count` events came.
  std::vector<KubeWatchEvent> Collect(const std::string& version, size_t count,
                                      absl::Duration timeout = absl::Seconds(30)) {
    std::vector<KubeWatchEvent> events;
    absl::Notification stop;
    KubeWatchRequest request{.ns = ns_, .resource_version = version, .timeout = timeout};
    absl::Status ended = admin_->Watch(
        kUpstreams, request, [] {},
        [&](const KubeWatchEvent& e) {
          if (e.type == KubeWatchEvent::Type::kBookmark) return;
          events.push_back(e);
          if (events.size() == count) stop.Notify();
        },
        &stop);
    EXPECT_TRUE(ended.ok() || absl::IsCancelled(ended)) << ended;
    return events;
  }

  std::unique_ptr<KubeClient> admin_;
  std::string ns_;
};

TEST_F(KubeClientTest, ListsWithAVersionAndResumesFromIt) {
  Apply(Upstream(ns_, "a", 1));
  Apply(Upstream(ns_, "b", 2));
  absl::StatusOr<KubeList> list = admin_->List(kUpstreams, ns_);
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->items.size(), 2u);
  EXPECT_EQ(list->items[0]["kind"], "Upstream");
  EXPECT_FALSE(list->resource_version.empty());

  // Changes after the listing, then a watch from its version: exactly
  // those changes, in order.
  Apply(Upstream(ns_, "a", 10));
  Apply(Upstream(ns_, "c", 3));
  Delete("b");
  std::vector<KubeWatchEvent> events = Collect(list->resource_version, 3);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].type, KubeWatchEvent::Type::kModified);
  EXPECT_EQ(events[0].object["spec"]["hosts"][0]["port"], 10);
  EXPECT_EQ(events[1].type, KubeWatchEvent::Type::kAdded);
  EXPECT_EQ(events[1].object["metadata"]["name"], "c");
  EXPECT_EQ(events[2].type, KubeWatchEvent::Type::kDeleted);
  EXPECT_EQ(events[2].object["metadata"]["name"], "b");
}

TEST_F(KubeClientTest, ListsInPagesAcrossNamespaces) {
  for (int i = 0; i < 7; ++i) Apply(Upstream(ns_, absl::StrCat("u", i), 80 + i));
  KubeClient::Options options;
  options.page_size = 3;
  std::unique_ptr<KubeClient> paged = ConnectFromEnv("HOLDFAST_TEST_KUBECONFIG", options);
  absl::StatusOr<KubeList> list = paged->List(kUpstreams, "");
  ASSERT_TRUE(list.ok()) << list.status();
  int mine = 0;
  for (const auto& item : list->items) mine += item["metadata"]["namespace"] == ns_;
  EXPECT_EQ(mine, 7);
}

TEST_F(KubeClientTest, WatchEndsWithABookmarkAtItsTimeout) {
  absl::StatusOr<KubeList> list = admin_->List(kUpstreams, ns_);
  ASSERT_TRUE(list.ok());
  std::vector<KubeWatchEvent> events;
  absl::Notification opened;
  // A change elsewhere moves the server's version past the watcher's: the
  // bookmark is how this watcher learns it without an event of its own.
  std::thread elsewhere([&] {
    opened.WaitForNotification();
    nlohmann::json other = Upstream("default", ns_.substr(0, 50) + "-bm", 1);
    EXPECT_TRUE(admin_
                    ->Send("PATCH",
                           absl::StrCat(kUpstreams.Path("default"), "/", ns_.substr(0, 50),
                                        "-bm?fieldManager=test&force=true"),
                           other.dump(), "application/apply-patch+yaml")
                    .ok());
  });
  KubeWatchRequest request{
      .ns = ns_, .resource_version = list->resource_version, .timeout = absl::Seconds(8)};
  absl::Status ended = admin_->Watch(
      kUpstreams, request, [&] { opened.Notify(); },
      [&](const KubeWatchEvent& e) { events.push_back(e); }, nullptr);
  elsewhere.join();
  EXPECT_TRUE(ended.ok()) << ended;  // the server's timeout: a normal end
  ASSERT_FALSE(events.empty()) << "the server sends a bookmark before a watch's deadline";
  EXPECT_EQ(events.back().type, KubeWatchEvent::Type::kBookmark);
  EXPECT_GT(std::stoll(events.back().object["metadata"]["resourceVersion"].get<std::string>()),
            std::stoll(list->resource_version));
}

TEST_F(KubeClientTest, TooOldVersionIsGone) {
  Apply(Upstream(ns_, "a", 1));
  // Older than anything the watch cache holds.
  KubeWatchRequest request{.ns = ns_, .resource_version = "1", .timeout = absl::Seconds(10)};
  absl::Status ended = admin_->Watch(
      kUpstreams, request, [] {}, [](const KubeWatchEvent&) {}, nullptr);
  EXPECT_TRUE(IsGone(ended)) << ended;
}

TEST_F(KubeClientTest, StopEndsAWatchPromptly) {
  absl::StatusOr<KubeList> list = admin_->List(kUpstreams, ns_);
  ASSERT_TRUE(list.ok());
  absl::Notification stop, opened;
  std::thread stopper([&] {
    opened.WaitForNotification();
    stop.Notify();
  });
  const absl::Time start = absl::Now();
  KubeWatchRequest request{
      .ns = ns_, .resource_version = list->resource_version, .timeout = absl::Minutes(5)};
  absl::Status ended = admin_->Watch(
      kUpstreams, request, [&] { opened.Notify(); }, [](const KubeWatchEvent&) {}, &stop);
  stopper.join();
  EXPECT_TRUE(absl::IsCancelled(ended)) << ended;
  EXPECT_LT(absl::Now() - start, absl::Seconds(30)) << "a five-minute watch was stopped";
}

TEST_F(KubeClientTest, StatusUpdateWithAStaleVersionConflicts) {
  nlohmann::json stored = Apply(Upstream(ns_, "a", 1));
  nlohmann::json first = stored;
  first["status"] = {{"state", "Accepted"}, {"servingLastGood", false}};
  // Bounded, as the status writer sends it: the server takes `timeout`.
  absl::StatusOr<nlohmann::json> updated =
      admin_->UpdateStatus(kUpstreams, first, absl::Milliseconds(4500));
  ASSERT_TRUE(updated.ok()) << updated.status();
  EXPECT_EQ((*updated)["status"]["state"], "Accepted");
  EXPECT_NE((*updated)["metadata"]["resourceVersion"], stored["metadata"]["resourceVersion"]);

  nlohmann::json stale = stored;  // still carries the old resourceVersion
  stale["status"] = {{"state", "Rejected"}, {"servingLastGood", true}};
  absl::StatusOr<nlohmann::json> refused =
      admin_->UpdateStatus(kUpstreams, stale, absl::InfiniteDuration());
  EXPECT_TRUE(IsConflict(refused.status())) << refused.status();

  // Re-read, then write: accepted.
  absl::StatusOr<nlohmann::json> current = admin_->Get(kUpstreams, ns_, "a");
  ASSERT_TRUE(current.ok());
  (*current)["status"] = stale["status"];
  // No time left: nothing is sent.
  absl::Status late = admin_->UpdateStatus(kUpstreams, *current, absl::Microseconds(900)).status();
  EXPECT_TRUE(absl::IsDeadlineExceeded(late)) << late;
  EXPECT_EQ(admin_->Get(kUpstreams, ns_, "a")->at("status"), first["status"]);
  EXPECT_TRUE(admin_->UpdateStatus(kUpstreams, *current, absl::Seconds(5)).ok());
  EXPECT_TRUE(absl::IsNotFound(admin_->Get(kUpstreams, ns_, "nope").status()));
}

TEST_F(KubeClientTest, CreateAndReplaceWithPreconditions) {
  absl::StatusOr<nlohmann::json> created = admin_->Create(kUpstreams, ns_, Upstream(ns_, "a", 1));
  ASSERT_TRUE(created.ok()) << created.status();
  const std::string first = (*created)["metadata"]["resourceVersion"];
  EXPECT_FALSE(first.empty());
  absl::Status taken = admin_->Create(kUpstreams, ns_, Upstream(ns_, "a", 2)).status();
  EXPECT_TRUE(absl::IsAlreadyExists(taken)) << taken;

  nlohmann::json next = *created;
  next["spec"]["hosts"][0]["port"] = 2;
  absl::StatusOr<nlohmann::json> replaced = admin_->Replace(kUpstreams, next);
  ASSERT_TRUE(replaced.ok()) << replaced.status();
  EXPECT_NE((*replaced)["metadata"]["resourceVersion"], first);
  EXPECT_EQ((*replaced)["spec"]["hosts"][0]["port"], 2);

  next["spec"]["hosts"][0]["port"] = 3;  // still at the first version
  absl::Status stale = admin_->Replace(kUpstreams, next).status();
  EXPECT_TRUE(IsConflict(stale)) << stale;
  next["metadata"].erase("resourceVersion");
  EXPECT_TRUE(absl::IsInvalidArgument(admin_->Replace(kUpstreams, next).status()))
      << "never an unconditional replace";
  absl::StatusOr<nlohmann::json> current = admin_->Get(kUpstreams, ns_, "a");
  ASSERT_TRUE(current.ok());
  EXPECT_EQ((*current)["spec"]["hosts"][0]["port"], 2);
  nlohmann::json gone = *current;
  gone["metadata"]["name"] = "b";
  EXPECT_TRUE(absl::IsNotFound(admin_->Replace(kUpstreams, gone).status()));
}

TEST_F(KubeClientTest, LeastPrivilegedUserReadsAndWritesStatusOnly) {
  std::unique_ptr<KubeClient> holdfast = ConnectFromEnv("HOLDFAST_TEST_KUBECONFIG_HOLDFAST");
  if (holdfast == nullptr) GTEST_SKIP() << "HOLDFAST_TEST_KUBECONFIG_HOLDFAST is not set";
  Apply(Upstream(ns_, "a", 1));
  absl::StatusOr<KubeList> list = holdfast->List(kUpstreams, "");
  ASSERT_TRUE(list.ok()) << list.status();
  absl::StatusOr<nlohmann::json> object = holdfast->Get(kUpstreams, ns_, "a");
  ASSERT_TRUE(object.ok()) << object.status();
  (*object)["status"] = {{"state", "Accepted"}};
  EXPECT_TRUE(holdfast->UpdateStatus(kUpstreams, *object, absl::Seconds(5)).ok());
  // A spec write and a Secret elsewhere are refused: PermissionDenied.
  absl::Status spec_write =
      holdfast->Send("PUT", absl::StrCat(kUpstreams.Path(ns_), "/a"), object->dump()).status();
  EXPECT_TRUE(absl::IsPermissionDenied(spec_write)) << spec_write;
  absl::Status secrets =
      holdfast->Send("GET", absl::StrCat("/api/v1/namespaces/", ns_, "/secrets"), "").status();
  EXPECT_TRUE(absl::IsPermissionDenied(secrets)) << secrets;

  KubeConfig wrong = holdfast->config();
  wrong.token = "not-a-token";
  auto stranger = KubeClient::Create(wrong, {}, Clock::Real());
  ASSERT_TRUE(stranger.ok());
  absl::Status refused = (*stranger)->List(kUpstreams, "").status();
  EXPECT_TRUE(absl::IsUnauthenticated(refused)) << refused;
}

TEST_F(KubeClientTest, UntrustedServerCertificateIsRefused) {
  KubeConfig config = admin_->config();
  config.ca_pem = "";  // the system's roots do not sign the test CA
  auto client = KubeClient::Create(config, {}, Clock::Real());
  ASSERT_TRUE(client.ok());
  absl::Status refused = (*client)->List(kUpstreams, "").status();
  EXPECT_TRUE(absl::IsUnavailable(refused)) << refused;
  EXPECT_TRUE(absl::StrContains(refused.message(), "certificate")) << refused;
}

// Driven by the pytest: it blackholes the proxy once the watch is open.
TEST_F(KubeClientTest, StalledWatchIsAbandoned) {
  const std::string signal = Env("HOLDFAST_TEST_STALL_SIGNAL");
  KubeClient::Options options;
  options.stall_grace = absl::Seconds(2);
  std::unique_ptr<KubeClient> proxied = ConnectFromEnv("HOLDFAST_TEST_KUBECONFIG_PROXY", options);
  if (proxied == nullptr || signal.empty()) GTEST_SKIP() << "no fault proxy given";
  absl::StatusOr<KubeList> list = proxied->List(kUpstreams, ns_);
  ASSERT_TRUE(list.ok()) << list.status();
  const absl::Time start = absl::Now();
  absl::Time opened_at;
  KubeWatchRequest request{
      .ns = ns_, .resource_version = list->resource_version, .timeout = absl::Seconds(4)};
  absl::Status ended = proxied->Watch(
      kUpstreams, request,
      [&] {
        opened_at = absl::Now();
        std::ofstream(signal) << "open\n";
      },
      [](const KubeWatchEvent&) {}, nullptr);
  EXPECT_TRUE(absl::IsDeadlineExceeded(ended)) << ended;
  EXPECT_TRUE(absl::StrContains(ended.message(), "stalled")) << ended;
  // Silent for the server's timeout plus the grace: not before.
  EXPECT_GE(absl::Now() - opened_at, absl::Seconds(6));
  std::cerr << "stall detected after " << absl::FormatDuration(absl::Now() - opened_at)
            << " (watch timeout 4s + grace 2s); whole call "
            << absl::FormatDuration(absl::Now() - start) << "\n";
}

// Driven by the pytest, which has killed the API server's etcd and checks
// after etcd's return that this write was never applied: the API server
// waits for etcd only as long as the `timeout` the write carries.
TEST(KubeClientStoreDownTest, BoundedStatusWriteIsAbandoned) {
  const std::string object_file = Env("HOLDFAST_TEST_STATUS_OBJECT");
  std::unique_ptr<KubeClient> admin = ConnectFromEnv("HOLDFAST_TEST_KUBECONFIG");
  if (admin == nullptr || object_file.empty()) GTEST_SKIP() << "no object given";
  std::ifstream in(object_file);
  nlohmann::json object = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(object.is_discarded()) << object_file;
  object["status"] = {{"state", "Rejected"}};
  const absl::Time start = absl::Now();
  absl::Status written = admin->UpdateStatus(kUpstreams, object, absl::Seconds(2)).status();
  const absl::Duration took = absl::Now() - start;
  EXPECT_FALSE(written.ok()) << "etcd is down: the write cannot have completed";
  // It waited for the bound (an immediate refusal would say nothing about
  // the deadline), and the client's own bound is the same 2 s, not its 10 s
  // request deadline.
  EXPECT_GE(took, absl::Milliseconds(1900)) << written;
  EXPECT_TRUE(absl::IsDeadlineExceeded(written)) << written;  // the API server's 504 Timeout
  EXPECT_LT(took, absl::Seconds(8));
  std::cerr << "bounded write ended after " << absl::FormatDuration(took) << ": " << written
            << "\n";
}

}  // namespace
}  // namespace holdfast
