#include "src/source/directory_scanner.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "src/common/log.h"

namespace holdfast {

namespace fs = std::filesystem;

namespace {

// What std::filesystem calls the extension: from the last '.', which `name`
// (not hidden) never has first.
bool HasListedExtension(absl::string_view name, const std::vector<std::string>& extensions) {
  const size_t dot = name.rfind('.');
  if (dot == absl::string_view::npos) return false;
  return std::find(extensions.begin(), extensions.end(), name.substr(dot)) != extensions.end();
}

FileFingerprint FingerprintOf(const struct stat& st) {
  return {static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec,
          static_cast<int64_t>(st.st_size), static_cast<uint64_t>(st.st_ino)};
}

bool IsUnder(const fs::path& path, const fs::path& root) {
  auto [root_end, path_it] = std::mismatch(root.begin(), root.end(), path.begin(), path.end());
  return root_end == root.end();
}

// One walk of a tree: the listing so far, and the directories already
// listed (by device and inode), so links to them are not followed again.
class TreeWalk {
 public:
  TreeWalk(fs::path root, const std::vector<std::string>& extensions)
      : root_(std::move(root)), extensions_(extensions) {}

  // Lists `dir` and what is under it; false if `dir` itself is unreadable.
  // Entries are looked at relative to the open directory: a path walk per
  // file was a third of a listing's cost in a 1,000-file directory.
  bool List(const std::string& dir) {
    DIR* stream = opendir(dir.c_str());
    if (stream == nullptr) return Unreadable(dir, errno);
    absl::Cleanup close_stream = [stream] { closedir(stream); };
    struct stat st;
    if (fstat(dirfd(stream), &st) != 0) return Unreadable(dir, errno);
    if (!visited_.insert({st.st_dev, st.st_ino}).second) return true;  // a link loop
    const std::string prefix = dir.ends_with('/') ? dir : dir + '/';
    while (true) {
      errno = 0;
      const dirent* entry = readdir(stream);
      // An error ends the listing; it is not taken as complete.
      if (entry == nullptr) return errno == 0 || Unreadable(dir, errno);
      Visit(dirfd(stream), prefix, *entry);
    }
  }

  DirectoryListing Take() { return std::move(listing_); }

 private:
  bool Unreadable(const std::string& dir, int error) {
    listing_.unreadable[dir] = absl::StrCat("cannot list: ", std::strerror(error));
    return false;
  }

  void Visit(int dir_fd, const std::string& prefix, const dirent& entry) {
    const absl::string_view name = entry.d_name;
    if (name.empty() || name[0] == '.') return;
    std::string path = absl::StrCat(prefix, name);
    // The entry's type comes with the listing (d_type), so only links (and
    // file systems that do not fill it in) cost a look of their own.
    if (entry.d_type == DT_LNK || entry.d_type == DT_UNKNOWN) {
      struct stat link;
      if (fstatat(dir_fd, entry.d_name, &link, AT_SYMLINK_NOFOLLOW) != 0) return;  // gone
      if (S_ISLNK(link.st_mode)) {
        listing_.has_links = true;
        std::error_code ec;
        fs::path target = fs::canonical(path, ec);
        if (ec) return;  // dangling: like a file that is not there
        if (!IsUnder(target, root_)) {
          listing_.skipped[path] = absl::StrCat("symlink to ", target.string(), ", outside ",
                                                root_.string(), "; not followed");
          return;
        }
      }
    }
    struct stat st;
    if (fstatat(dir_fd, entry.d_name, &st, 0) != 0) return;  // gone since it was listed
    if (S_ISDIR(st.st_mode)) {
      List(path);
      return;
    }
    if (!S_ISREG(st.st_mode) || !HasListedExtension(name, extensions_)) return;
    listing_.files[std::move(path)] = FingerprintOf(st);
  }

