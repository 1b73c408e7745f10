// EtcdConfigSource over FakeKeyValueStore: what takes a store failure to see
// (the conformance suite covers the rest, over the fake and real etcd).
#include "src/source/etcd_config_source.h"

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"
#include "src/etcd/fake_key_value_store.h"

namespace holdfast {
namespace {

const ObjectKey kApi{"Upstream", "shop", "api"};
const ObjectKey kOld{"Upstream", "shop", "old"};
const ObjectKey kFresh{"Upstream", "shop", "fresh"};

std::string UpstreamYaml(const std::string& name, int port) {
  return absl::StrCat("apiVersion: holdfast.dev/v1\nkind: Upstream\n", "metadata: {name: ", name,
                      ", namespace: shop}\n",
                      "spec:\n  hosts:\n  - {address: 127.0.0.1, port: ", port, "}\n");
}

class EtcdConfigSourceTest : public ::testing::Test {
 protected:
  ~EtcdConfigSourceTest() override {
    if (source_) source_->Stop();
  }

  void Put(const ObjectKey& key, int port) {
    store_.Put(ObjectStoreKey("/t", "config", key), UpstreamYaml(key.name, port));
  }

  void Start() {
    EtcdConfigSource::Options options;
    options.prefix = "/t";
    // Retries come quickly: the backoff waits on the wall clock.
    options.min_backoff = absl::Milliseconds(5);
    options.max_backoff = absl::Milliseconds(20);
    source_ = std::make_unique<EtcdConfigSource>(
        options, &store_, clock_, &metrics_, [this](SnapshotPtr snapshot) {
          absl::MutexLock lock(&mu_);
          if (published_ > 0 && ApiPort(snapshot.get()) == 0) {
            withdrawn_ = true;
          }
          latest_ = std::move(snapshot);
          ++published_;
        });
    source_->Start();
  }

