#include "src/snapshot/snapshot_file.h"

#include <fcntl.h>
#include <openssl/sha.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "absl/strings/str_cat.h"
#include "src/common/read_file.h"

namespace holdfast {
namespace {

constexpr char kMagic[] = "HFSNAP01";
constexpr size_t kMagicSize = 8;
// Version 2 adds the configuration's rollout policies after the resources;
// version 3 also each resource's version, after its name, and always the
// policies (empty when none). Each is written only for a snapshot that
// needs it (some policies; some version not derived from the bytes), so an
// older release still reads every file it could read before.
constexpr uint32_t kFormatVersion = 1;
constexpr uint32_t kFormatWithRollouts = 2;
constexpr uint32_t kFormatWithVersions = 3;
constexpr size_t kHeaderSize = kMagicSize + 4 + 8 + SHA256_DIGEST_LENGTH;

template <typename T>
void PutInt(std::string& out, T value) {
  for (size_t i = 0; i < sizeof(T); ++i)
    out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

template <typename T>
void PutBytes(std::string& out, const std::string& bytes) {
  PutInt<T>(out, static_cast<T>(bytes.size()));
  out.append(bytes);
}

// Reads from a payload, failing (not crashing) on anything short.
class Reader {
 public:
  explicit Reader(absl::string_view data) : data_(data) {}
  template <typename T>
  bool Int(T* value) {
    if (data_.size() < sizeof(T)) return false;
    *value = 0;
    for (size_t i = 0; i < sizeof(T); ++i) {
      *value |= static_cast<T>(static_cast<unsigned char>(data_[i])) << (8 * i);
    }
    data_.remove_prefix(sizeof(T));
    return true;
  }
  template <typename T>
  bool Bytes(std::string* out) {
    T size;
    if (!Int(&size) || data_.size() < size) return false;
    out->assign(data_.data(), size);
    data_.remove_prefix(size);
    return true;
  }
  bool done() const { return data_.empty(); }

 private:
  absl::string_view data_;
};

std::string Sha256(absl::string_view bytes) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), digest);
  return std::string(reinterpret_cast<char*>(digest), sizeof(digest));
}

absl::Status Errno(const std::string& what) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(errno)));
}

// Test hook, for tests that kill a process in the middle of a snapshot write
// (test/chaos, test/integration/test_outage.py); inert unless the
// environment variable HOLDFAST_TEST_PAUSE_SNAPSHOT_WRITE is set. Then a
// write that finds `<snapshot file>.pause` renames it to `.paused` once half
// its bytes are written and stops there for up to 10 s; it removes `.paused`
// before it goes on, so a test that still finds `.paused` after killing the
// process knows the kill landed mid-write.
void PauseHalfwayIfAsked(const std::string& destination) {
  static const bool enabled = std::getenv("HOLDFAST_TEST_PAUSE_SNAPSHOT_WRITE") != nullptr;
  if (!enabled) return;
  const std::string asked = destination + ".pause", paused = destination + ".paused";
  if (rename(asked.c_str(), paused.c_str()) != 0) return;
  std::this_thread::sleep_for(std::chrono::seconds(10));
  unlink(paused.c_str());
}

// Writes `bytes` to `path` and syncs it; `destination` (the file `path`
// will become) names the test hook's files.
absl::Status WriteAllAndSync(const std::string& path, const std::string& bytes,
                             const std::string& destination) {
  // Owner only: snapshots hold whatever the resources hold (TLS keys among
  // them). fchmod too, in case a leftover file kept an older mode.
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Errno("cannot create " + path);
  if (fchmod(fd, 0600) != 0) {
    absl::Status error = Errno("cannot restrict " + path);
    close(fd);
    return error;
  }
  const size_t half = bytes.size() / 2;
  size_t written = 0;
  while (written < bytes.size()) {
    if (written == half) PauseHalfwayIfAsked(destination);
    size_t end = written < half ? half : bytes.size();
    ssize_t n = write(fd, bytes.data() + written, end - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      absl::Status error = Errno("cannot write " + path);
      close(fd);
      return error;
    }
    written += static_cast<size_t>(n);
  }
  if (fsync(fd) != 0) {
    absl::Status error = Errno("cannot sync " + path);
    close(fd);
    return error;
  }
  if (close(fd) != 0) return Errno("cannot close " + path);
  return absl::OkStatus();
}

uint32_t FormatFor(const Snapshot& snapshot) {
  for (const std::string& type_url : snapshot.TypeUrls()) {
    for (const auto& [name, resource] : snapshot.Resources(type_url)) {
      if (!resource->version_is_content_digest()) return kFormatWithVersions;
    }
  }
  return snapshot.rollouts().empty() ? kFormatVersion : kFormatWithRollouts;
}

}  // namespace

