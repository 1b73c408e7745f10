// One suite that every gateway-object source passes: the directory source
// (the embedded default) and the etcd source (against a real etcd server).
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
#include "src/source/config_directory.h"
#include "src/source/config_etcd.h"
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
    ConfigDirectorySource::Options options;
    options.directory = dir_;
    options.poll_interval = absl::Milliseconds(50);
    return std::make_unique<ConfigDirectorySource>(options, Clock::Real(), metrics, publish);
  }

 private:
  std::string dir_;
};

class EtcdFixture : public SourceFixture {
 public:
  EtcdFixture() : client_(server_.Client()) {}
  void Put(const ObjectKey& key, const std::string& text) override {
    ASSERT_TRUE(client_->Put(LocationOf(key), text).ok());
  }
  void Remove(const ObjectKey& key) override { ASSERT_TRUE(client_->Delete(LocationOf(key)).ok()); }
  std::string LocationOf(const ObjectKey& key) const override {
    return ObjectStoreKey("/conformance", "config", key);
  }
  std::unique_ptr<ConfigSource> Make(MetricsRegistry* metrics,
                                     std::function<void(SnapshotPtr)> publish) override {
    EtcdConfigSource::Options options;
    options.prefix = "/conformance";
    return std::make_unique<EtcdConfigSource>(options, client_.get(), Clock::Real(), metrics,
                                              publish);
  }

 private:
  testing::EtcdTestServer server_;
  std::unique_ptr<EtcdClient> client_;
};

const ObjectKey kUpstream{"Upstream", "shop", "api"};
const ObjectKey kService{"VirtualService", "shop", "store"};

std::string UpstreamYaml(int port) {
  return absl::StrCat(R"(apiVersion: holdfast.dev/v1
kind: Upstream
metadata: {name: api, namespace: shop}
spec:
  hosts:
  - {address: 127.0.0.1, port: )", port, "}\n");
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
    const auto& endpoints = snapshot->Resources(
        "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment");
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

TEST_P(ConfigSourceConformance, InvalidChangeIsRejectedAndLastGoodKept) {
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

INSTANTIATE_TEST_SUITE_P(
    Sources, ConfigSourceConformance,
    ::testing::Values([] { return std::unique_ptr<SourceFixture>(new DirectoryFixture()); },
                      [] { return std::unique_ptr<SourceFixture>(new EtcdFixture()); }),
    [](const ::testing::TestParamInfo<ConfigSourceConformance::ParamType>& info) {
      return info.index == 0 ? std::string("Directory") : std::string("Etcd");
    });

}  // namespace
}  // namespace holdfast
