#include "src/admin/http_server.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <exception>
#include <limits>

#include "absl/strings/str_cat.h"

namespace holdfast {

// What a connection is waiting for. Every phase has a deadline, so no client
// holds a connection longer than the limits allow.
enum class Phase {
  kAwaiting,  // no byte of the next request yet (new, or keep-alive idle)
  kReading,   // part of a request head has arrived
  kWriting,   // a response is being written; nothing more is read
  kDraining,  // closed for writing after a final response; input discarded
};

struct HttpServer::Connection {
  int fd = -1;
  Phase phase = Phase::kAwaiting;
  SteadyTime since;     // when the connection entered its phase
  SteadyTime deadline;  // when the phase's limit runs out
  std::string in;       // bytes read and not yet parsed (at most max_head_bytes + 1)
  std::string out;      // the response being written
  size_t written = 0;
  bool close_after_write = false;
  bool fresh = true;  // no request answered yet
};

namespace {

using Steady = std::chrono::steady_clock;

// A new connection may take only this many accepts per poll, so that
// requests already read are served between bursts of connections.
constexpr int kAcceptBatch = 16;
// After a final response, how long a client's unread input is discarded
// before the close: closing with unread input sends a reset, which can
// destroy the response before the client reads it (a lingering close).
constexpr auto kDrainTime = std::chrono::seconds(1);
// Out of descriptors with nothing to evict: accept again after this.
constexpr auto kAcceptPause = std::chrono::milliseconds(100);

Steady::duration ToSteady(absl::Duration d) { return absl::ToChronoNanoseconds(d); }

bool WouldBlock(int error) { return error == EAGAIN || error == EWOULDBLOCK || error == EINTR; }

}  // namespace

std::unique_ptr<HttpServer> HttpServer::Start(ListenSocket socket, HttpServerOptions options,
                                              HttpHandler handler) {
  auto server =
      std::unique_ptr<HttpServer>(new HttpServer(std::move(socket), options, std::move(handler)));
  server->thread_ = std::thread([raw = server.get()] { raw->Run(); });
  return server;
}

HttpServer::HttpServer(ListenSocket socket, HttpServerOptions options, HttpHandler handler)
    : socket_(std::move(socket)),
      options_(options),
      handler_(std::move(handler)),
      port_(socket_.port()),
      wake_fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}

HttpServer::~HttpServer() {
  Stop();
  if (wake_fd_ >= 0) close(wake_fd_);
}

void HttpServer::Stop() {
  if (!stopping_.exchange(true)) {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof(one));
  }
  if (thread_.joinable()) thread_.join();
}

HttpServerStats HttpServer::stats() const {
  return HttpServerStats{.accepted = accepted_.load(),
                         .requests = requests_.load(),
                         .open = open_.load(),
                         .evicted = evicted_.load(),
                         .header_timeouts = header_timeouts_.load(),
                         .idle_timeouts = idle_timeouts_.load(),
                         .write_timeouts = write_timeouts_.load(),
                         .refused = refused_.load()};
}

void HttpServer::Run() {
  std::vector<pollfd> fds;
  while (!stopping_.load()) {
    SteadyTime now = Steady::now();
    fds.clear();
    fds.push_back({wake_fd_, POLLIN, 0});
    bool listening = now >= accept_paused_until_;
    fds.push_back({listening ? socket_.fd() : -1, POLLIN, 0});
    for (const auto& conn : connections_) {
      fds.push_back(
          {conn->fd, static_cast<short>(conn->phase == Phase::kWriting ? POLLOUT : POLLIN), 0});
    }
    if (poll(fds.data(), fds.size(), PollTimeoutMs(now)) < 0 && errno != EINTR) break;
    now = Steady::now();
    // Connections first: a new connection may evict an old one.
    size_t polled = connections_.size();
    for (size_t i = 0; i < polled; ++i) {
      Connection& conn = *connections_[i];
      short revents = fds[i + 2].revents;
      if (conn.fd < 0 || revents == 0) continue;
      if (conn.phase == Phase::kWriting) {
        Flush(conn, now);
        // A pipelined request may already be buffered.
        if (conn.fd >= 0 && conn.phase == Phase::kAwaiting) Process(conn, now);
      } else {
        OnReadable(conn, now);
      }
    }
    if (fds[1].revents & POLLIN) AcceptSome(now);
    ExpireDeadlines(Steady::now());
    std::erase_if(connections_, [](const auto& conn) { return conn->fd < 0; });
  }
  for (auto& conn : connections_) Close(*conn);
  connections_.clear();
  close(socket_.Release());
}

