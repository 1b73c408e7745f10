#pragma once

// A raw HTTP/1.1 client over a blocking loopback socket, for tests that need
// to misbehave (send slowly, pipeline, stop reading) as no library client
// would.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace holdfast::testing_http {

struct RawResponse {
  int status = 0;
  std::string head;  // status line and header fields
  std::string body;
};

class TestClient {
 public:
  // Connects to 127.0.0.1:port; fd() < 0 on failure.
  explicit TestClient(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      close(fd_);
      fd_ = -1;
    }
  }
  TestClient(TestClient&& other) noexcept
      : fd_(std::exchange(other.fd_, -1)), buffer_(std::move(other.buffer_)) {}
  TestClient(const TestClient&) = delete;
  ~TestClient() {
    if (fd_ >= 0) close(fd_);
  }

  int fd() const { return fd_; }

  // False if the server closed the connection (or it failed).
  bool Send(absl::string_view data) {
    while (!data.empty()) {
      ssize_t n = send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      data.remove_prefix(n);
    }
    return true;
  }

  // One response, waiting at most `timeout`; nullopt on timeout or close.
  // `head_only`: the response to a HEAD (Content-Length without a body).
  std::optional<RawResponse> Read(std::chrono::milliseconds timeout = std::chrono::seconds(5),
                                  bool head_only = false) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    size_t end;
    while ((end = buffer_.find("\r\n\r\n")) == std::string::npos) {
      if (!Fill(deadline)) return std::nullopt;
    }
    RawResponse response;
    response.head = buffer_.substr(0, end + 2);
    if (!absl::SimpleAtoi(response.head.substr(9, 3), &response.status)) return std::nullopt;
    size_t length = 0;
    size_t at = response.head.find("Content-Length: ");
    if (at != std::string::npos) {
      size_t eol = response.head.find("\r\n", at);
      if (!absl::SimpleAtoi(response.head.substr(at + 16, eol - at - 16), &length)) {
        return std::nullopt;
      }
    }
    if (head_only) length = 0;
    while (buffer_.size() < end + 4 + length) {
      if (!Fill(deadline)) return std::nullopt;
    }
    response.body = buffer_.substr(end + 4, length);
    buffer_.erase(0, end + 4 + length);
    return response;
  }

  // Whether the server closes the connection within `timeout` (bytes it
  // sends first are kept for Read).
  bool ClosedWithin(std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (!Fill(deadline)) return !timed_out_;
    }
    return false;
  }

  const std::string& unread() const { return buffer_; }

 private:
  // Reads what arrives before `deadline`; false on close, error or timeout.
  bool Fill(std::chrono::steady_clock::time_point deadline) {
    timed_out_ = false;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd pfd{fd_, POLLIN, 0};
    if (left.count() <= 0 || poll(&pfd, 1, static_cast<int>(left.count())) <= 0) {
      timed_out_ = true;
      return false;
    }
    char chunk[65536];
    ssize_t n = recv(fd_, chunk, sizeof(chunk), 0);
    if (n <= 0) return false;
    buffer_.append(chunk, n);
    return true;
  }

  int fd_ = -1;
  std::string buffer_;
  bool timed_out_ = false;
};

inline std::string Get(absl::string_view path, absl::string_view extra_headers = "") {
  return absl::StrCat("GET ", path, " HTTP/1.1\r\nHost: test\r\n", extra_headers, "\r\n");
}

}  // namespace holdfast::testing_http
