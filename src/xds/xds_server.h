#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/generic/async_generic_service.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "src/common/metrics.h"
#include "src/common/poller.h"
#include "src/xds/first_request_deadlines.h"
#include "src/xds/listener_monitor.h"
#include "src/xds/stream.h"
#include "src/xds/tls_credentials.h"

namespace holdfast {

struct XdsServerOptions {
  std::string listen_address = "127.0.0.1:18000";
  XdsTlsOptions tls;
  // Sent in every response's control_plane.identifier.
  std::string control_plane_id = "holdfast";
  // How often the server pings idle connections, to notice dead proxies.
  // Lenient on purpose: a busy proxy host that answers a ping late must not
  // lose its stream (and refetch everything) for it.
  int keepalive_time_ms = 60'000;
  int keepalive_timeout_ms = 30'000;
  // A connection must complete its TLS handshake (if any) and send the
  // HTTP/2 preface and SETTINGS within this, or it is closed. Each one
  // holds a file descriptor until then. Generous, because a control plane
  // busy with a fleet reconnecting at once handshakes slowly.
  absl::Duration handshake_timeout = absl::Seconds(20);
  // A stream must send its first request within this, or it is ended with
  // DEADLINE_EXCEEDED; a connection with no stream open for this long is
  // closed (GOAWAY). Real proxies send their first request at once.
  absl::Duration first_request_timeout = absl::Seconds(30);
  // Streams one connection may have open at once (HTTP/2
  // SETTINGS_MAX_CONCURRENT_STREAMS): gRPC clients queue the next stream
  // until one ends; gRPC closes the connection of a client that ignores
  // the setting. Envoy opens one stream per type without ADS (nine at most)
  // and gRPC clients one or two, so this leaves room while keeping one
  // connection from holding thousands of streams.
  int max_streams_per_connection = 100;
  // Whether ClientStatusDiscoveryService (CSDS) answers on this port. It is
  // refused anyway while client identities are checked.
  bool csds = true;
  // How often the listener, the descriptors and the first-request deadlines
  // are checked.
  absl::Duration check_interval = absl::Seconds(1);
  ListenerMonitor::Options listener;
  // Where the listener's metrics go (nullptr: a registry of the server's own).
  MetricsRegistry* metrics = nullptr;
};

// Whether the xDS port accepts connections, for /readyz.
struct XdsListenerStatus {
  bool accepting = true;
  std::string detail;  // why not, while not accepting
};

// The gRPC server for xDS: ADS (state of the world and delta) and the
// per-type discovery services, all on one port. Requests are handled as raw
// bytes so that responses are assembled from shared, pre-encoded resources.
//
// Recovery of the listener: gRPC 1.51 stops accepting for good after an
// accept failure such as EMFILE (see ListenerMonitor). When the monitor says
// the listener is dead and descriptors are free again, the server shuts the
// dead listening socket down and starts a new grpc::Server (a "generation")
// on the same port with the same streams context. Older generations keep
// serving the streams they have, and are shut down once they have none.
class XdsServer {
 public:
  // Starts listening. `context` must outlive the server.
  static absl::StatusOr<std::unique_ptr<XdsServer>> Start(const XdsServerOptions& options,
                                                          const StreamContext& context);
  ~XdsServer();

  // The port actually bound (useful with port 0).
  int port() const { return port_; }
  // Stops accepting streams and ends open ones after `grace`.
  void Shutdown(absl::Duration grace);

  XdsListenerStatus ListenerStatus() const;
  // How many grpc::Server generations are running (1 until a recovery).
  size_t generations() const;
  // The TLS files' reload state (disabled without TLS).
  TlsReloadState TlsState() const { return credentials_->State(); }
  // Streams open that have not sent a request yet.
  size_t streams_awaiting_first_request() const { return first_request_.size(); }

 private:
  class Service;
  struct Generation;
  struct Metrics {
    Gauge* accepting;
    Counter* restarts;
    Gauge* generations;
    Gauge* open_fds;
    Gauge* open_fds_limit;
    Counter* first_request_timeouts;
    Gauge* awaiting_request;
  };

  XdsServer(const XdsServerOptions& options, const StreamContext& context);
  absl::StatusOr<std::unique_ptr<Generation>> StartGeneration(const std::string& address);
  void Check();
  ListenerObservation Observe() const;
  void RecordDescriptors(const DescriptorUsage& descriptors);
  void Act(ListenerAction action) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void StopListening() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void StartListening() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void EndIdleGenerations();
  std::string ListenAddress() const;

  const XdsServerOptions options_;
  const StreamContext context_;
  std::unique_ptr<MetricsRegistry> own_metrics_;
  Metrics metrics_;
  std::unique_ptr<XdsCredentials> credentials_;
  FirstRequestDeadlines first_request_;
  int port_ = 0;

  mutable absl::Mutex mu_;
  // Newest last; only the newest one listens.
  std::vector<std::unique_ptr<Generation>> generations_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<ListenerMonitor> monitor_ ABSL_GUARDED_BY(mu_);
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  Poller checker_;
};

}  // namespace holdfast
