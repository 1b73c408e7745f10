// One suite that every gateway-object source passes: the directory source
// (the embedded default), the etcd source (over the in-memory
// FakeKeyValueStore, and against a real etcd server) and
// the Kubernetes source (against a real API server, when
// HOLDFAST_TEST_KUBECONFIG names an admin kubeconfig for one with
// holdfast's CRDs installed; test/kube/test_kube_client.py runs it so).
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"
#include "src/common/clock.h"
#include "src/etcd/fake_key_value_store.h"
#include "src/kube/kube_client.h"
#include "src/source/directory_config_source.h"
#include "src/source/etcd_config_source.h"
#include "src/source/kube_config_source.h"
#include "src/source/yaml_json.h"
#include "test/etcd/etcd_test_server.h"

namespace holdfast {
namespace {

// Where a source reads objects from, seen from the test.
class SourceFixture {
 public:
  virtual ~SourceFixture() = default;
  // Stores `text` as the object `key` (one object per file or per key).
  virtual void Put(const ObjectKey& key, const std::string& text) = 0;
  virtual void Remove(const ObjectKey& key) = 0;
  // The location (file) that statuses of `key` name.
  virtual std::string LocationOf(const ObjectKey& key) const = 0;
  virtual std::unique_ptr<ConfigSource> Make(MetricsRegistry* metrics,
                                             std::function<void(SnapshotPtr)> publish) = 0;
  // False for a store that refuses, before holdfast sees it, text that is
  // not YAML or a value its own schema forbids (the API server).
  virtual bool StoresAnyText() const { return true; }
  // Whether statuses can point at a line (a file, an etcd value: yes; an
  // API object, stored as structured data: no).
  virtual bool HasLines() const { return true; }
};

class DirectoryFixture : public SourceFixture {
 public:
  DirectoryFixture() {
    char dir_template[] = "/tmp/holdfast-conformance-XXXXXX";
    dir_ = mkdtemp(dir_template);
  }
  ~DirectoryFixture() override { std::filesystem::remove_all(dir_); }
  void Put(const ObjectKey& key, const std::string& text) override {
    // Written aside and renamed, as careful tools do.
    std::string path = LocationOf(key);
    std::ofstream(path + ".tmp") << text;
    std::filesystem::rename(path + ".tmp", path);
  }
  void Remove(const ObjectKey& key) override { std::filesystem::remove(LocationOf(key)); }
  std::string LocationOf(const ObjectKey& key) const override {
    return absl::StrCat(dir_, "/", key.kind, "-", key.ns, "-", key.name, ".yaml");
  }
  std::unique_ptr<ConfigSource> Make(MetricsRegistry* metrics,
                                     std::function<void(SnapshotPtr)> publish) override {
    DirectoryConfigSource::Options options;
    options.directory = dir_;
    options.poll_interval = absl::Milliseconds(50);
    return std::make_unique<DirectoryConfigSource>(options, Clock::Real(), metrics, publish);
  }

 private:
  std::string dir_;
};

// EtcdConfigSource over a KeyValueStore: the real cluster or the fake.
class KeyValueFixture : public SourceFixture {
 public:
  std::string LocationOf(const ObjectKey& key) const override {
    return ObjectStoreKey("/conformance", "config", key);
  }
  std::unique_ptr<ConfigSource> Make(MetricsRegistry* metrics,
                                     std::function<void(SnapshotPtr)> publish) override {
    EtcdConfigSource::Options options;
    options.prefix = "/conformance";
    return std::make_unique<EtcdConfigSource>(options, store(), Clock::Real(), metrics, publish);
  }

 protected:
  virtual KeyValueStore* store() = 0;
};

class EtcdFixture : public KeyValueFixture {
 public:
  EtcdFixture() : client_(server_.Client()) {}
  void Put(const ObjectKey& key, const std::string& text) override {
    ASSERT_TRUE(client_->Put(LocationOf(key), text).ok());
  }
  void Remove(const ObjectKey& key) override { ASSERT_TRUE(client_->Delete(LocationOf(key)).ok()); }

 private:
  KeyValueStore* store() override { return client_.get(); }
  testing::EtcdTestServer server_;
  std::unique_ptr<EtcdClient> client_;
};

// The etcd source over the in-memory store: the same cases, no server.
class FakeEtcdFixture : public KeyValueFixture {
 public:
  void Put(const ObjectKey& key, const std::string& text) override {
    store_.Put(LocationOf(key), text);
  }
  void Remove(const ObjectKey& key) override { store_.Delete(LocationOf(key)); }

