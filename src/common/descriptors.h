#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace holdfast {

// How many file descriptors the process holds, against its soft limit.
struct DescriptorUsage {
  int64_t open = 0;
  int64_t limit = 0;  // RLIMIT_NOFILE soft limit
  // Open descriptors could not be counted because none was free to list
  // them: `open` is then `limit`.
  bool exhausted = false;
  int64_t available() const { return limit > open ? limit - open : 0; }
};

// Counts the entries of /proc/self/fd (itself needing one descriptor, which
// is why a failure with EMFILE or ENFILE means "exhausted").
DescriptorUsage CountOpenDescriptors();

struct OpenFilesLimit {
  uint64_t previous_soft = 0;
  uint64_t soft = 0;
  uint64_t hard = 0;
};

// Raises the RLIMIT_NOFILE soft limit to the hard limit. Every connection
// costs a descriptor, and a soft limit lower than the hard one (1,024 is a
// common default) only lets fewer proxies connect.
absl::StatusOr<OpenFilesLimit> RaiseOpenFilesLimit();
// Raises it and says so in the log, whatever the outcome.
void RaiseOpenFilesLimitAndLog();

// A listening TCP socket of this process.
struct ListeningSocket {
  int fd = -1;
  ino_t inode = 0;  // the socket's inode, as /proc/net/tcp shows it
};

// The sockets of this process listening on TCP `port` (any address). They
// are found by descriptor because the gRPC library that owns them does not
// expose them.
std::vector<ListeningSocket> FindListeningSockets(int port);

// Connections waiting to be accepted on the listening sockets with these
// inodes, from /proc/net/tcp and /proc/net/tcp6 (a LISTEN socket's rx_queue
// is its accept queue). nullopt when the tables cannot be read or none of the
// sockets is in them.
std::optional<uint64_t> AcceptQueueLength(const std::vector<ino_t>& inodes);

// Parses one /proc/net/tcp{,6} table; exposed for tests.
std::optional<uint64_t> AcceptQueueLengthIn(const std::string& table,
                                            const std::vector<ino_t>& inodes);

}  // namespace holdfast
