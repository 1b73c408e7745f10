#include "src/source/directory_scanner.h"

#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"
#include "src/source/config_files.h"
#include "src/source/directory_config_source.h"
#include "src/source/xds_directory.h"

namespace holdfast {
namespace {

namespace fs = std::filesystem;

class ScanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir_template[] = "/tmp/holdfast-scan-XXXXXX";
    root_ = mkdtemp(dir_template);
    fs::create_directories(root_ / "config");
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(root_ / "config" / "locked", fs::perms::owner_all, ec);
    fs::remove_all(root_);
  }
  fs::path config() const { return root_ / "config"; }
  void Write(const fs::path& path, const std::string& text) {
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }

  fs::path root_;
};

// Runs `f` on a thread without the capabilities that let root read any
// directory (capabilities are per thread), so mode 000 means unreadable
// whoever runs the test.
template <typename F>
void WithoutDacOverride(F f) {
  std::thread([&] {
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2] = {};
    ASSERT_EQ(syscall(SYS_capget, &header, data), 0);
    for (int cap : {CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH}) data[0].effective &= ~(1u << cap);
    ASSERT_EQ(syscall(SYS_capset, &header, data), 0);
    f();
  }).join();
}

TEST_F(ScanTest, AnUnreadableSubdirectoryIsReportedNotTakenAsEmpty) {
  Write(config() / "a.yaml", "a");
  Write(config() / "locked" / "b.yaml", "b");
  fs::permissions(config() / "locked", fs::perms::none);
  WithoutDacOverride([&] {
    absl::StatusOr<DirectoryListing> listing = ScanDirectory(config().string(), {".yaml"});
    ASSERT_TRUE(listing.ok()) << listing.status();
    EXPECT_EQ(listing->files.size(), 1u);
    ASSERT_EQ(listing->unreadable.size(), 1u);
    EXPECT_EQ(listing->unreadable.begin()->first, (config() / "locked").string());
    EXPECT_TRUE(absl::StrContains(listing->unreadable.begin()->second, "Permission denied"));
  });
}

TEST_F(ScanTest, AnUnreadableRootFails) {
  fs::permissions(config(), fs::perms::none);
  WithoutDacOverride([&] { EXPECT_FALSE(ScanDirectory(config().string(), {".yaml"}).ok()); });
  fs::permissions(config(), fs::perms::owner_all);
}

TEST_F(ScanTest, SymlinkLoopsAreListedOnceAndLinksOutOfTheTreeAreSkipped) {
  Write(config() / "a.yaml", "a");
  Write(config() / "sub" / "b.yaml", "b");
  fs::create_directory_symlink("..", config() / "sub" / "loop");
  fs::create_directory_symlink(config(), config() / "self");
  Write(root_ / "outside" / "secret.yaml", "s");
  fs::create_directory_symlink(root_ / "outside", config() / "escape");
  fs::create_symlink(root_ / "outside" / "secret.yaml", config() / "escape.yaml");

  absl::StatusOr<DirectoryListing> listing = ScanDirectory(config().string(), {".yaml"});
  ASSERT_TRUE(listing.ok()) << listing.status();
  std::vector<std::string> names;
  for (const auto& [path, fingerprint] : listing->files) names.push_back(path);
  EXPECT_EQ(names, (std::vector<std::string>{(config() / "a.yaml").string(),
                                             (config() / "sub" / "b.yaml").string()}));
  EXPECT_EQ(listing->skipped.size(), 2u);
  EXPECT_TRUE(listing->skipped.contains((config() / "escape").string()));
  EXPECT_TRUE(listing->skipped.contains((config() / "escape.yaml").string()));
}

// Kubernetes mounts a ConfigMap as links through hidden directories.
TEST_F(ScanTest, ConfigMapStyleLinksInsideTheTreeAreFollowed) {
  Write(config() / "..2026_12_01" / "gw.yaml", "g");
  fs::create_directory_symlink("..2026_12_01", config() / "..data");
  fs::create_symlink("..data/gw.yaml", config() / "gw.yaml");
  absl::StatusOr<DirectoryListing> listing = ScanDirectory(config().string(), {".yaml"});
  ASSERT_TRUE(listing.ok());
  ASSERT_EQ(listing->files.size(), 1u);
  EXPECT_EQ(listing->files.begin()->first, (config() / "gw.yaml").string());
}

TEST_F(ScanTest, ReadWholeFileRefusesFifosAndLargeFilesWithoutReadingThem) {
  ASSERT_EQ(mkfifo((root_ / "fifo.yaml").c_str(), 0600), 0);
  absl::StatusOr<std::string> fifo = ReadWholeFile((root_ / "fifo.yaml").string());
  EXPECT_TRUE(absl::StrContains(fifo.status().message(), "not a regular file")) << fifo.status();
  Write(root_ / "big.yaml", std::string(1001, 'x'));
  EXPECT_EQ(ReadWholeFile((root_ / "big.yaml").string(), 1000).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(*ReadWholeFile((root_ / "big.yaml").string(), 1001), std::string(1001, 'x'));
  EXPECT_FALSE(ReadWholeFile("/dev/zero").ok());
}

constexpr char kUpstream[] = R"(apiVersion: holdfast.dev/v1
kind: Upstream
metadata: {name: api, namespace: shop}
spec:
  hosts: [{address: 10.0.0.%d, port: 80}]
)";