 private:
  KeyValueStore* store() override { return &store_; }
  FakeKeyValueStore store_;
};

// Objects written by server-side apply, as kubectl does, with the admin's
// kubeconfig; the source reads them with the least-privileged holdfast
// user's (deploy/rbac.yaml) when given one.
class KubernetesFixture : public SourceFixture {
 public:
  KubernetesFixture() {
    admin_ = Connect("HOLDFAST_TEST_KUBECONFIG");
    reader_ = std::getenv("HOLDFAST_TEST_KUBECONFIG_HOLDFAST")
                  ? Connect("HOLDFAST_TEST_KUBECONFIG_HOLDFAST")
                  : Connect("HOLDFAST_TEST_KUBECONFIG");
    Send("PATCH", "/api/v1/namespaces/shop?fieldManager=conformance",
         R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop"}})",
         "application/apply-patch+yaml");
    // Every case starts from an empty namespace.
    for (const KubeResource& resource : HoldfastResources()) {
      Send("DELETE", resource.Path("shop"), "");
    }
  }
  void Put(const ObjectKey& key, const std::string& text) override {
    absl::StatusOr<nlohmann::json> json = YamlToJson(YAML::Load(text));
    ASSERT_TRUE(json.ok()) << json.status();
    Send("PATCH",
         absl::StrCat(Resource(key).Path(key.ns), "/", key.name,
                      "?fieldManager=conformance&force=true&fieldValidation=Strict"),
         json->dump(), "application/apply-patch+yaml");
  }
  void Remove(const ObjectKey& key) override {
    Send("DELETE", absl::StrCat(Resource(key).Path(key.ns), "/", key.name), "");
  }
  std::string LocationOf(const ObjectKey& key) const override {
    return KubeLocation(key.kind, key.ns, key.name);
  }
  std::unique_ptr<ConfigSource> Make(MetricsRegistry* metrics,
                                     std::function<void(SnapshotPtr)> publish) override {
    KubeConfigSource::Options options;
    options.apply_interval = absl::Milliseconds(50);
    return std::make_unique<KubeConfigSource>(options, reader_.get(), Clock::Real(), Random::Real(),
                                              metrics, publish);
  }
  bool StoresAnyText() const override { return false; }
  bool HasLines() const override { return false; }

 private:
  static std::unique_ptr<KubeClient> Connect(const char* env) {
    absl::StatusOr<KubeConfig> config = LoadKubeconfig({.path = std::getenv(env)});
    EXPECT_TRUE(config.ok()) << config.status();
    if (!config.ok()) return nullptr;
    absl::StatusOr<std::unique_ptr<KubeClient>> client =
        KubeClient::Create(*config, {}, Clock::Real());
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? std::move(*client) : nullptr;
  }
  static KubeResource Resource(const ObjectKey& key) {
    for (const KubeResource& resource : HoldfastResources()) {
      if (resource.kind == key.kind) return resource;
    }
    ADD_FAILURE() << "no resource for " << key.kind;
    return {};
  }
  void Send(const std::string& method, const std::string& path, const std::string& body,
            const std::string& content_type = "application/json") {
    ASSERT_NE(admin_, nullptr);
    absl::StatusOr<nlohmann::json> answer = admin_->Send(method, path, body, content_type);
    ASSERT_TRUE(answer.ok()) << answer.status();
  }

