#include "src/source/directory_watch.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "src/source/directory_scanner.h"

namespace holdfast {
namespace {

namespace fs = std::filesystem;

fs::path FreshDir(const std::string& name) {
  const fs::path dir = fs::path(::testing::TempDir()) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Watches a directory and keeps every report, merged. Waits are for the
// reports, bounded only so that a broken watch fails.
class WatchRecorder {
 public:
  absl::Status Start(const std::string& directory) {
    return watch_.Start(directory, [this](DirectoryChanges changes) {
      absl::MutexLock lock(&mu_);
      ++reports_;
      seen_.Merge(std::move(changes));
    });
  }
  // Waits for a report after the `after`th; whether one came.
  bool WaitForReport(int after) {
    absl::MutexLock lock(&mu_);
    auto more = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return reports_ > after; };
    return mu_.AwaitWithTimeout(absl::Condition(&more), absl::Seconds(10));
  }
  // Waits until the merged reports satisfy `done`; whether they did.
  bool WaitUntil(const std::function<bool(const DirectoryChanges&)>& done) {
    absl::MutexLock lock(&mu_);
    auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return done(seen_); };
    return mu_.AwaitWithTimeout(absl::Condition(&ready), absl::Seconds(10));
  }
  int reports() {
    absl::MutexLock lock(&mu_);
    return reports_;
  }
  DirectoryChanges Take() {
    absl::MutexLock lock(&mu_);
    return std::exchange(seen_, DirectoryChanges{});
  }
  void Stop() { watch_.Stop(); }

 private:
  absl::Mutex mu_;
  int reports_ ABSL_GUARDED_BY(mu_) = 0;
  DirectoryChanges seen_ ABSL_GUARDED_BY(mu_);
  DirectoryWatch watch_;
};

// The watch reports files written, also in a directory made after it
// started.
TEST(DirectoryWatchTest, ReportsChangesInNewSubdirectories) {
  const fs::path dir = FreshDir("watched");
  WatchRecorder watch;
  ASSERT_TRUE(watch.Start(dir.string()).ok());

  int seen = watch.reports();
  std::ofstream(dir / "a.yaml") << "x";
  EXPECT_TRUE(watch.WaitForReport(seen)) << "file written";

  // A new directory is watched before its creation is reported.
  seen = watch.reports();
  fs::create_directories(dir / "sub");
  EXPECT_TRUE(watch.WaitForReport(seen)) << "directory made";
  seen = watch.reports();
  std::ofstream(dir / "sub" / "b.yaml") << "y";
  EXPECT_TRUE(watch.WaitForReport(seen)) << "file written in the new directory";
  watch.Stop();
}

// The paths a report names are the listing's own keys (so a listing can be
// patched with them), however the directory was spelled; a directory made,
// or the watched directory's own change, cannot be told by name.
TEST(DirectoryWatchTest, NamesEntriesAsTheListingDoes) {
  for (const std::string suffix : {"", "/"}) {
    SCOPED_TRACE("directory spelled with \"" + suffix + "\" at the end");
    const fs::path dir = FreshDir("named");
    fs::create_directories(dir / "sub");
    const std::string root = dir.string() + suffix;
    WatchRecorder watch;
    ASSERT_TRUE(watch.Start(root).ok());

    std::ofstream(dir / "a.yaml") << "a";
    std::ofstream(dir / "sub" / ".c.yaml.tmp") << "c";
    fs::rename(dir / "sub" / ".c.yaml.tmp", dir / "sub" / "c.yaml");
    absl::StatusOr<DirectoryListing> listing = ScanDirectory(root, {".yaml"});
    ASSERT_TRUE(listing.ok());
    ASSERT_EQ(listing->files.size(), 2u);
    auto names_every_file = [&](const DirectoryChanges& changes) {
      if (!changes.paths.has_value()) return true;  // fails below
      for (const auto& [path, fingerprint] : listing->files) {
        if (!changes.paths->contains(path)) return false;
      }
      return true;
    };
    ASSERT_TRUE(watch.WaitUntil(names_every_file));
    DirectoryChanges changes = watch.Take();
    EXPECT_TRUE(changes.any);
    ASSERT_TRUE(changes.paths.has_value()) << "files written and renamed are told by name";

    fs::create_directories(dir / "new");
    ASSERT_TRUE(watch.WaitUntil([](const DirectoryChanges& c) { return c.any; }));
    EXPECT_FALSE(watch.Take().paths.has_value()) << "a directory made is not told by name";

    // The directory itself changed (its permissions, say): no entry names it.
    fs::permissions(dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
    ASSERT_TRUE(watch.WaitUntil([](const DirectoryChanges& c) { return c.any; }));
    EXPECT_FALSE(watch.Take().paths.has_value()) << "the watched directory's own change";
    watch.Stop();
  }
}

TEST(DirectoryWatchTest, MissingDirectoryIsAnErrorNotACrash) {
  DirectoryWatch watch;
  EXPECT_FALSE(watch.Start("/nonexistent/holdfast-watch", [](DirectoryChanges) {}).ok());
}

}  // namespace
}  // namespace holdfast
