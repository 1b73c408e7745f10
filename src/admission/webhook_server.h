#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "src/admin/listen_socket.h"
#include "src/common/metrics.h"

namespace holdfast {

struct WebhookOptions {
  std::string listen_address;  // HOST:PORT; port 0 picks one
  std::string cert_file;       // PEM serving certificate (chain) and key,
  std::string key_file;        // re-read when the files change
  // The API server calls with a timeout of its own (timeoutSeconds, at most
  // 30 s); a connection that has not sent its review by then is cut.
  absl::Duration request_deadline = absl::Seconds(10);
  int max_connections = 16;
  size_t max_request_bytes = 4 << 20;  // an object is at most ~1.5 MB in etcd
};

// The validating admission webhook (admission.k8s.io/v1, HTTPS): POST
// /validate with an AdmissionReview, answered by ReviewAdmission. Only the
// API server calls it, and rarely, so each connection gets a thread of its
// own, bounded by max_connections (more are closed at once) and cut at the
// request deadline. Serves one request per connection.
class WebhookServer {
 public:
  // Reads the certificate and key (failing with what is wrong with them),
  // binds and starts accepting.
  static absl::StatusOr<std::unique_ptr<WebhookServer>> Start(WebhookOptions options,
                                                              MetricsRegistry* metrics);
  ~WebhookServer();
  int port() const { return socket_.port(); }
  // Stops accepting and waits for connections in progress. Idempotent.
  void Stop();

 private:
  struct Tls;
  WebhookServer(WebhookOptions options, ListenSocket socket, MetricsRegistry* metrics);
  void AcceptLoop();
  void Serve(int fd);

  const WebhookOptions options_;
  ListenSocket socket_;
  std::unique_ptr<Tls> tls_;
  Counter* reviews_;
  Counter* denied_;
  Counter* refused_;
  int stop_fd_ = -1;
  std::thread acceptor_;
  // Connection threads, joined once done (and all at Stop()). Only the
  // acceptor thread and Stop() touch the list.
  struct Worker {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  void JoinFinished(bool all);
  std::vector<Worker> workers_;
  bool stopped_ = false;
};

}  // namespace holdfast
