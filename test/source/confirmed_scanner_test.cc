#include "src/source/directory_scanner.h"

#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"

namespace holdfast {
namespace {

// A fresh directory whose files get a new size at every write, so that
// each write changes the listing.
class ScannedDir {
 public:
  explicit ScannedDir(const std::string& name)
      : dir_(std::filesystem::path(::testing::TempDir()) / name) {
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void Write(const std::string& name) { std::ofstream(dir_ / name) << std::string(++writes_, 'x'); }
  // What a watch that saw writes to `names` would report.
  DirectoryChanges Named(std::initializer_list<std::string> names) const {
    DirectoryChanges changes{.any = true};
    for (const std::string& name : names) changes.paths->insert((dir_ / name).string());
    return changes;
  }
  const std::filesystem::path& path() const { return dir_; }
  int writes() const { return writes_; }

 private:
  std::filesystem::path dir_;
  int writes_ = 0;
};

TEST(ConfirmedScannerTest, HandsOverStableListingsAndKeepsUpWithChurn) {
  ScannedDir scanned("scanner");
  const std::filesystem::path& dir = scanned.path();
  auto write = [&](const std::string& name) { scanned.Write(name); };
  write("a.yaml");
  write("b.yaml");
  ConfirmedScanner scanner(dir.string(), {".yaml"}, /*max_unconfirmed_polls=*/3);
  EXPECT_FALSE(scanner.Poll() != nullptr) << "a first listing waits for confirmation";
  EXPECT_TRUE(scanner.confirm_soon());
  auto stable = scanner.Poll();
  ASSERT_TRUE(stable != nullptr);
  EXPECT_EQ(stable->files.size(), 2u);
  EXPECT_FALSE(scanner.confirm_soon());

  // One change is confirmed soon; a listing that changes again is not.
  write("a.yaml");
  EXPECT_FALSE(scanner.Poll() != nullptr);
  EXPECT_TRUE(scanner.confirm_soon());
  write("a.yaml");
  EXPECT_FALSE(scanner.Poll() != nullptr);
  EXPECT_FALSE(scanner.confirm_soon()) << "still changing: back to the poll interval";
  ASSERT_TRUE(scanner.Poll() != nullptr);

  // b changes before every poll: no two listings agree, yet after three
  // polls a listing with the confirmed names is handed over.
  int handed_over = 0;
  for (int poll = 1; poll <= 6; ++poll) {
    write("b.yaml");
    auto listing = scanner.Poll();
    if (listing != nullptr) {
      ++handed_over;
      EXPECT_EQ(listing->files.size(), 2u);
      EXPECT_EQ(poll % 3, 0) << "handed over after every third unconfirmed poll";
    }
  }
  EXPECT_EQ(handed_over, 2);

  // A listing whose names the next one does not confirm is never handed over.
  for (int poll = 1; poll <= 6; ++poll) {
    if (poll % 2 == 1) {
      std::filesystem::remove(dir / "a.yaml");
    } else {
      write("a.yaml");
    }
    write("b.yaml");
    EXPECT_FALSE(scanner.Poll() != nullptr) << "poll " << poll;
  }
}

// A poll the watch asked for without naming what changed hands over an edit
// of files already handed over at once; a file added or removed, or what a
// timed poll finds, still waits for a second listing.
TEST(ConfirmedScannerTest, AnnouncedEditsOfKnownFilesNeedNoConfirmation) {
  ScannedDir scanned("announced");
  const std::filesystem::path& dir = scanned.path();
  auto write = [&](const std::string& name) { scanned.Write(name); };
  write("a.yaml");
  ConfirmedScanner scanner(dir.string(), {".yaml"});
  EXPECT_FALSE(scanner.Poll(DirectoryChanges::Unnamed()) != nullptr)
      << "nothing handed over yet: a first listing waits for confirmation";
  ASSERT_TRUE(scanner.Poll() != nullptr);

  write("a.yaml");
  auto edited = scanner.Poll(DirectoryChanges::Unnamed());
  ASSERT_TRUE(edited != nullptr) << "an announced edit of a known file";
  EXPECT_EQ(edited->files.begin()->second.size, scanned.writes());

  write("a.yaml");
  EXPECT_FALSE(scanner.Poll() != nullptr) << "a timed poll still confirms";
  ASSERT_TRUE(scanner.Poll() != nullptr);

  write("b.yaml");
  EXPECT_FALSE(scanner.Poll(DirectoryChanges::Unnamed()) != nullptr) << "a new name";
  auto added = scanner.Poll(DirectoryChanges::Unnamed());
  ASSERT_TRUE(added != nullptr) << "confirmed by the second listing";
  EXPECT_EQ(added->files.size(), 2u);

  std::filesystem::remove(dir / "b.yaml");
  write("a.yaml");
  EXPECT_FALSE(scanner.Poll(DirectoryChanges::Unnamed()) != nullptr) << "a name gone";
}

// A poll the watch asked for, naming every entry changed, looks at those
// entries alone: an unnamed file's change waits for a later listing, which
// is how these tests tell a patch from a whole listing.
TEST(ConfirmedScannerTest, NamedEditsPatchTheLastListing) {
  ScannedDir scanned("named");
  const std::filesystem::path& dir = scanned.path();
  std::filesystem::create_directories(dir / "sub");
  std::filesystem::create_directories(dir / ".git");
  for (const char* name : {"a.yaml", "b.yaml", "sub/c.yaml", ".h.yaml", ".git/x.yaml"}) {
    scanned.Write(name);
  }
  ConfirmedScanner scanner(dir.string(), {".yaml"});
  EXPECT_FALSE(scanner.Poll() != nullptr);
  ASSERT_TRUE(scanner.Poll() != nullptr);

  scanned.Write("sub/c.yaml");
  const int c_size = scanned.writes();
  scanned.Write("b.yaml");  // not named: not looked at
  const int b_size = scanned.writes();
  for (const char* name : {".h.yaml", ".git/x.yaml", "notes.txt"}) scanned.Write(name);
  auto patched =
      scanner.Poll(scanned.Named({"sub/c.yaml", ".h.yaml", ".git/x.yaml", "notes.txt"}));
  ASSERT_TRUE(patched != nullptr) << "named edits of known files";
  EXPECT_EQ(patched->files.size(), 3u);
  EXPECT_EQ(patched->files.at((dir / "sub/c.yaml").string()).size, c_size);
  EXPECT_EQ(patched->files.at((dir / "b.yaml").string()).size, 2)
      << "b (its second write) was not looked at";

  // The next whole listing finds b.
  auto listed = scanner.Poll(DirectoryChanges::Unnamed());
  ASSERT_TRUE(listed != nullptr);
  EXPECT_EQ(listed->files.at((dir / "b.yaml").string()).size, b_size);

  // A named file that is new, or gone, changes the names: the tree is
  // listed and the listing waits for its confirmation, as without names.
  scanned.Write("d.yaml");
  EXPECT_FALSE(scanner.Poll(scanned.Named({"d.yaml"})) != nullptr) << "a new name";
  auto added = scanner.Poll();
  ASSERT_TRUE(added != nullptr);
  EXPECT_EQ(added->files.size(), 4u);
  std::filesystem::remove(dir / "a.yaml");
  EXPECT_FALSE(scanner.Poll(scanned.Named({"a.yaml"})) != nullptr) << "a name gone";
  auto removed = scanner.Poll();
  ASSERT_TRUE(removed != nullptr);
  EXPECT_EQ(removed->files.size(), 3u);
}

// A patch of a listing not handed over (here one that found a new file) is
// not handed over either: its names are not the confirmed ones.
TEST(ConfirmedScannerTest, APatchHasTheNamesLastHandedOverOrWaits) {
  ScannedDir scanned("unsure");
  const std::filesystem::path& dir = scanned.path();
  scanned.Write("a.yaml");
  ConfirmedScanner scanner(dir.string(), {".yaml"});
  EXPECT_FALSE(scanner.Poll() != nullptr);
  ASSERT_TRUE(scanner.Poll() != nullptr);

  scanned.Write("b.yaml");
  EXPECT_FALSE(scanner.Poll() != nullptr) << "a timed poll sees b, unconfirmed";
  scanned.Write("a.yaml");
  EXPECT_FALSE(scanner.Poll(scanned.Named({"a.yaml"})) != nullptr)
      << "the patch would hand over names never confirmed";
}

// A file reached through a link changes under the target's name, not the
// link's: a tree with links is always listed whole.
TEST(ConfirmedScannerTest, ATreeWithLinksIsListedWhole) {
  ScannedDir scanned("linked");
  const std::filesystem::path& dir = scanned.path();
  std::filesystem::create_directories(dir / "real");
  scanned.Write("real/x.yaml");
  std::filesystem::create_symlink("real/x.yaml", dir / "link.yaml");
  ConfirmedScanner scanner(dir.string(), {".yaml"});
  EXPECT_FALSE(scanner.Poll() != nullptr);
  ASSERT_TRUE(scanner.Poll() != nullptr);

  scanned.Write("real/x.yaml");
  auto listing = scanner.Poll(scanned.Named({"real/x.yaml"}));
  ASSERT_TRUE(listing != nullptr);
  EXPECT_EQ(listing->files.at((dir / "link.yaml").string()).size, scanned.writes())
      << "the link's file changed too";
}

}  // namespace
}  // namespace holdfast
