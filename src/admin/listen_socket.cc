#include "src/admin/listen_socket.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace holdfast {
namespace {

struct HostPort {
  std::string host;
  int port = 0;
};

absl::StatusOr<HostPort> SplitAddress(const std::string& address) {
  size_t colon = address.rfind(':');
  HostPort result;
  if (colon == std::string::npos || !absl::SimpleAtoi(address.substr(colon + 1), &result.port) ||
      result.port < 0 || result.port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("admin address \"", address, "\": expected HOST:PORT"));
  }
  result.host = address.substr(0, colon);
  if (result.host.size() > 2 && result.host.front() == '[' && result.host.back() == ']') {
    result.host = result.host.substr(1, result.host.size() - 2);
  }
  return result;
}

bool IsLoopback(const sockaddr_storage& addr) {
  if (addr.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(addr);
    return (ntohl(v4.sin_addr.s_addr) >> 24) == 127;
  }
  if (addr.ss_family == AF_INET6) {
    const in6_addr& v6 = reinterpret_cast<const sockaddr_in6&>(addr).sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
  }
  return false;
}

std::string Describe(const sockaddr_storage& addr, int port) {
  char text[INET6_ADDRSTRLEN] = "?";
  if (addr.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(addr).sin_addr, text, sizeof(text));
    return absl::StrCat(text, ":", port);
  }
  inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(addr).sin6_addr, text, sizeof(text));
  return absl::StrCat("[", text, "]:", port);
}

// A listening socket on the first of `host`'s addresses that binds; -1 with
// errno set when none does.
int BindFirst(const HostPort& target) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* results = nullptr;
  std::string port = std::to_string(target.port);
  if (getaddrinfo(target.host.empty() ? nullptr : target.host.c_str(), port.c_str(), &hints,
                  &results) != 0) {
    errno = EADDRNOTAVAIL;
    return -1;
  }
  int fd = -1;
  for (addrinfo* ai = results; ai != nullptr && fd < 0; ai = ai->ai_next) {
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 128) != 0) {
      int saved = errno;
      close(fd);
      fd = -1;
      errno = saved;
    }
  }
  freeaddrinfo(results);
  return fd;
}

}  // namespace

absl::StatusOr<ListenSocket> ListenSocket::Open(const std::string& address) {
  absl::StatusOr<HostPort> target = SplitAddress(address);
  if (!target.ok()) return target.status();
  int fd = BindFirst(*target);
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen for admin on ", address, ": ", std::strerror(errno)));
  }
  ListenSocket socket;
  socket.fd_ = fd;
  sockaddr_storage bound{};
  socklen_t length = sizeof(bound);
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length);
  socket.port_ =
      ntohs(bound.ss_family == AF_INET ? reinterpret_cast<const sockaddr_in&>(bound).sin_port
                                       : reinterpret_cast<const sockaddr_in6&>(bound).sin6_port);
  socket.loopback_ = IsLoopback(bound);
  socket.bound_ = Describe(bound, socket.port_);
  return socket;
}

ListenSocket::ListenSocket(ListenSocket&& other) noexcept { *this = std::move(other); }

ListenSocket& ListenSocket::operator=(ListenSocket&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    port_ = other.port_;
    loopback_ = other.loopback_;
    bound_ = std::move(other.bound_);
  }
  return *this;
}

ListenSocket::~ListenSocket() {
  if (fd_ >= 0) close(fd_);
}

int ListenSocket::Release() { return std::exchange(fd_, -1); }

}  // namespace holdfast