int HttpServer::PollTimeoutMs(SteadyTime now) const {
  SteadyTime next = now + std::chrono::seconds(60);
  for (const auto& conn : connections_) next = std::min(next, conn->deadline);
  if (now < accept_paused_until_) next = std::min(next, accept_paused_until_);
  if (next <= now) return 0;
  // Round up: waking a little late is fine, spinning before a deadline is not.
  auto ms = std::chrono::ceil<std::chrono::milliseconds>(next - now).count();
  return static_cast<int>(std::min<int64_t>(ms, std::numeric_limits<int>::max()));
}

void HttpServer::AcceptSome(SteadyTime now) {
  for (int i = 0; i < kAcceptBatch; ++i) {
    int fd = accept4(socket_.fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // Free a descriptor for the waiting client; if there is none of
        // ours to free, do not spin on a listener that stays readable.
        if (EvictOne()) continue;
        accept_paused_until_ = now + kAcceptPause;
      }
      if (errno == ECONNABORTED || errno == EPROTO) continue;
      return;
    }
    if (static_cast<int>(open_.load()) >= options_.max_connections) EvictOne();
    auto conn = std::make_unique<Connection>();
    conn->fd = fd;
    conn->since = now;
    // A new connection gets the head deadline, not the idle one: a client
    // that connects has a request to send.
    conn->deadline = now + ToSteady(options_.header_timeout);
    accepted_.fetch_add(1);
    open_.fetch_add(1);
    connections_.push_back(std::move(conn));
    // The request often arrives with the connection: serve it now, before
    // later connections could evict this one.
    OnReadable(*connections_.back(), now);
  }
}

bool HttpServer::EvictOne() {
  // Rank: draining (already answered) first, then waiting for a request,
  // then being written; the oldest within a rank.
  auto rank = [](const Connection& conn) {
    switch (conn.phase) {
      case Phase::kDraining:
        return 0;
      case Phase::kAwaiting:
      case Phase::kReading:
        return 1;
      case Phase::kWriting:
        return 2;
    }
    return 2;
  };
  Connection* victim = nullptr;
  for (auto& conn : connections_) {
    if (conn->fd < 0) continue;
    if (victim == nullptr || rank(*conn) < rank(*victim) ||
        (rank(*conn) == rank(*victim) && conn->since < victim->since)) {
      victim = conn.get();
    }
  }
  if (victim == nullptr) return false;
  if (victim->phase != Phase::kDraining) evicted_.fetch_add(1);
  Close(*victim);
  return true;
}

void HttpServer::OnReadable(Connection& conn, SteadyTime now) {
  char buffer[8192];
  size_t room = conn.phase == Phase::kDraining
                    ? sizeof(buffer)
                    : std::min(sizeof(buffer), options_.max_head_bytes + 1 - conn.in.size());
  ssize_t n = recv(conn.fd, buffer, room, 0);
  if (n < 0 && WouldBlock(errno)) return;
  if (n <= 0) {
    Close(conn);  // the client closed, or the connection failed
    return;
  }
  if (conn.phase == Phase::kDraining) return;
  conn.in.append(buffer, n);
  Process(conn, now);
}