  std::unique_ptr<KubeClient> admin_;
  std::unique_ptr<KubeClient> reader_;
};

const ObjectKey kUpstream{"Upstream", "shop", "api"};
const ObjectKey kService{"VirtualService", "shop", "store"};

std::string UpstreamYaml(int port) {
  return absl::StrCat(R"(apiVersion: holdfast.dev/v1
kind: Upstream
metadata: {name: api, namespace: shop}
spec:
  hosts:
  - {address: 127.0.0.1, port: )",
                      port, "}\n");
}

const char kServiceYaml[] = R"(apiVersion: holdfast.dev/v1
kind: VirtualService
metadata: {name: store, namespace: shop}
spec:
  domains: [store.example.com]
  routes:
  - match: {prefix: /}
    upstream: api
)";

class ConfigSourceConformance
    : public ::testing::TestWithParam<std::function<std::unique_ptr<SourceFixture>()>> {
 protected:
  void SetUp() override { fixture_ = GetParam()(); }
  void TearDown() override {
    if (source_) source_->Stop();
  }

  void StartSource() {
    source_ = fixture_->Make(&metrics_, [this](SnapshotPtr snapshot) {
      absl::MutexLock lock(&mu_);
      latest_ = std::move(snapshot);
      ++published_;
    });
    source_->OnStatuses([this](const StatusMap& statuses) {
      absl::MutexLock lock(&mu_);
      listened_ = statuses;
    });
    source_->Start();
  }

  // Waits (up to 20 s) until `condition` holds for the latest snapshot and
  // statuses; the condition is what is asserted, never the time taken.
  bool Eventually(const std::function<bool(const Snapshot*, const StatusMap&)>& condition) {
    for (int i = 0; i < 400; ++i) {
      SnapshotPtr snapshot;
      {
        absl::MutexLock lock(&mu_);
        snapshot = latest_;
      }
      if (condition(snapshot.get(), source_->statuses())) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  static std::string ClusterLoad(const Snapshot* snapshot) {
    if (snapshot == nullptr) return "";
    const auto& endpoints =
        snapshot->Resources("type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment");
    auto it = endpoints.find("shop/api");
    if (it == endpoints.end() || it->second->message() == nullptr) return "";
    return it->second->message()->ShortDebugString();
  }

  static StatusState StateOf(const StatusMap& statuses, const ObjectKey& key) {
    auto it = statuses.find(key);
    return it == statuses.end() ? static_cast<StatusState>(-1) : it->second.state;
  }

  std::unique_ptr<SourceFixture> fixture_;
  MetricsRegistry metrics_;
  std::unique_ptr<ConfigSource> source_;
  absl::Mutex mu_;
  SnapshotPtr latest_ ABSL_GUARDED_BY(mu_);
  int published_ ABSL_GUARDED_BY(mu_) = 0;
  StatusMap listened_ ABSL_GUARDED_BY(mu_);  // what the status listener got last
};

TEST_P(ConfigSourceConformance, PublishesWhatIsStoredAtStart) {
  fixture_->Put(kUpstream, UpstreamYaml(8081));
  fixture_->Put(kService, kServiceYaml);
  StartSource();
  EXPECT_TRUE(Eventually([](const Snapshot* snapshot, const StatusMap& statuses) {
    return absl::StrContains(ClusterLoad(snapshot), "port_value: 8081") &&
           StateOf(statuses, kUpstream) == StatusState::kAccepted &&
           StateOf(statuses, kService) == StatusState::kAccepted;
  }));
  EXPECT_TRUE(source_->health().synced_once);
  EXPECT_TRUE(source_->health().connected);
}

TEST_P(ConfigSourceConformance, PublishesChanges) {
  fixture_->Put(kUpstream, UpstreamYaml(8081));
  StartSource();
  ASSERT_TRUE(Eventually([](const Snapshot* snapshot, const StatusMap&) {
    return absl::StrContains(ClusterLoad(snapshot), "port_value: 8081");
  }));
  fixture_->Put(kUpstream, UpstreamYaml(9091));
  EXPECT_TRUE(Eventually([](const Snapshot* snapshot, const StatusMap&) {
    return absl::StrContains(ClusterLoad(snapshot), "port_value: 9091");
  }));
}

// A RolloutPolicy object reaches the snapshot as a policy it carries (no
// resource), and goes with the object.
TEST_P(ConfigSourceConformance, CarriesRolloutPoliciesInTheSnapshot) {
  const ObjectKey policy{"RolloutPolicy", "shop", "edge"};
  fixture_->Put(kUpstream, UpstreamYaml(8081));
  fixture_->Put(policy, R"(apiVersion: holdfast.dev/v1
kind: RolloutPolicy
metadata: {name: edge, namespace: shop}
spec:
  nodeGroup: edge
  canaries: {percent: 5}
  bake: 2m
)");
  StartSource();
  EXPECT_TRUE(Eventually([&](const Snapshot* snapshot, const StatusMap& statuses) {
    return snapshot != nullptr && snapshot->rollouts().groups.contains("edge") &&
           snapshot->rollouts().groups.at("edge").canary_percent == 5 &&
           snapshot->rollouts().groups.at("edge").bake == absl::Minutes(2) &&
           StateOf(statuses, policy) == StatusState::kAccepted;
  }));
  fixture_->Remove(policy);
  EXPECT_TRUE(Eventually([](const Snapshot* snapshot, const StatusMap&) {
    return snapshot != nullptr && snapshot->rollouts().empty() &&
           absl::StrContains(ClusterLoad(snapshot), "port_value: 8081");
  }));
}

TEST_P(ConfigSourceConformance, InvalidChangeIsRejectedAndLastGoodKept) {
  if (!fixture_->StoresAnyText()) {
    GTEST_SKIP() << "the store's schema refuses a port of 70000 itself; "
                    "ValueTheStoreAdmitsButTheDecoderRejects covers this store";
  }
  fixture_->Put(kUpstream, UpstreamYaml(8081));
  StartSource();
  ASSERT_TRUE(Eventually([](const Snapshot* snapshot, const StatusMap&) {
    return absl::StrContains(ClusterLoad(snapshot), "port_value: 8081");
  }));
  fixture_->Put(kUpstream, UpstreamYaml(70000));  // not a port
  ASSERT_TRUE(Eventually([](const Snapshot*, const StatusMap& statuses) {
    return StateOf(statuses, kUpstream) == StatusState::kRejected;
  }));
  const ObjectStatus status = source_->statuses().at(kUpstream);
  EXPECT_TRUE(status.serving_last_good);
  ASSERT_FALSE(status.reasons.empty());
  EXPECT_EQ(status.reasons[0].path, "spec.hosts[0].port");
  EXPECT_EQ(status.reasons[0].location.file, fixture_->LocationOf(kUpstream));
  EXPECT_GT(status.reasons[0].location.line, 0);
  absl::MutexLock lock(&mu_);
  EXPECT_TRUE(absl::StrContains(ClusterLoad(latest_.get()), "port_value: 8081"));
}

TEST_P(ConfigSourceConformance, UnparsableTextIsRejectedWithItsLocation) {
  if (!fixture_->StoresAnyText()) GTEST_SKIP() << "the store only holds structured objects";
  fixture_->Put(kUpstream, UpstreamYaml(8081));
  fixture_->Put(kService, "kind: [unclosed\n");
  StartSource();
  EXPECT_TRUE(Eventually([&](const Snapshot* snapshot, const StatusMap& statuses) {
    bool located = false;
    for (const auto& [key, status] : statuses) {
      if (status.state != StatusState::kRejected) continue;
      for (const FieldError& reason : status.reasons) {
        located |= reason.location.file == fixture_->LocationOf(kService) &&
                   absl::StrContains(reason.message, "YAML");
      }
    }
    return located && absl::StrContains(ClusterLoad(snapshot), "port_value: 8081");
  }));
}

// An invalid regex: no schema can refuse it (CEL cannot test a regex), so
// every store holds it, and holdfast must reject it and keep serving.
TEST_P(ConfigSourceConformance, ValueTheStoreAdmitsButTheDecoderRejects) {
  fixture_->Put(kUpstream, UpstreamYaml(8081));
  fixture_->Put(kService, kServiceYaml);
  StartSource();
  ASSERT_TRUE(Eventually([](const Snapshot*, const StatusMap& statuses) {
    return StateOf(statuses, kService) == StatusState::kAccepted;
  }));
  fixture_->Put(kService, absl::StrReplaceAll(kServiceYaml, {{"{prefix: /}", "{regex: '(x'}"}}));
  ASSERT_TRUE(Eventually([](const Snapshot*, const StatusMap& statuses) {
    return StateOf(statuses, kService) == StatusState::kRejected;
  }));
  const ObjectStatus status = source_->statuses().at(kService);
  EXPECT_TRUE(status.serving_last_good);
  ASSERT_FALSE(status.reasons.empty());
  EXPECT_EQ(status.reasons[0].path, "spec.routes[0].match.regex");
  EXPECT_EQ(status.reasons[0].location.file, fixture_->LocationOf(kService));
  if (fixture_->HasLines()) EXPECT_GT(status.reasons[0].location.line, 0);
  EXPECT_EQ(StateOf(source_->statuses(), kUpstream), StatusState::kAccepted);
  absl::MutexLock lock(&mu_);
  EXPECT_TRUE(absl::StrContains(ClusterLoad(latest_.get()), "port_value: 8081"));
}

TEST_P(ConfigSourceConformance, RemovedObjectIsWithdrawn) {
  fixture_->Put(kUpstream, UpstreamYaml(8081));
  StartSource();
  ASSERT_TRUE(Eventually([](const Snapshot* snapshot, const StatusMap&) {
    return absl::StrContains(ClusterLoad(snapshot), "port_value: 8081");
  }));
  fixture_->Remove(kUpstream);
  EXPECT_TRUE(Eventually([](const Snapshot* snapshot, const StatusMap& statuses) {
    return snapshot != nullptr && ClusterLoad(snapshot).empty() && !statuses.contains(kUpstream);
  }));
}

TEST_P(ConfigSourceConformance, AStatusOverlayIsReportedAndListenedToUntilLifted) {
  fixture_->Put(kUpstream, UpstreamYaml(8081));
  fixture_->Put(kService, kServiceYaml);
  StartSource();
  // The statuses are set just before the snapshot is published: wait for
  // both, so that the count below starts after the first publication.
  ASSERT_TRUE(Eventually([](const Snapshot* snapshot, const StatusMap& statuses) {
    return snapshot != nullptr && StateOf(statuses, kUpstream) == StatusState::kAccepted &&
           StateOf(statuses, kService) == StatusState::kAccepted;
  }));
  const ObjectKey gone{"Upstream", "shop", "gone"};
  StatusMap overlay;
  for (const ObjectKey& key : {kUpstream, gone}) {
    overlay[key].key = key;
    overlay[key].Reject("", "held by the staged rollout: a test");
    overlay[key].serving_last_good = true;
  }
  int published;
  {
    absl::MutexLock lock(&mu_);
    published = published_;
  }
  source_->SetStatusOverlay(overlay);
  auto held = [](const StatusMap& statuses) {
    auto it = statuses.find(kUpstream);
    return it != statuses.end() && it->second.state == StatusState::kRejected &&
           it->second.serving_last_good && it->second.reasons.size() == 1 &&
           it->second.reasons[0].message == "held by the staged rollout: a test";
  };
  EXPECT_TRUE(Eventually([&](const Snapshot*, const StatusMap& statuses) {
    absl::MutexLock lock(&mu_);
    return held(statuses) && held(listened_);
  }));
  StatusMap statuses = source_->statuses();
  EXPECT_EQ(StateOf(statuses, kService), StatusState::kAccepted) << "others untouched";
  EXPECT_FALSE(statuses.contains(gone)) << "an overlay adds no object";
  {
    absl::MutexLock lock(&mu_);
    EXPECT_EQ(published_, published) << "statuses only: nothing new to publish";
  }
  source_->SetStatusOverlay({});
  EXPECT_TRUE(Eventually([&](const Snapshot*, const StatusMap& statuses) {
    absl::MutexLock lock(&mu_);
    return StateOf(statuses, kUpstream) == StatusState::kAccepted &&
           StateOf(listened_, kUpstream) == StatusState::kAccepted;
  }));
}

INSTANTIATE_TEST_SUITE_P(
    Sources, ConfigSourceConformance,
    ::testing::Values([] { return std::unique_ptr<SourceFixture>(new DirectoryFixture()); },
                      [] { return std::unique_ptr<SourceFixture>(new EtcdFixture()); },
                      [] { return std::unique_ptr<SourceFixture>(new FakeEtcdFixture()); }),
    [](const ::testing::TestParamInfo<ConfigSourceConformance::ParamType>& info) {
      return std::string(info.index == 0 ? "Directory" : info.index == 1 ? "Etcd" : "FakeEtcd");
    });

// Only with an API server to run against (see the top of this file).
INSTANTIATE_TEST_SUITE_P(
    Kube, ConfigSourceConformance,
    ::testing::ValuesIn(std::getenv("HOLDFAST_TEST_KUBECONFIG")
                            ? std::vector<std::function<std::unique_ptr<SourceFixture>()>>{[] {
                                return std::unique_ptr<SourceFixture>(new KubernetesFixture());
                              }}
                            : std::vector<std::function<std::unique_ptr<SourceFixture>()>>{}),
    [](const ::testing::TestParamInfo<ConfigSourceConformance::ParamType>&) {
      return std::string("Kubernetes");
    });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ConfigSourceConformance);

}  // namespace
}  // namespace holdfast