  const fs::path root_;
  const std::vector<std::string>& extensions_;
  std::set<std::pair<dev_t, ino_t>> visited_;
  DirectoryListing listing_;
};

bool SameNames(const DirectoryListing& a, const DirectoryListing& b) {
  return a.unreadable == b.unreadable &&
         std::equal(a.files.begin(), a.files.end(), b.files.begin(), b.files.end(),
                    [](const auto& x, const auto& y) { return x.first == y.first; });
}

}  // namespace

absl::StatusOr<DirectoryListing> ScanDirectory(const std::string& directory,
                                               const std::vector<std::string>& extensions) {
  std::error_code ec;
  fs::path root = fs::canonical(directory, ec);
  if (ec) {
    return absl::UnavailableError(absl::StrCat("cannot list ", directory, ": ", ec.message()));
  }
  TreeWalk walk(root, extensions);
  if (!walk.List(directory)) {
    DirectoryListing failed = walk.Take();
    return absl::UnavailableError(absl::StrCat(directory, ": ", failed.unreadable.begin()->second));
  }
  return walk.Take();
}

std::optional<DirectoryListing> ConfirmedScanner::Patched(
    const absl::flat_hash_set<std::string>& paths) const {
  if (previous_ == nullptr || handed_over_ == nullptr || previous_->has_links ||
      !previous_->unreadable.empty()) {
    return std::nullopt;
  }
  DirectoryListing patched = *previous_;
  for (const std::string& path : paths) {
    // The watch also watches hidden directories, which listings skip.
    if (path.find("/.", directory_.empty() ? 0 : directory_.size() - 1) != std::string::npos) {
      continue;
    }
    const absl::string_view name = absl::string_view(path).substr(path.rfind('/') + 1);
    if (name.empty() || !HasListedExtension(name, extensions_)) continue;
    struct stat st;
    if (lstat(path.c_str(), &st) != 0) {
      if (errno != ENOENT) return std::nullopt;
      patched.files.erase(path);
    } else if (S_ISREG(st.st_mode)) {
      patched.files[path] = FingerprintOf(st);
    } else if (S_ISLNK(st.st_mode) || S_ISDIR(st.st_mode)) {
      return std::nullopt;  // the whole listing knows what to do with these
    } else {
      patched.files.erase(path);
    }
  }
  return patched;
}

std::shared_ptr<const DirectoryListing> ConfirmedScanner::HandOver(DirectoryListing listing) {
  unconfirmed_polls_ = 0;
  confirm_soon_ = false;
  previous_ = std::make_shared<const DirectoryListing>(std::move(listing));
  handed_over_ = previous_;
  return previous_;
}

std::shared_ptr<const DirectoryListing> ConfirmedScanner::Poll(const DirectoryChanges& changes) {
  if (changes.any && changes.paths.has_value()) {
    std::optional<DirectoryListing> patched = Patched(*changes.paths);
    if (patched.has_value() && SameNames(*patched, *handed_over_)) {
      return HandOver(*std::move(patched));
    }
  }
  absl::StatusOr<DirectoryListing> scan = ScanDirectory(directory_, extensions_);
  if (!scan.ok()) {
    if (healthy_) LogWarning("%s; serving the last good snapshot", scan.status().message());
    healthy_ = false;
    previous_.reset();
    confirm_soon_ = false;
    return nullptr;
  }
  if (!healthy_) LogInfo("directory %s readable again", directory_);
  healthy_ = true;
  bool confirmed = previous_ != nullptr && *scan == *previous_;
  if (!confirmed && changes.any && handed_over_ != nullptr) {
    confirmed = SameNames(*scan, *handed_over_);
  }
  if (!confirmed && previous_ != nullptr && ++unconfirmed_polls_ >= max_unconfirmed_polls_) {
    confirmed = SameNames(*scan, *previous_);  // still changing: settle for the same names
  }
  if (confirmed) return HandOver(*std::move(scan));
  confirm_soon_ = unconfirmed_polls_ <= 1;
  previous_ = std::make_shared<const DirectoryListing>(*std::move(scan));
  return nullptr;
}

}  // namespace holdfast
