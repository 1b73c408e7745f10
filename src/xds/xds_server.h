#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/generic/async_generic_service.h"
#include "grpcpp/server.h"
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
};

// The gRPC server for xDS: ADS (state of the world and delta) and the
// per-type discovery services, all on one port. Requests are handled as raw
// bytes so that responses are assembled from shared, pre-encoded resources.
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

 private:
  class Service;
  XdsServer() = default;

  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

}  // namespace holdfast