std::string UpstreamAt(int host) {
  char text[256];
  std::snprintf(text, sizeof(text), kUpstream, host);
  return text;
}

TEST(AssembleInputTest, AnObjectDefinedTwiceIsRejectedNamingBothPlaces) {
  std::map<std::string, DecodedFile> files = {{"a.yaml", DecodeObjects(UpstreamAt(1), "a.yaml")},
                                              {"b.yaml", DecodeObjects(UpstreamAt(2), "b.yaml")}};
  StatusMap file_statuses;
  TranslationInput input = AssembleInput(files, {}, &file_statuses);
  const ObjectKey key{"Upstream", "shop", "api"};
  EXPECT_FALSE(input.objects.contains(key)) << "neither definition silently wins";
  ASSERT_TRUE(input.invalid.contains(key));
  const std::string& message = input.invalid.at(key).front().message;
  EXPECT_TRUE(absl::StrContains(message, "a.yaml:1")) << message;
  EXPECT_TRUE(absl::StrContains(message, "b.yaml:1")) << message;
}

// What a source that follows edits publishes after each (files added,
// rewritten, emptied, removed) is what a source reading the directory for
// the first time publishes; a file that stops parsing serves what it held.
TEST_F(ScanTest, EachReloadPublishesWhatAFirstReadPublishes) {
  auto upstream = [](int file, const std::string& name, int port) {
    return absl::StrReplaceAll(UpstreamAt(port % 250),
                               {{"name: api", absl::StrCat("name: f", file, "-", name)}});
  };
  auto write = [&](int file, const std::string& text) {  // a new inode: always a change
    const fs::path path = config() / (file == 2 ? "sub" : "") / absl::StrCat("f", file, ".yaml");
    Write(path.string() + ".tmp", text);
    fs::rename(path.string() + ".tmp", path);
  };
  auto served = [&](DirectoryConfigSource& source, std::vector<SnapshotPtr>& published) {
    EXPECT_TRUE(source.Reload().ok());
    std::string statuses;
    for (const auto& [key, status] : source.statuses()) {
      absl::StrAppend(&statuses, key.ToString(), " ", StatusStateName(status.state), "\n");
    }
    return absl::StrCat(published.empty() ? "none" : published.back()->version(), "\n", statuses);
  };
  MetricsRegistry metrics;
  std::vector<SnapshotPtr> published;
  DirectoryConfigSource source({.directory = config().string()}, Clock::Real(), &metrics,
                               [&](SnapshotPtr s) { published.push_back(s); });
  std::mt19937 random(11);
  for (int step = 0; step < 60; ++step) {
    const int file = random() % 3;
    switch (random() % 6) {
      case 0: write(file, ""); break;
      case 1: write(file, upstream(file, "a", 80)); break;
      case 2: write(file, upstream(file, "a", 81)); break;
      case 3: write(file, upstream(file, "a", 80) + "---\n" + upstream(file, "b", 82)); break;
      case 4: write(file, upstream(file, "b", 80)); break;
      default: fs::remove(config() / (file == 2 ? "sub" : "") / absl::StrCat("f", file, ".yaml"));
    }
    const std::string followed = served(source, published);
    std::vector<SnapshotPtr> fresh_published;
    DirectoryConfigSource fresh({.directory = config().string()}, Clock::Real(), &metrics,
                                [&](SnapshotPtr s) { fresh_published.push_back(s); });
    ASSERT_EQ(followed, served(fresh, fresh_published)) << "at step " << step;
    if (step % 10 != 9 || !fs::exists(config() / "f0.yaml")) continue;
    // A syntax error: what the file held stays in service until it parses.
    write(0, "spec: [unclosed\n");
    const std::string before = published.back()->version();
    served(source, published);
    EXPECT_EQ(published.back()->version(), before) << "at step " << step;
    const ObjectKey file_key{kFileKind, "", (config() / "f0.yaml").string()};
    ASSERT_TRUE(source.statuses().contains(file_key));
    EXPECT_TRUE(source.statuses().at(file_key).serving_last_good);
    write(0, upstream(0, "b", 81));  // fixed: compared at the next step
  }
}

