#include "src/admission/webhook_server.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <optional>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "src/admin/http_message.h"
#include "src/admission/admission_review.h"
#include "src/common/log.h"

namespace holdfast {
namespace {

std::string OpenSslError() {
  unsigned long code = ERR_get_error();
  ERR_clear_error();
  char text[256] = "unknown error";
  if (code != 0) ERR_error_string_n(code, text, sizeof(text));
  return text;
}

// What identifies a file's content without reading it.
std::string Fingerprint(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return "";
  return absl::StrCat(st.st_ino, ":", st.st_size, ":", st.st_mtim.tv_sec, ".", st.st_mtim.tv_nsec);
}

absl::StatusOr<SSL_CTX*> LoadContext(const WebhookOptions& options) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) return absl::InternalError(OpenSslError());
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  if (SSL_CTX_use_certificate_chain_file(ctx, options.cert_file.c_str()) != 1) {
    SSL_CTX_free(ctx);
    return absl::InvalidArgumentError(
        absl::StrCat("--webhook-cert ", options.cert_file, ": ", OpenSslError()));
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, options.key_file.c_str(), SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_check_private_key(ctx) != 1) {
    SSL_CTX_free(ctx);
    return absl::InvalidArgumentError(
        absl::StrCat("--webhook-key ", options.key_file, ": ", OpenSslError()));
  }
  return ctx;
}

constexpr size_t kMaxHeadBytes = 16 << 10;

// Reads one request, head and body, with the admin endpoint's parser; on a
// refusal sets *error_status (0: the peer closed, timed out or broke).
std::optional<std::pair<HttpRequest, std::string>> ReadRequest(SSL* ssl, size_t max_body_bytes,
                                                               int* error_status) {
  std::string data;
  char buffer[16 << 10];
  HttpParse head;
  while (true) {
    if (head.state == HttpParse::State::kIncomplete) {
      head = ParseRequestHead(data, kMaxHeadBytes, max_body_bytes);
      if (head.state == HttpParse::State::kError)
        return *error_status = head.error_status, std::nullopt;
    }
    if (head.state == HttpParse::State::kComplete &&
        data.size() >= head.consumed + head.request.content_length) {
      return std::pair(head.request, data.substr(head.consumed, head.request.content_length));
    }
    int n = SSL_read(ssl, buffer, sizeof(buffer));
    if (n <= 0) return *error_status = 0, std::nullopt;
    data.append(buffer, n);
  }
}

void Respond(SSL* ssl, int status, std::string body) {
  HttpResponse response;
  response.status = status;
  response.content_type = "application/json";
  response.body = std::move(body);
  const std::string bytes = SerializeResponse(response, /*head_only=*/false, /*keep_alive=*/false);
  SSL_write(ssl, bytes.data(), static_cast<int>(bytes.size()));
}

}  // namespace

// The serving context, re-read when the certificate or key file changes
// (cert-manager rotates them in place); a failed reload keeps the old one.
struct WebhookServer::Tls {
  absl::Mutex mu;
  SSL_CTX* ctx ABSL_GUARDED_BY(mu) = nullptr;
  std::string fingerprint ABSL_GUARDED_BY(mu);

  ~Tls() { SSL_CTX_free(ctx); }

  // A new SSL for one connection.
  SSL* NewSsl(const WebhookOptions& options) {
    absl::MutexLock lock(&mu);
    std::string now = Fingerprint(options.cert_file) + "|" + Fingerprint(options.key_file);
    if (now != fingerprint) {
      absl::StatusOr<SSL_CTX*> fresh = LoadContext(options);
      if (fresh.ok()) {
        SSL_CTX_free(ctx);
        ctx = *fresh;
        LogInfo("webhook: serving certificate %s loaded", options.cert_file);
      } else {
        LogWarning("webhook: %s; keeping the previous certificate", fresh.status().message());
      }
      fingerprint = now;
    }
    return SSL_new(ctx);  // holds its own reference to ctx
  }
};

