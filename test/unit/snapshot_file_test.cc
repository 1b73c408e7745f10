#include "src/snapshot/snapshot_file.h"

#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/strings/match.h"
#include "envoy/config/route/v3/route.pb.h"
#include "gtest/gtest.h"
#include "src/snapshot/last_known_good.h"
#include "test/unit/test_resources.h"

namespace holdfast {
namespace {
using testing::Chain;

class SnapshotFileTest : public ::testing::Test {
 protected:
  SnapshotFileTest() {
    char dir_template[] = "/tmp/holdfast-state-XXXXXX";
    dir_ = mkdtemp(dir_template);
    path_ = dir_ + "/last-good.snapshot";
  }
  ~SnapshotFileTest() override { std::filesystem::remove_all(dir_); }

  std::string ReadAll() {
    std::ifstream in(path_, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  void WriteAll(const std::string& bytes) { std::ofstream(path_, std::ios::binary) << bytes; }

  std::string dir_;
  std::string path_;
};

TEST_F(SnapshotFileTest, RoundTripKeepsVersionsAndContent) {
  SnapshotPtr original = Chain("a", 8081);
  ASSERT_TRUE(WriteSnapshotFile(*original, path_).ok());
  absl::StatusOr<SnapshotPtr> read = ReadSnapshotFile(path_);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ((*read)->version(), original->version());
  EXPECT_EQ((*read)->size(), original->size());
  EXPECT_EQ(absl::ToUnixMicros((*read)->created()), absl::ToUnixMicros(original->created()));
  for (const std::string& type_url : original->TypeUrls()) {
    EXPECT_EQ((*read)->TypeVersion(type_url), original->TypeVersion(type_url));
  }
  EXPECT_FALSE(std::filesystem::exists(path_ + ".tmp"));
}

// The configuration's rollout policies travel with the snapshot to disk (a
// replica restarted in an outage must still roll out in stages); without
// policies the file is the first format, which every release reads.
TEST_F(SnapshotFileTest, RoundTripKeepsRolloutPoliciesAndWritesTheFirstFormatWithoutThem) {
  ASSERT_TRUE(WriteSnapshotFile(*Chain("a", 8081), path_).ok());
  EXPECT_EQ(ReadAll().substr(8, 4), std::string("\x01\0\0\0", 4));
  ConfiguredRollouts rollouts;
  rollouts.fallback = RolloutPolicy{.metadata_key = "canary",
                                    .metadata_value = "yes",
                                    .bake = absl::Seconds(90),
                                    .origin = "RolloutPolicy ops/all"};
  rollouts.groups["edge"] = {.canary_percent = 7, .ack_timeout = absl::Milliseconds(1500)};
  SnapshotPtr plain = Chain("a", 8081);
  std::vector<ResourcePtr> resources;
  for (const std::string& type_url : plain->TypeUrls()) {
    for (const auto& [name, resource] : plain->Resources(type_url)) resources.push_back(resource);
  }
  SnapshotPtr original = *Snapshot::Build(resources, plain->created(), rollouts);
  ASSERT_TRUE(WriteSnapshotFile(*original, path_).ok());
  EXPECT_EQ(ReadAll().substr(8, 4), std::string("\x02\0\0\0", 4));
  absl::StatusOr<SnapshotPtr> read = ReadSnapshotFile(path_);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ((*read)->rollouts(), rollouts);
  EXPECT_EQ((*read)->version(), original->version());
  EXPECT_NE((*read)->version(), plain->version());
}

// A version given to a resource (a gateway's route configuration is
// versioned by its hosts' digests) cannot be derived from its bytes again:
// the file stores it (format 3), and only then.
TEST_F(SnapshotFileTest, RoundTripKeepsGivenVersionsInTheThirdFormat) {
  SnapshotPtr plain = Chain("a", 8081);
  std::vector<ResourcePtr> resources;
  for (const std::string& type_url : plain->TypeUrls()) {
    for (const auto& [name, resource] : plain->Resources(type_url)) resources.push_back(resource);
  }
  envoy::config::route::v3::RouteConfiguration routes;
  routes.set_name("given");
  routes.add_virtual_hosts()->set_name("host");
  const ResourcePtr given =
      Resource::FromBytes("given", std::string(type_url::kRouteConfiguration),
                          SerializeDeterministic(routes), "0123456789abcdef");
  resources.push_back(given);
  SnapshotPtr original = *Snapshot::Build(resources, plain->created());
  ASSERT_TRUE(WriteSnapshotFile(*original, path_).ok());
  const std::string file = ReadAll();
  EXPECT_EQ(file.substr(8, 4), std::string("\x03\0\0\0", 4));
  absl::StatusOr<SnapshotPtr> read = ReadSnapshotFile(path_);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ((*read)->version(), original->version());
  const ResourceMap& read_routes = (*read)->Resources(type_url::kRouteConfiguration);
  ASSERT_TRUE(read_routes.contains("given"));
  const ResourcePtr back = read_routes.find("given")->second;
  EXPECT_EQ(back->version(), "0123456789abcdef");
  EXPECT_EQ(back->serialized(), given->serialized());
  EXPECT_FALSE(back->version_is_content_digest()) << "written again as given";
  const ResourceMap& clusters = original->Resources(type_url::kCluster);
  for (const auto& [name, resource] : (*read)->Resources(type_url::kCluster)) {
    auto written = clusters.find(name);
    ASSERT_NE(written, clusters.end()) << name;
    EXPECT_EQ(resource->version(), written->second->version());
  }
}

TEST_F(SnapshotFileTest, EveryDamageIsDetected) {
  ASSERT_TRUE(WriteSnapshotFile(*Chain("a", 8081), path_).ok());
  const std::string good = ReadAll();
  struct Case {
    const char* name;
    std::string bytes;
  };
  std::string flipped = good;
  flipped[good.size() - 10] ^= 0x40;
  std::string version = good;
  version[8] = 2;
  std::vector<Case> cases = {
      {"empty", ""},
      {"truncated header", good.substr(0, 20)},
      {"truncated payload", good.substr(0, good.size() - 7)},
      {"flipped payload byte", flipped},
      {"other format version", version},
      {"trailing garbage", good + "xx"},
      {"not ours", std::string(200, 'x')},
  };
  for (const Case& c : cases) {
    WriteAll(c.bytes);
    absl::StatusOr<SnapshotPtr> read = ReadSnapshotFile(path_);
    EXPECT_TRUE(absl::IsDataLoss(read.status())) << c.name << ": " << read.status();
  }
  std::filesystem::remove(path_);
  EXPECT_TRUE(absl::IsNotFound(ReadSnapshotFile(path_).status()));
}

bool Eventually(const std::function<bool()>& condition) {
  for (int i = 0; i < 200 && !condition(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return condition();
}

TEST_F(SnapshotFileTest, PersistedSnapshotIsServedWhenNothingLiveArrivesInTime) {
  SnapshotPtr served_before = Chain("a", 8081);
  ASSERT_TRUE(WriteSnapshotFile(*served_before, path_).ok());
  MetricsRegistry metrics;
  SnapshotCache cache;
  LastKnownGood last_good({.state_dir = dir_, .grace = absl::Milliseconds(50)}, &cache,
                          Clock::Real(), &metrics);
  last_good.Start();
  ASSERT_TRUE(Eventually([&] { return cache.Current(cache.default_group()).snapshot != nullptr; }));
  EXPECT_EQ(cache.Current(cache.default_group()).snapshot->version(), served_before->version());
  EXPECT_TRUE(last_good.state().serving_persisted);

  // Live config replaces it and is persisted in turn.
  SnapshotPtr live = Chain("b", 9091);
  last_good.PublishLive(live);
  EXPECT_FALSE(last_good.state().serving_persisted);
  EXPECT_EQ(cache.Current(cache.default_group()).snapshot->version(), live->version());
  ASSERT_TRUE(Eventually([&] {
    auto read = ReadSnapshotFile(path_);
    return read.ok() && (*read)->version() == live->version();
  }));
  last_good.Stop();
}

TEST_F(SnapshotFileTest, LiveConfigWithinGraceWinsOverAGoodPersistedSnapshot) {
  SnapshotPtr served_before = Chain("a", 8081);
  ASSERT_TRUE(WriteSnapshotFile(*served_before, path_).ok());
  MetricsRegistry metrics;
  SnapshotCache cache;
  LastKnownGood last_good({.state_dir = dir_, .grace = absl::Milliseconds(100)}, &cache,
                          Clock::Real(), &metrics);
  last_good.Start();
  ASSERT_NE(last_good.state().persisted, nullptr);
  SnapshotPtr live = Chain("b", 9091);
  last_good.PublishLive(live);
  ASSERT_TRUE(Eventually([&] { return last_good.state().grace_over; }));
  EXPECT_EQ(cache.Current(cache.default_group()).snapshot->version(), live->version());
  EXPECT_FALSE(last_good.state().serving_persisted);
  EXPECT_TRUE(
      absl::StrContains(metrics.RenderPrometheus(), "holdfast_serving_persisted_snapshot 0"));
  last_good.Stop();
}

TEST_F(SnapshotFileTest, DamagedFileIsNeverServed) {
  WriteAll("HFSNAP01 but not really a snapshot file at all, just damage");
  MetricsRegistry metrics;
  SnapshotCache cache;
  LastKnownGood last_good({.state_dir = dir_, .grace = absl::Milliseconds(50)}, &cache,
                          Clock::Real(), &metrics);
  last_good.Start();
  EXPECT_NE(last_good.state().restore_error.find("damaged"), std::string::npos)
      << last_good.state().restore_error;
  EXPECT_TRUE(std::filesystem::exists(path_ + ".damaged"));
  ASSERT_TRUE(Eventually([&] { return last_good.state().grace_over; }));
  EXPECT_EQ(cache.Current(cache.default_group()).snapshot, nullptr);
  EXPECT_FALSE(last_good.state().serving_persisted);
  last_good.Stop();
}

// A replica stopping right after a publication keeps that publication: the
// next start serves it if the store is down.
TEST_F(SnapshotFileTest, StopWritesTheLatestLiveSnapshotFirst) {
  MetricsRegistry metrics;
  SnapshotCache cache;
  LastKnownGood last_good({.state_dir = dir_, .grace = absl::Seconds(60)}, &cache, Clock::Real(),
                          &metrics);
  last_good.Start();
  last_good.PublishLive(Chain("a", 8081));
  SnapshotPtr latest = Chain("b", 9091);
  last_good.PublishLive(latest);
  last_good.Stop();
  absl::StatusOr<SnapshotPtr> read = ReadSnapshotFile(path_);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ((*read)->version(), latest->version());
  EXPECT_TRUE(last_good.state().persist_error.empty());
}

// Under churn the file is written at most every min_write_interval; the
// latest snapshot still reaches it when the interval ends, or at Stop().
TEST_F(SnapshotFileTest, WritesAreSpacedAndTheLatestStillReachesTheDisk) {
  MetricsRegistry metrics;
  SnapshotCache cache;
  auto written = [&](const LastKnownGood& last_good, const SnapshotPtr& snapshot) {
    auto read = ReadSnapshotFile(path_);
    return last_good.state().written_version == snapshot->version() && read.ok() &&
           (*read)->version() == snapshot->version();
  };
  SnapshotPtr a = Chain("a", 8081);
  SnapshotPtr b = Chain("b", 9091);
  {
    LastKnownGood last_good(
        {.state_dir = dir_, .grace = absl::Seconds(60), .min_write_interval = absl::Seconds(60)},
        &cache, Clock::Real(), &metrics);
    last_good.Start();
    last_good.PublishLive(a);
    ASSERT_TRUE(Eventually([&] { return written(last_good, a); })) << "the first at once";
    last_good.PublishLive(b);
    // Time for a write that should not happen to show.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_TRUE(written(last_good, a)) << "the next one waits for the interval";
    EXPECT_EQ(cache.Current(cache.default_group()).snapshot->version(), b->version())
        << "serving does not wait";
    last_good.Stop();
    EXPECT_TRUE(written(last_good, b)) << "Stop() writes what is pending";
  }
  {
    LastKnownGood last_good({.state_dir = dir_,
                             .grace = absl::Seconds(60),
                             .min_write_interval = absl::Milliseconds(100)},
                            &cache, Clock::Real(), &metrics);
    last_good.Start();
    last_good.PublishLive(a);
    ASSERT_TRUE(Eventually([&] { return written(last_good, a); }));
    last_good.PublishLive(b);
    EXPECT_TRUE(Eventually([&] { return written(last_good, b); })) << "when the interval ends";
    last_good.Stop();
  }
}

}  // namespace
}  // namespace holdfast
