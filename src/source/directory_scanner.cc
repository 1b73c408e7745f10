#include "src/source/directory_scanner.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "src/common/log.h"

namespace holdfast {

namespace fs = std::filesystem;

absl::StatusOr<std::map<std::string, FileFingerprint>> ScanDirectory(
    const std::string& directory, const std::vector<std::string>& extensions) {
  std::error_code ec;
  fs::recursive_directory_iterator it(directory, fs::directory_options::follow_directory_symlink,
                                      ec);
  if (ec)
    return absl::UnavailableError(absl::StrCat("cannot list ", directory, ": ", ec.message()));
  std::map<std::string, FileFingerprint> files;
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec)
      return absl::UnavailableError(absl::StrCat("cannot list ", directory, ": ", ec.message()));
    const fs::path& path = it->path();
    if (!path.filename().empty() && path.filename().string()[0] == '.') {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    const std::string ext = path.extension().string();
    if (std::find(extensions.begin(), extensions.end(), ext) == extensions.end()) continue;
    struct stat st;
    if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    files[path.string()] = {
        static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec,
        static_cast<int64_t>(st.st_size), static_cast<uint64_t>(st.st_ino)};
  }
  return files;
}

std::optional<std::map<std::string, FileFingerprint>> ConfirmedScanner::Poll() {
  absl::StatusOr<std::map<std::string, FileFingerprint>> scan =
      ScanDirectory(directory_, extensions_);
  if (!scan.ok()) {
    if (healthy_) LogWarning("%s; serving the last good snapshot", scan.status().message());
    healthy_ = false;
    previous_.reset();
    confirm_soon_ = false;
    return std::nullopt;
  }
  if (!healthy_) LogInfo("directory %s readable again", directory_);
  healthy_ = true;
  bool confirmed = previous_.has_value() && *scan == *previous_;
  if (!confirmed && previous_.has_value() && ++unconfirmed_polls_ >= max_unconfirmed_polls_) {
    // Still changing: settle for the same names.
    confirmed = std::equal(scan->begin(), scan->end(), previous_->begin(), previous_->end(),
                           [](const auto& a, const auto& b) { return a.first == b.first; });
  }
  confirm_soon_ = !confirmed && unconfirmed_polls_ <= 1;
  previous_ = *std::move(scan);
  if (!confirmed) return std::nullopt;
  unconfirmed_polls_ = 0;
  return previous_;
}

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream contents;
  contents << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat("error reading ", path));
  return contents.str();
}

}  // namespace holdfast