// At start every file is read, on several threads when there are many:
// what is published is what reading them one by one publishes.
TEST_F(ScanTest, ManyFilesReadOnSeveralThreadsPublishWhatOneThreadDoes) {
  for (int i = 0; i < 150; ++i) {
    const std::string text =
        i == 7 ? "spec: [unclosed\n"
               : absl::StrReplaceAll(UpstreamAt(i % 250 + 1),
                                     {{"name: api", absl::StrCat("name: u", i % 140)}});
    Write(config() / absl::StrCat("d", i % 5) / absl::StrCat("f", i, ".yaml"), text);
  }
  auto read = [&](int threads) {
    MetricsRegistry metrics;
    std::vector<SnapshotPtr> published;
    DirectoryConfigSource source(
        {.directory = config().string(), .translator = TranslatorOptions{.threads = threads}},
        Clock::Real(), &metrics, [&](SnapshotPtr s) { published.push_back(s); });
    EXPECT_TRUE(source.Reload().ok());
    std::string out = published.empty() ? "none" : published.back()->version();
    for (const auto& [key, status] : source.statuses()) {
      absl::StrAppend(&out, "\n", key.ToString(), " ", StatusStateName(status.state));
    }
    return out;
  };
  const std::string one_by_one = read(1);
  EXPECT_TRUE(absl::StrContains(one_by_one, "f7.yaml Rejected")) << one_by_one;
  EXPECT_TRUE(absl::StrContains(one_by_one, "Upstream shop/u3 Rejected")) << "defined twice";
  EXPECT_TRUE(absl::StrContains(one_by_one, "Upstream shop/u139 Accepted"));
  EXPECT_EQ(read(4), one_by_one);
}

TEST_F(ScanTest, SourceKeepsServingWhatAnUnreadableDirectoryHeld) {
  Write(config() / "locked" / "api.yaml", UpstreamAt(1));
  std::vector<SnapshotPtr> published;
  MetricsRegistry metrics;
  DirectoryConfigSource source({.directory = config().string()}, Clock::Real(), &metrics,
                               [&](SnapshotPtr s) { published.push_back(s); });
  ASSERT_TRUE(source.Reload().ok());
  ASSERT_EQ(published.size(), 1u);
  const size_t served = published.back()->size();
  EXPECT_GT(served, 0u);

  fs::permissions(config() / "locked", fs::perms::none);
  Write(config() / "other.yaml", absl::StrReplaceAll(UpstreamAt(2), {{"name: api", "name: web"}}));
  WithoutDacOverride([&] { ASSERT_TRUE(source.Reload().ok()); });
  ASSERT_EQ(published.size(), 2u) << "the readable change is served";
  EXPECT_EQ(published.back()->size(), 2 * served) << "and nothing is withdrawn";
  StatusMap statuses = source.statuses();
  const ObjectKey dir_key{kFileKind, "", (config() / "locked").string()};
  ASSERT_TRUE(statuses.contains(dir_key));
  EXPECT_EQ(statuses.at(dir_key).state, StatusState::kRejected);
  EXPECT_TRUE(statuses.at(dir_key).serving_last_good);
}

// The same for raw Envoy resources (--xds-dir): an unreadable directory's
// files stay in the source's file map while the rest of the tree changes.
TEST_F(ScanTest, XdsSourceKeepsServingWhatAnUnreadableDirectoryHeld) {
  auto cluster = [](const std::string& name) {
    return absl::StrReplaceAll(R"("@type": type.googleapis.com/envoy.config.cluster.v3.Cluster
name: NAME
type: STATIC
connect_timeout: 1s
load_assignment:
  cluster_name: NAME
  endpoints:
  - lb_endpoints:
    - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 8080}}}
)",
                               {{"NAME", name}});
  };
  Write(config() / "a.yaml", cluster("a"));
  Write(config() / "locked" / "b.yaml", cluster("b"));
  Write(config() / "z.yaml", cluster("z"));
  std::vector<SnapshotPtr> published;
  MetricsRegistry metrics;
  XdsDirectorySource source({.directory = config().string()}, Clock::Real(), &metrics,
                            [&](SnapshotPtr s) { published.push_back(s); });
  ASSERT_TRUE(source.Reload().ok());
  ASSERT_EQ(published.size(), 1u);
  EXPECT_EQ(published.back()->size(), 3u);

  fs::permissions(config() / "locked", fs::perms::none);
  fs::remove(config() / "a.yaml");
  Write(config() / "c.yaml", cluster("c"));
  WithoutDacOverride([&] { ASSERT_TRUE(source.Reload().ok()); });
  ASSERT_EQ(published.size(), 2u);
  const Snapshot& now = *published.back();
  EXPECT_EQ(now.size(), 3u) << "a gone, c added, b kept";
  const ResourceMap& clusters = now.Resources(type_url::kCluster);
  EXPECT_TRUE(clusters.find("b") != clusters.end()) << "unknown is not gone";
  EXPECT_TRUE(clusters.find("a") == clusters.end()) << "a removed file is gone";
  bool reported = false;
  for (const Rejection& r : source.rejections()) {
    reported |= r.file == (config() / "locked").string() && r.serving_last_good;
  }
  EXPECT_TRUE(reported);
}

}  // namespace
}  // namespace holdfast
