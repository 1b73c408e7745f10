#include "src/admin/token_file.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "src/common/log.h"
#include "src/common/read_file.h"

namespace holdfast {
namespace {

// A token is a line of text; a bigger file is a mistake (a key, a log).
constexpr int64_t kMaxTokenFileBytes = 4096;

std::array<unsigned char, 32> Sha256(absl::string_view data) {
  std::array<unsigned char, 32> digest{};
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest.data());
  return digest;
}

absl::StatusOr<std::string> ReadToken(const std::string& path) {
  // Bounded and regular only: a FIFO or /dev/zero must not hang or fill us.
  absl::StatusOr<std::string> content = ReadRegularFile(path, kMaxTokenFileBytes);
  if (!content.ok()) {
    return absl::UnavailableError(absl::StrCat("admin token file: ", content.status().message()));
  }
  std::string token(absl::StripAsciiWhitespace(*content));
  if (token.empty())
    return absl::UnavailableError(absl::StrCat("admin token file ", path, " is empty"));
  return token;
}

}  // namespace

bool TokenFile::Stamp::operator==(const Stamp& other) const {
  return inode == other.inode && size == other.size && modified.tv_sec == other.modified.tv_sec &&
         modified.tv_nsec == other.modified.tv_nsec;
}

absl::StatusOr<std::unique_ptr<TokenFile>> TokenFile::Open(const std::string& path) {
  auto file = std::unique_ptr<TokenFile>(new TokenFile(path));
  absl::MutexLock lock(&file->mu_);
  if (absl::Status status = file->Refresh(); !status.ok()) return status;
  struct stat info{};
  if (stat(path.c_str(), &info) == 0 && (info.st_mode & 077) != 0) {
    LogWarning("admin token file %s can be read by other users: chmod 600 it", path);
  }
  return file;
}

absl::Status TokenFile::Refresh() {
  struct stat info{};
  absl::StatusOr<std::string> token;
  if (stat(path_.c_str(), &info) != 0) {
    token = absl::UnavailableError(
        absl::StrCat("admin token file ", path_, ": ", std::strerror(errno)));
    stamp_ = Stamp{};
  } else {
    Stamp stamp{info.st_ino, info.st_size, info.st_mtim};
    if (loaded_ && stamp == stamp_) return absl::OkStatus();
    stamp_ = stamp;
    token = ReadToken(path_);
  }
  if (token.ok()) digest_ = Sha256(*token);
  loaded_ = token.ok();
  if (token.ok() && !last_error_.ok()) LogInfo("admin token file %s is readable again", path_);
  if (!token.ok() && token.status() != last_error_) {
    LogWarning("%s: every authenticated admin request is refused", token.status().message());
  }
  last_error_ = token.status();
  return last_error_;
}

bool TokenFile::Matches(absl::string_view presented) {
  std::array<unsigned char, 32> digest = Sha256(presented);
  absl::MutexLock lock(&mu_);
  if (!Refresh().ok()) return false;
  return CRYPTO_memcmp(digest.data(), digest_.data(), digest.size()) == 0;
}

bool TokenFile::MatchesAuthorization(absl::string_view header) {
  constexpr absl::string_view kScheme = "bearer ";
  if (header.size() <= kScheme.size() || !absl::StartsWithIgnoreCase(header, kScheme)) return false;
  return Matches(absl::StripAsciiWhitespace(header.substr(kScheme.size())));
}

}  // namespace holdfast