absl::Status WriteSnapshotFile(const Snapshot& snapshot, const std::string& path) {
  const uint32_t format = FormatFor(snapshot);
  std::string payload;
  PutInt<uint64_t>(payload, static_cast<uint64_t>(absl::ToUnixMicros(snapshot.created())));
  PutInt<uint32_t>(payload, static_cast<uint32_t>(snapshot.size()));
  for (const std::string& type_url : snapshot.TypeUrls()) {
    for (const auto& [name, resource] : snapshot.Resources(type_url)) {
      PutBytes<uint32_t>(payload, type_url);
      PutBytes<uint32_t>(payload, name);
      if (format == kFormatWithVersions) PutBytes<uint32_t>(payload, resource->version());
      PutBytes<uint64_t>(payload, resource->serialized());
    }
  }
  if (format != kFormatVersion) PutBytes<uint32_t>(payload, EncodeRollouts(snapshot.rollouts()));
  std::string file(kMagic, kMagicSize);
  PutInt<uint32_t>(file, format);
  PutInt<uint64_t>(file, payload.size());
  file.append(Sha256(payload));
  file.append(payload);

  std::string tmp = path + ".tmp";
  absl::Status written = WriteAllAndSync(tmp, file, path);
  if (written.ok() && rename(tmp.c_str(), path.c_str()) != 0)
    written = Errno("cannot rename " + tmp);
  if (!written.ok()) {
    unlink(tmp.c_str());  // a full disk should not also keep a partial copy
    return written;
  }
  // The rename itself must reach the disk too.
  std::string dir = std::filesystem::path(path).parent_path().string();
  int dir_fd = open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    fsync(dir_fd);
    close(dir_fd);
  }
  return absl::OkStatus();
}

absl::StatusOr<SnapshotPtr> ReadSnapshotFile(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0 && errno == ENOENT) {
    return absl::NotFoundError(absl::StrCat(path, ": no snapshot file"));
  }
  absl::StatusOr<std::string> file = ReadRegularFile(path, kMaxSnapshotFileBytes);
  if (!file.ok()) return absl::DataLossError(absl::StrCat(path, ": ", file.status().message()));
  return DecodeSnapshotFile(*file, path);
}

absl::StatusOr<SnapshotPtr> DecodeSnapshotFile(absl::string_view file, const std::string& path) {
  auto corrupt = [&](const std::string& why) {
    return absl::DataLossError(absl::StrCat(path, ": damaged snapshot file (", why, ")"));
  };
  if (file.size() < kHeaderSize ||
      file.substr(0, kMagicSize) != absl::string_view(kMagic, kMagicSize)) {
    return corrupt("not a holdfast snapshot file");
  }
  Reader header(file.substr(kMagicSize, 12));
  uint32_t version = 0;
  uint64_t size = 0;
  header.Int(&version);
  header.Int(&size);
  if (version < kFormatVersion || version > kFormatWithVersions) {
    return corrupt(absl::StrCat("format version ", version, ", expected ", kFormatVersion, " to ",
                                kFormatWithVersions));
  }
  if (file.size() - kHeaderSize != size) {
    return corrupt(
        absl::StrCat("payload is ", file.size() - kHeaderSize, " bytes, header says ", size));
  }
  absl::string_view payload = file.substr(kHeaderSize);
  if (Sha256(payload) != file.substr(kMagicSize + 12, SHA256_DIGEST_LENGTH)) {
    return corrupt("checksum mismatch");
  }
  Reader reader(payload);
  uint64_t created_micros = 0;
  uint32_t count = 0;
  if (!reader.Int(&created_micros) || !reader.Int(&count)) return corrupt("short payload");
  std::vector<ResourcePtr> resources;
  for (uint32_t i = 0; i < count; ++i) {
    std::string type_url, name, resource_version, serialized;
    if (!reader.Bytes<uint32_t>(&type_url) || !reader.Bytes<uint32_t>(&name) ||
        (version == kFormatWithVersions && !reader.Bytes<uint32_t>(&resource_version)) ||
        !reader.Bytes<uint64_t>(&serialized)) {
      return corrupt(absl::StrCat("resource ", i, " of ", count, " is cut short"));
    }
    if (version == kFormatWithVersions && resource_version.empty()) {
      return corrupt(absl::StrCat("resource ", i, " of ", count, " has no version"));
    }
    resources.push_back(Resource::FromBytes(std::move(name), std::move(type_url),
                                            std::move(serialized), std::move(resource_version)));
  }
  ConfiguredRollouts rollouts;
  if (version != kFormatVersion) {
    std::string text;
    if (!reader.Bytes<uint32_t>(&text)) return corrupt("rollout policies are cut short");
    absl::StatusOr<ConfiguredRollouts> decoded = DecodeRollouts(text);
    if (!decoded.ok()) return corrupt(std::string(decoded.status().message()));
    rollouts = *std::move(decoded);
  }
  if (!reader.done()) return corrupt("trailing bytes");
  absl::StatusOr<SnapshotPtr> snapshot =
      Snapshot::Build(std::move(resources),
                      absl::FromUnixMicros(static_cast<int64_t>(created_micros)), std::move(rollouts));
  if (!snapshot.ok()) return corrupt(std::string(snapshot.status().message()));
  return snapshot;
}

}  // namespace holdfast