void HttpServer::Process(Connection& conn, SteadyTime now) {
  while (conn.fd >= 0 && (conn.phase == Phase::kAwaiting || conn.phase == Phase::kReading)) {
    if (conn.in.empty()) return;
    if (conn.phase == Phase::kAwaiting) {
      conn.phase = Phase::kReading;
      // A fresh connection's deadline already runs from its accept.
      if (!conn.fresh) {
        conn.since = now;
        conn.deadline = now + ToSteady(options_.header_timeout);
      }
    }
    HttpParse parse = ParseRequestHead(conn.in, options_.max_head_bytes);
    if (parse.state == HttpParse::State::kIncomplete) return;
    if (parse.state == HttpParse::State::kError) {
      refused_.fetch_add(1);
      Respond(conn, HttpResponse::Text(parse.error_status, parse.error + "\n"), false, false, now);
      return;
    }
    conn.in.erase(0, parse.consumed);
    requests_.fetch_add(1);
    const HttpRequest& request = parse.request;
    Respond(conn, Dispatch(request), request.method == "HEAD", request.KeepAlive(), now);
  }
}

HttpResponse HttpServer::Dispatch(const HttpRequest& request) {
  const bool allowed = request.method == "GET" || request.method == "HEAD" ||
                       (options_.allow_post && request.method == "POST");
  if (!allowed) {
    HttpResponse response = HttpResponse::Text(
        405, options_.allow_post ? "only GET, HEAD and POST\n" : "only GET and HEAD\n");
    response.headers.emplace_back("Allow", options_.allow_post ? "GET, HEAD, POST" : "GET, HEAD");
    return response;
  }
  try {
    return handler_(request);
  } catch (const std::exception& e) {
    return HttpResponse::Text(500, absl::StrCat("internal error: ", e.what(), "\n"));
  }
}

void HttpServer::Respond(Connection& conn, const HttpResponse& response, bool head_only,
                         bool keep_alive, SteadyTime now) {
  conn.out = SerializeResponse(response, head_only, keep_alive);
  conn.written = 0;
  conn.close_after_write = !keep_alive;
  conn.phase = Phase::kWriting;
  conn.fresh = false;
  conn.since = now;
  conn.deadline = now + ToSteady(options_.write_timeout);
  Flush(conn, now);
}

void HttpServer::Flush(Connection& conn, SteadyTime now) {
  while (conn.written < conn.out.size()) {
    ssize_t n =
        send(conn.fd, conn.out.data() + conn.written, conn.out.size() - conn.written, MSG_NOSIGNAL);
    if (n < 0 && WouldBlock(errno)) return;
    if (n <= 0) {
      Close(conn);
      return;
    }
    conn.written += n;
    // The limit is on a client taking nothing, not on a big page's total.
    conn.deadline = now + ToSteady(options_.write_timeout);
  }
  FinishWrite(conn, now);
}

void HttpServer::FinishWrite(Connection& conn, SteadyTime now) {
  conn.out.clear();
  conn.written = 0;
  conn.since = now;
  if (conn.close_after_write) {
    shutdown(conn.fd, SHUT_WR);
    conn.in.clear();
    conn.phase = Phase::kDraining;
    conn.deadline = now + kDrainTime;
    return;
  }
  conn.phase = Phase::kAwaiting;
  conn.deadline = now + ToSteady(options_.idle_timeout);
}

void HttpServer::ExpireDeadlines(SteadyTime now) {
  for (auto& conn : connections_) {
    if (conn->fd < 0 || now < conn->deadline) continue;
    switch (conn->phase) {
      case Phase::kAwaiting:
        // A fresh connection that sent nothing is as slow as a slow head.
        (conn->fresh ? header_timeouts_ : idle_timeouts_).fetch_add(1);
        break;
      case Phase::kReading: {
        header_timeouts_.fetch_add(1);
        // Best effort, one try: the client gets no more of our time.
        std::string timeout = SerializeResponse(
            HttpResponse::Text(408, "request head not received in time\n"), false, false);
        [[maybe_unused]] ssize_t n = send(conn->fd, timeout.data(), timeout.size(), MSG_NOSIGNAL);
        break;
      }
      case Phase::kWriting:
        write_timeouts_.fetch_add(1);
        break;
      case Phase::kDraining:
        break;
    }
    Close(*conn);
  }
}

void HttpServer::Close(Connection& conn) {
  if (conn.fd < 0) return;
  close(conn.fd);
  conn.fd = -1;
  conn.in.clear();
  conn.out.clear();
  open_.fetch_sub(1);
}

}  // namespace holdfast
