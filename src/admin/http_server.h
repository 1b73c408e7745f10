#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "src/admin/http_message.h"
#include "src/admin/listen_socket.h"

namespace holdfast {

// Limits of the admin HTTP server. Every one bounds what a client can hold:
// together they make sure a few slow, idle or hostile clients cannot stop
// the server from answering /readyz (see docs/security.md).
struct HttpServerOptions {
  // A request head must arrive in full within this, counted from its first
  // byte (or from the connection's accept): a client sending headers slowly
  // is cut off (408).
  absl::Duration header_timeout = absl::Seconds(5);
  // A keep-alive connection with no request under way is closed after this.
  absl::Duration idle_timeout = absl::Seconds(30);
  // A response is dropped (and its connection closed) when the client takes
  // none of it for this long.
  absl::Duration write_timeout = absl::Seconds(10);
  // Request line plus header fields; more is refused (431).
  size_t max_head_bytes = 16 * 1024;
  // Open connections; a new one beyond this closes the one waiting longest
  // for a request (or, if every one is being answered, the oldest).
  int max_connections = 64;
  // POST without a body is passed to the handler too (admin actions);
  // otherwise only GET and HEAD are.
  bool allow_post = false;
};

// Counts since start, for /metrics and tests.
struct HttpServerStats {
  uint64_t accepted = 0;
  uint64_t requests = 0;
  uint64_t open = 0;             // connections open now
  uint64_t evicted = 0;          // closed to make room for a new connection
  uint64_t header_timeouts = 0;  // request head not complete in time
  uint64_t idle_timeouts = 0;    // keep-alive connection idle too long
  uint64_t write_timeouts = 0;   // client not reading its response
  uint64_t refused = 0;          // malformed, too large, or with a body
};

// Answers one request. Runs on the server's thread, one request at a time,
// so it must not block: the admin pages render in-memory state.
using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

// A small HTTP/1.1 server: one thread polls every connection (no thread per
// client, so slow clients cost a descriptor and a buffer, never a worker).
// GET and HEAD only (405 otherwise); keep-alive and pipelining (a connection's
// requests are answered in order, the next read only after the previous
// response is written); no request bodies.
class HttpServer {
 public:
  // Serves `socket` on a thread of its own until Stop().
  static std::unique_ptr<HttpServer> Start(ListenSocket socket, HttpServerOptions options,
                                           HttpHandler handler);
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;
  ~HttpServer();

  int port() const { return port_; }
  HttpServerStats stats() const;
  // Closes the listener and every connection; waits for the thread. Idempotent.
  void Stop();

 private:
  struct Connection;
  using SteadyTime = std::chrono::steady_clock::time_point;

  HttpServer(ListenSocket socket, HttpServerOptions options, HttpHandler handler);
  void Run();
  int PollTimeoutMs(SteadyTime now) const;
  void AcceptSome(SteadyTime now);
  bool EvictOne();
  void OnReadable(Connection& conn, SteadyTime now);
  void Process(Connection& conn, SteadyTime now);
  void Respond(Connection& conn, const HttpResponse& response, bool head_only, bool keep_alive,
               SteadyTime now);
  void Flush(Connection& conn, SteadyTime now);
  void FinishWrite(Connection& conn, SteadyTime now);
  void ExpireDeadlines(SteadyTime now);
  void Close(Connection& conn);
  HttpResponse Dispatch(const HttpRequest& request);

  ListenSocket socket_;
  const HttpServerOptions options_;
  const HttpHandler handler_;
  const int port_;
  int wake_fd_ = -1;  // eventfd: Stop() wakes the poll
  std::atomic<bool> stopping_{false};
  std::thread thread_;
  // Touched only by the server's thread.
  std::vector<std::unique_ptr<Connection>> connections_;
  SteadyTime accept_paused_until_{};

  std::atomic<uint64_t> accepted_{0}, requests_{0}, open_{0}, evicted_{0}, header_timeouts_{0},
      idle_timeouts_{0}, write_timeouts_{0}, refused_{0};
};

}  // namespace holdfast
