#include "bench/floor/admin_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace xds_floor {

std::unique_ptr<AdminHttp> AdminHttp::Start(const std::string& address, Handler handler) {
  const size_t colon = address.rfind(':');
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  int port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(address.substr(colon + 1), &port) ||
      inet_pton(AF_INET, address.substr(0, colon).c_str(), &addr.sin_addr) != 1) {
    return nullptr;
  }
  addr.sin_port = htons(port);
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  socklen_t length = sizeof(addr);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(fd, 64) != 0 || getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length) != 0) {
    if (fd >= 0) close(fd);
    return nullptr;
  }
  auto server =
      std::unique_ptr<AdminHttp>(new AdminHttp(fd, ntohs(addr.sin_port), std::move(handler)));
  server->thread_ = std::thread([raw = server.get()] { raw->Serve(); });
  return server;
}

AdminHttp::~AdminHttp() {
  shutdown(fd_, SHUT_RDWR);  // accept() fails, Serve returns
  if (thread_.joinable()) thread_.join();
  close(fd_);
}

void AdminHttp::Serve() {
  while (true) {
    const int connection = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (connection < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;
    }
    Answer(connection);
    close(connection);
  }
}

void AdminHttp::Answer(int connection) {
  // The request line and headers; a body, if any, is not read.
  std::string request;
  char buf[4096];
  while (request.find("\r\n\r\n") == std::string::npos && request.size() < 65536) {
    const ssize_t n = read(connection, buf, sizeof(buf));
    if (n <= 0) return;
    request.append(buf, n);
  }
  const absl::string_view line = absl::string_view(request).substr(0, request.find("\r\n"));
  const size_t space1 = line.find(' ');
  const size_t space2 = line.find(' ', space1 + 1);
  HttpReply reply{400, "bad request\n"};
  if (space1 != absl::string_view::npos && space2 != absl::string_view::npos) {
    reply = handler_(line.substr(0, space1), line.substr(space1 + 1, space2 - space1 - 1));
  }
  const std::string response =
      absl::StrCat("HTTP/1.1 ", reply.status, reply.status < 300 ? " OK" : " Error",
                   "\r\nContent-Type: text/plain\r\nContent-Length: ", reply.body.size(),
                   "\r\nConnection: close\r\n\r\n", reply.body);
  for (size_t sent = 0; sent < response.size();) {
    const ssize_t n = write(connection, response.data() + sent, response.size() - sent);
    if (n <= 0) return;
    sent += n;
  }
}

}  // namespace xds_floor
