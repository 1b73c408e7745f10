#include "src/common/descriptors.h"

#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "src/common/log.h"

namespace holdfast {
namespace {

int64_t SoftLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  return limit.rlim_cur == RLIM_INFINITY ? INT64_MAX : static_cast<int64_t>(limit.rlim_cur);
}

// Calls `visit` with every descriptor number in /proc/self/fd except the
// one listing it. Returns false if the directory cannot be opened.
template <typename Visit>
bool ForEachDescriptor(Visit visit) {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return false;
  const int own = dirfd(dir);
  while (dirent* entry = readdir(dir)) {
    int fd;
    if (!absl::SimpleAtoi(entry->d_name, &fd) || fd == own) continue;
    visit(fd);
  }
  closedir(dir);
  return true;
}

int LocalPort(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) return -1;
  if (address.ss_family == AF_INET) {
    return ntohs(reinterpret_cast<const sockaddr_in*>(&address)->sin_port);
  }
  if (address.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&address)->sin6_port);
  }
  return -1;
}

bool IsListening(int fd) {
  int listening = 0;
  socklen_t length = sizeof(listening);
  return getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &length) == 0 && listening != 0;
}

}  // namespace

DescriptorUsage CountOpenDescriptors() {
  DescriptorUsage usage;
  usage.limit = SoftLimit();
  int64_t open = 0;
  if (ForEachDescriptor([&open](int) { ++open; })) {
    usage.open = open;
  } else if (errno == EMFILE || errno == ENFILE) {
    usage.open = usage.limit;
    usage.exhausted = true;
  }
  return usage;
}

absl::StatusOr<OpenFilesLimit> RaiseOpenFilesLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    return absl::InternalError(absl::StrCat("getrlimit(RLIMIT_NOFILE): ", strerror(errno)));
  }
  OpenFilesLimit result{limit.rlim_cur, limit.rlim_cur, limit.rlim_max};
  if (limit.rlim_cur == limit.rlim_max) return result;
  limit.rlim_cur = limit.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &limit) != 0) {
    return absl::InternalError(
        absl::StrCat("setrlimit(RLIMIT_NOFILE, ", limit.rlim_max, "): ", strerror(errno)));
  }
  result.soft = limit.rlim_cur;
  return result;
}

void RaiseOpenFilesLimitAndLog() {
  absl::StatusOr<OpenFilesLimit> files = RaiseOpenFilesLimit();
  if (!files.ok()) {
    LogWarning("open-files limit: %s", files.status().message());
  } else if (files->previous_soft == files->soft) {
    LogInfo("open-files limit: %d (already the hard limit)", files->soft);
  } else {
    LogInfo("open-files limit: raised the soft limit from %d to the hard limit, %d",
            files->previous_soft, files->soft);
  }
}

std::vector<ListeningSocket> FindListeningSockets(int port) {
  std::vector<ListeningSocket> sockets;
  ForEachDescriptor([&](int fd) {
    struct stat info {};
    if (fstat(fd, &info) != 0 || !S_ISSOCK(info.st_mode)) return;
    if (!IsListening(fd) || LocalPort(fd) != port) return;
    sockets.push_back({fd, info.st_ino});
  });
  return sockets;
}

namespace {

// One line of a /proc/net/tcp{,6} table. Columns: sl local_address
// rem_address st tx_queue:rx_queue tr:when retrnsmt uid timeout inode ...
struct TableLine {
  bool listening = false;  // st is 0A, TCP_LISTEN
  uint64_t inode = 0;
  uint64_t rx_queue = 0;  // for a listening socket, its accept queue
};

std::optional<TableLine> ParseTableLine(absl::string_view line) {
  std::vector<absl::string_view> fields = absl::StrSplit(line, ' ', absl::SkipEmpty());
  if (fields.size() < 10) return std::nullopt;
  std::pair<absl::string_view, absl::string_view> queues = absl::StrSplit(fields[4], ':');
  TableLine parsed;
  parsed.listening = fields[3] == "0A";
  if (!absl::SimpleAtoi(fields[9], &parsed.inode) ||
      !absl::SimpleHexAtoi(queues.second, &parsed.rx_queue)) {
    return std::nullopt;
  }
  return parsed;
}

// Adds the accept queues of `inodes` found in `in` to `total`. The kernel
// lists listening sockets first, so reading stops at the first other one:
// with thousands of connections the rest of the table is never generated.
void AddQueues(std::istream& in, const std::vector<ino_t>& inodes, std::optional<uint64_t>* total) {
  std::string line;
  std::getline(in, line);  // the header
  while (std::getline(in, line)) {
    std::optional<TableLine> parsed = ParseTableLine(line);
    if (!parsed.has_value()) continue;
    if (!parsed->listening) return;
    if (std::find(inodes.begin(), inodes.end(), static_cast<ino_t>(parsed->inode)) ==
        inodes.end()) {
      continue;
    }
    *total = total->value_or(0) + parsed->rx_queue;
  }
}

}  // namespace

std::optional<uint64_t> AcceptQueueLengthIn(const std::string& table,
                                            const std::vector<ino_t>& inodes) {
  std::istringstream in(table);
  std::optional<uint64_t> total;
  AddQueues(in, inodes, &total);
  return total;
}

std::optional<uint64_t> AcceptQueueLength(const std::vector<ino_t>& inodes) {
  std::optional<uint64_t> total;
  for (const char* path : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(path);
    if (in) AddQueues(in, inodes, &total);
  }
  return total;
}

}  // namespace holdfast
