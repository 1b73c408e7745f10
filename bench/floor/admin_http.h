#pragma once
// A minimal HTTP/1.1 server for the floor's admin port: one request per
// connection, answered on one thread. Enough for hfbench (/readyz, /change,
// /stats); not a general server.

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/string_view.h"

namespace xds_floor {

struct HttpReply {
  int status = 200;
  std::string body;
};

class AdminHttp {
 public:
  // Gets the method and the request target ("/change?gen=1&clusters=2").
  using Handler = std::function<HttpReply(absl::string_view method, absl::string_view target)>;

  // Listens on host:port (port 0 picks one); nullptr if it cannot.
  static std::unique_ptr<AdminHttp> Start(const std::string& address, Handler handler);
  ~AdminHttp();

  int port() const { return port_; }

 private:
  AdminHttp(int fd, int port, Handler handler)
      : fd_(fd), port_(port), handler_(std::move(handler)) {}
  void Serve();
  void Answer(int connection);

  const int fd_;
  const int port_;
  const Handler handler_;
  std::thread thread_;
};

}  // namespace xds_floor