absl::StatusOr<std::unique_ptr<WebhookServer>> WebhookServer::Start(WebhookOptions options,
                                                                    MetricsRegistry* metrics) {
  absl::StatusOr<SSL_CTX*> ctx = LoadContext(options);
  if (!ctx.ok()) return ctx.status();
  absl::StatusOr<ListenSocket> socket = ListenSocket::Open(options.listen_address);
  if (!socket.ok()) {
    SSL_CTX_free(*ctx);
    return socket.status();
  }
  auto server = std::unique_ptr<WebhookServer>(
      new WebhookServer(std::move(options), *std::move(socket), metrics));
  {
    absl::MutexLock lock(&server->tls_->mu);
    server->tls_->ctx = *ctx;
    server->tls_->fingerprint =
        Fingerprint(server->options_.cert_file) + "|" + Fingerprint(server->options_.key_file);
  }
  server->acceptor_ = std::thread([s = server.get()] { s->AcceptLoop(); });
  return server;
}

WebhookServer::WebhookServer(WebhookOptions options, ListenSocket socket, MetricsRegistry* metrics)
    : options_(std::move(options)),
      socket_(std::move(socket)),
      tls_(std::make_unique<Tls>()),
      reviews_(metrics->GetCounter("holdfast_webhook_reviews_total",
                                   "Admission reviews answered by the validating webhook")),
      denied_(metrics->GetCounter("holdfast_webhook_denied_total",
                                  "Admission reviews the webhook denied")),
      refused_(metrics->GetCounter("holdfast_webhook_connections_refused_total",
                                   "Webhook connections closed at once: too many open")),
      stop_fd_(eventfd(0, EFD_CLOEXEC)) {}

WebhookServer::~WebhookServer() { Stop(); }

void WebhookServer::AcceptLoop() {
  while (true) {
    pollfd fds[2] = {{socket_.fd(), POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) continue;
    if (fds[1].revents != 0) return;
    int fd = accept4(socket_.fd(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    JoinFinished(/*all=*/false);
    if (static_cast<int>(workers_.size()) >= options_.max_connections) {
      refused_->Increment();
      close(fd);
      continue;
    }
    auto done = std::make_shared<std::atomic<bool>>(false);
    workers_.push_back({std::thread([this, fd, done] {
                          Serve(fd);
                          close(fd);
                          *done = true;
                        }),
                        done});
  }
}

void WebhookServer::JoinFinished(bool all) {
  for (auto it = workers_.begin(); it != workers_.end();) {
    if (!all && !*it->done) {
      ++it;
      continue;
    }
    it->thread.join();
    it = workers_.erase(it);
  }
}

void WebhookServer::Serve(int fd) {
  // Every read and write waits at most the request deadline.
  const int64_t micros = absl::ToInt64Microseconds(options_.request_deadline);
  timeval timeout{static_cast<time_t>(micros / 1'000'000),
                  static_cast<suseconds_t>(micros % 1'000'000)};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  SSL* ssl = tls_->NewSsl(options_);
  if (ssl == nullptr) return;
  SSL_set_fd(ssl, fd);
  if (SSL_accept(ssl) == 1) {
    int error_status = 0;
    auto request = ReadRequest(ssl, options_.max_request_bytes, &error_status);
    if (!request.has_value()) {
      if (error_status != 0) Respond(ssl, error_status, "{}");
    } else if (request->first.path != "/validate" || request->first.method != "POST") {
      Respond(ssl, 404, "{}");
    } else {
      nlohmann::json review = nlohmann::json::parse(request->second, nullptr, false);
      nlohmann::json answer = ReviewAdmission(review);
      reviews_->Increment();
      if (!answer["response"].value("allowed", false)) denied_->Increment();
      Respond(ssl, 200, answer.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    }
    SSL_shutdown(ssl);
  }
  ERR_clear_error();
  SSL_free(ssl);
}

void WebhookServer::Stop() {
  if (stopped_) return;
  stopped_ = true;
  uint64_t one = 1;
  (void)!write(stop_fd_, &one, sizeof(one));
  if (acceptor_.joinable()) acceptor_.join();
  JoinFinished(/*all=*/true);  // each ends by its request deadline
  close(stop_fd_);
}

}  // namespace holdfast