  // Waits (a bounded while, for the source's threads) until `condition`.
  static bool Eventually(const std::function<bool()>& condition) {
    for (int i = 0; i < 2000; ++i) {
      if (condition()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return condition();
  }

  // The port served for shop/api, 0 when none.
  static int ApiPort(const Snapshot* snapshot) {
    if (snapshot == nullptr) return 0;
    const auto& endpoints =
        snapshot->Resources("type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment");
    auto it = endpoints.find("shop/api");
    if (it == endpoints.end() || it->second->message() == nullptr) return 0;
    std::string text = it->second->message()->ShortDebugString();
    size_t at = text.find("port_value: ");
    return at == std::string::npos ? 0 : std::atoi(text.c_str() + at + 12);
  }
  int LatestApiPort() {
    absl::MutexLock lock(&mu_);
    return ApiPort(latest_.get());
  }
  int published() {
    absl::MutexLock lock(&mu_);
    return published_;
  }
  bool withdrawn() {
    absl::MutexLock lock(&mu_);
    return withdrawn_;
  }
  bool Accepted(const ObjectKey& key) {
    StatusMap statuses = source_->statuses();
    auto it = statuses.find(key);
    return it != statuses.end() && it->second.state == StatusState::kAccepted;
  }
  uint64_t Relists() { return metrics_.GetCounter("holdfast_source_relists_total", "")->value(); }

  SimulatedClock clock_;
  FakeKeyValueStore store_{clock_};
  MetricsRegistry metrics_;
  std::unique_ptr<EtcdConfigSource> source_;
  absl::Mutex mu_;
  SnapshotPtr latest_ ABSL_GUARDED_BY(mu_);
  int published_ ABSL_GUARDED_BY(mu_) = 0;
  bool withdrawn_ ABSL_GUARDED_BY(mu_) = false;  // a snapshot after the first lacked shop/api
};

TEST_F(EtcdConfigSourceTest, StoreDownKeepsTheLastGoodConfigThenResumesWithoutRelisting) {
  Put(kApi, 8081);
  Start();
  ASSERT_TRUE(Eventually([&] { return LatestApiPort() == 8081 && Accepted(kApi); }));
  ASSERT_TRUE(source_->health().connected);
  EXPECT_EQ(Relists(), 1u);

  const absl::Time down_at = clock_.Now();
  store_.SetUnavailable(true);
  ASSERT_TRUE(Eventually([&] { return !source_->health().connected; }));
  clock_.Advance(absl::Seconds(30));
  SourceHealth health = source_->health();
  EXPECT_FALSE(health.connected);
  EXPECT_TRUE(health.synced_once);
  EXPECT_EQ(health.disconnected_since, down_at);
  EXPECT_TRUE(absl::StrContains(health.last_error, "unavailable")) << health.last_error;
  // Another client writes while this replica cannot reach the store.
  int published_before = published();
  Put(kApi, 9091);
  // Retries fail meanwhile; what was served stays served, statuses too.
  ASSERT_TRUE(Eventually(
      [&] { return metrics_.GetCounter("holdfast_store_errors_total", "")->value() >= 3; }));
  EXPECT_EQ(LatestApiPort(), 8081);
  EXPECT_EQ(published(), published_before);
  EXPECT_TRUE(Accepted(kApi));

  store_.SetUnavailable(false);
  // The watch resumes after the last revision seen: the write made while
  // down arrives, without listing everything again.
  ASSERT_TRUE(Eventually([&] { return LatestApiPort() == 9091; }));
  EXPECT_TRUE(source_->health().connected);
  EXPECT_EQ(Relists(), 1u);
  EXPECT_FALSE(withdrawn());
}

TEST_F(EtcdConfigSourceTest, CompactionWhileDisconnectedRelistsAndReplacesTheSet) {
  Put(kApi, 8081);
  Put(kOld, 8082);
  Start();
  ASSERT_TRUE(Eventually([&] { return LatestApiPort() == 8081 && Accepted(kOld); }));

  store_.SetUnavailable(true);
  ASSERT_TRUE(Eventually([&] { return !source_->health().connected; }));
  store_.Delete(ObjectStoreKey("/t", "config", kOld));
  Put(kFresh, 8083);
  Put(kApi, 9091);
  // The revisions the source would resume from are gone.
  store_.Compact(store_.revision());

  store_.SetUnavailable(false);
  ASSERT_TRUE(Eventually([&] {
    return LatestApiPort() == 9091 && Accepted(kFresh) && !source_->statuses().contains(kOld);
  }));
  EXPECT_EQ(Relists(), 2u);
  EXPECT_TRUE(source_->health().connected);
  EXPECT_TRUE(Eventually([&] { return source_->health().revision == store_.revision(); }));
  EXPECT_FALSE(withdrawn());
}

// The source applies watched changes key by key: after each (puts of valid,
// invalid and unparsable values, a value naming another object, a key that
// names none, deletes), its statuses are what a source listing the store
// for the first time reports, and while every value is valid it publishes
// the same snapshot.
TEST_F(EtcdConfigSourceTest, EachWatchedChangeGivesWhatAFirstListingGives) {
  const std::vector<std::string> keys = {ObjectStoreKey("/t", "config", kApi),
                                         ObjectStoreKey("/t", "config", kOld),
                                         ObjectStoreKey("/t", "config", kFresh), "/t/config/bad"};
  const std::vector<std::string> values = {
      UpstreamYaml("NAME", 8081), UpstreamYaml("NAME", 8082), UpstreamYaml("NAME", 70000),
      UpstreamYaml("other", 8083), "spec: [unclosed\n"};
  std::map<std::string, int> held;  // value index by key
  auto describe = [](const EtcdConfigSource& source) {
    std::string out;
    for (const auto& [key, status] : source.statuses()) {
      absl::StrAppend(&out, key.ToString(), " ", StatusStateName(status.state), ":",
                      status.reasons.empty() ? "" : status.reasons.front().message, "\n");
    }
    return out;
  };
  Start();
  std::mt19937 random(5);
  for (int step = 0; step < 40; ++step) {
    const std::string& key = keys[random() % keys.size()];
    const size_t choice = random() % (values.size() + 1);
    if (choice == values.size()) {
      store_.Delete(key);
      held.erase(key);
    } else {
      const std::string name = key.substr(key.rfind('/') + 1);
      store_.Put(key, absl::StrReplaceAll(values[choice], {{"NAME", name}}));
      held[key] = static_cast<int>(choice);
    }
    EtcdConfigSource::Options options;
    options.prefix = "/t";
    MetricsRegistry metrics;
    SnapshotPtr fresh_latest;
    absl::Mutex fresh_mu;
    EtcdConfigSource fresh(options, &store_, clock_, &metrics, [&](SnapshotPtr snapshot) {
      absl::MutexLock lock(&fresh_mu);
      fresh_latest = std::move(snapshot);
    });
    fresh.Start();
    ASSERT_TRUE(Eventually([&] {
      return fresh.health().revision == store_.revision() &&
             source_->health().revision == store_.revision() &&
             describe(*source_) == describe(fresh);
    })) << "at step " << step << ":\n" << describe(*source_) << "against\n" << describe(fresh);
    const bool all_valid = std::all_of(held.begin(), held.end(), [&](const auto& entry) {
      return entry.first != keys.back() && entry.second < 2;
    });
    if (all_valid && !held.empty()) {
      absl::MutexLock lock(&mu_);
      absl::MutexLock fresh_lock(&fresh_mu);
      ASSERT_NE(fresh_latest, nullptr);
      EXPECT_EQ(latest_->version(), fresh_latest->version()) << "at step " << step;
    }
    fresh.Stop();
  }
}

}  // namespace
}  // namespace holdfast
