#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace holdfast {

// A bound, listening, non-blocking TCP socket. Move-only; closes its
// descriptor when destroyed.
class ListenSocket {
 public:
  // Binds `address` ("HOST:PORT", "[V6]:PORT"; port 0: any free port; an
  // empty HOST: every address) and listens.
  static absl::StatusOr<ListenSocket> Open(const std::string& address);

  ListenSocket(ListenSocket&& other) noexcept;
  ListenSocket& operator=(ListenSocket&& other) noexcept;
  ListenSocket(const ListenSocket&) = delete;
  ListenSocket& operator=(const ListenSocket&) = delete;
  ~ListenSocket();

  int fd() const { return fd_; }
  int port() const { return port_; }
  // Whether only this host can connect: bound to 127.0.0.0/8 or ::1 (an
  // IPv4-mapped 127.x address counts), never to a wildcard.
  bool loopback() const { return loopback_; }
  // The address actually bound, for messages ("127.0.0.1:19000").
  const std::string& bound() const { return bound_; }
  // Gives up ownership of the descriptor.
  int Release();

 private:
  ListenSocket() = default;

  int fd_ = -1;
  int port_ = 0;
  bool loopback_ = false;
  std::string bound_;
};

}  // namespace holdfast
