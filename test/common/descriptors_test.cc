#include "src/common/descriptors.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace holdfast {
namespace {

TEST(DescriptorsTest, CountsOpenDescriptorsAgainstTheSoftLimit) {
  const DescriptorUsage before = CountOpenDescriptors();
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  const DescriptorUsage after = CountOpenDescriptors();
  close(pipe_fds[0]);
  close(pipe_fds[1]);

  EXPECT_FALSE(after.exhausted);
  EXPECT_EQ(after.open, before.open + 2);
  rlimit limit{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &limit), 0);
  EXPECT_EQ(after.limit, static_cast<int64_t>(limit.rlim_cur));
  EXPECT_EQ(after.available(), after.limit - after.open);
}

TEST(DescriptorsTest, ExhaustedWhenNoDescriptorIsLeftToCountWith) {
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
  // The kernel hands out the lowest free number and refuses any at or above
  // the soft limit: a limit equal to the lowest free number leaves none.
  const int lowest_free = dup(0);
  ASSERT_GE(lowest_free, 0);
  close(lowest_free);
  rlimit tight = saved;
  tight.rlim_cur = lowest_free;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &tight), 0);
  const DescriptorUsage usage = CountOpenDescriptors();
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &saved), 0);

  EXPECT_TRUE(usage.exhausted);
  EXPECT_EQ(usage.limit, lowest_free);
  EXPECT_EQ(usage.open, usage.limit);
  EXPECT_EQ(usage.available(), 0);
}

TEST(DescriptorsTest, RaisingTheLimitReachesTheHardLimit) {
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
  if (saved.rlim_max < 64) GTEST_SKIP() << "hard limit too low to lower the soft one";
  rlimit lowered = saved;
  lowered.rlim_cur = saved.rlim_max / 2;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &lowered), 0);
  absl::StatusOr<OpenFilesLimit> raised = RaiseOpenFilesLimit();
  rlimit now{};
  getrlimit(RLIMIT_NOFILE, &now);
  setrlimit(RLIMIT_NOFILE, &saved);

  ASSERT_TRUE(raised.ok()) << raised.status();
  EXPECT_EQ(raised->previous_soft, lowered.rlim_cur);
  EXPECT_EQ(raised->soft, saved.rlim_max);
  EXPECT_EQ(now.rlim_cur, saved.rlim_max);
}

int ListenOnLoopback(int* port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      listen(fd, 16) != 0 || getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    close(fd);
    return -1;
  }
  *port = ntohs(address.sin_port);
  return fd;
}

int ConnectTo(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(port);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// The kernel counts a connection into the accept queue when the client's
// last handshake ACK arrives, which may be just after connect() returns.
std::optional<uint64_t> AwaitQueue(ino_t inode, uint64_t want) {
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  std::optional<uint64_t> queued;
  do {
    queued = AcceptQueueLength({inode});
    if (queued == want) break;
    absl::SleepFor(absl::Milliseconds(5));
  } while (absl::Now() < deadline);
  return queued;
}

TEST(DescriptorsTest, FindsAListeningSocketAndItsAcceptQueue) {
  int port = 0;
  const int listener = ListenOnLoopback(&port);
  ASSERT_GE(listener, 0);
  int other_port = 0;
  const int other = ListenOnLoopback(&other_port);
  ASSERT_GE(other, 0);

  const std::vector<ListeningSocket> found = FindListeningSockets(port);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].fd, listener);
  const ino_t inode = found[0].inode;
  EXPECT_EQ(AcceptQueueLength({inode}), 0u);

  const int first = ConnectTo(port);
  const int second = ConnectTo(port);
  ASSERT_GE(first, 0);
  ASSERT_GE(second, 0);
  EXPECT_EQ(AwaitQueue(inode, 2), 2u);
  const int accepted = accept(listener, nullptr, nullptr);
  ASSERT_GE(accepted, 0);
  EXPECT_EQ(AcceptQueueLength({inode}), 1u);

  // Shut down for reading, a listening socket stops listening: it is no
  // longer found, and the kernel drops its queue.
  ASSERT_EQ(shutdown(listener, SHUT_RD), 0);
  EXPECT_TRUE(FindListeningSockets(port).empty());
  EXPECT_EQ(AcceptQueueLength({inode}), std::nullopt);
  ASSERT_EQ(FindListeningSockets(other_port).size(), 1u);

  for (int fd : {listener, other, first, second, accepted}) close(fd);
}

TEST(DescriptorsTest, ParsesTheListeningPartOfAProcNetTcpTable) {
  const std::string table =
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
      "timeout inode\n"
      "   0: 0100007F:4650 00000000:0000 0A 00000000:00000003 00:00000000 00000000     0        "
      "0 1001 1 0000000000000000 100 0 0 10 0\n"
      "   1: 0100007F:4A38 00000000:0000 0A 00000000:0000001F 00:00000000 00000000     0        "
      "0 1002 1 0000000000000000 100 0 0 10 0\n"
      "   2: 0100007F:4650 0100007F:C350 01 00000000:00000040 00:00000000 00000000     0        "
      "0 1001 1 0000000000000000 20 4 30 10 -1\n"
      "   3: 0100007F:4A38 00000000:0000 0A 00000000:00000005 00:00000000 00000000     0        "
      "0 1003 1 0000000000000000 100 0 0 10 0\n";
  EXPECT_EQ(AcceptQueueLengthIn(table, {1001}), 3u);
  EXPECT_EQ(AcceptQueueLengthIn(table, {1001, 1002}), 3u + 31u);
  // Listening sockets come first; a LISTEN line after the first other one
  // is not looked for.
  EXPECT_EQ(AcceptQueueLengthIn(table, {1003}), std::nullopt);
  EXPECT_EQ(AcceptQueueLengthIn(table, {4242}), std::nullopt);
  EXPECT_EQ(AcceptQueueLengthIn("", {1001}), std::nullopt);
}

}  // namespace
}  // namespace holdfast
