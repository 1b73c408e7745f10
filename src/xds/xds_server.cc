#include "src/xds/xds_server.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"
#include "src/common/descriptors.h"
#include "src/common/log.h"
#include "src/xds/csds_call.h"

namespace holdfast {
namespace {

struct Method {
  absl::string_view path;
  bool delta;
  absl::string_view type_url;  // empty: ADS, any type
  absl::string_view kind;      // for metrics and /debug/proxies
};

constexpr absl::string_view kAds = "";
constexpr absl::string_view kScopedRoutes =
    "type.googleapis.com/envoy.config.route.v3.ScopedRouteConfiguration";
constexpr absl::string_view kVirtualHost = "type.googleapis.com/envoy.config.route.v3.VirtualHost";
constexpr absl::string_view kExtensionConfig =
    "type.googleapis.com/envoy.config.core.v3.TypedExtensionConfig";

constexpr Method kMethods[] = {
    {"/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources", false,
     kAds, "ads-sotw"},
    {"/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources", true, kAds,
     "ads-delta"},
    {"/envoy.service.listener.v3.ListenerDiscoveryService/StreamListeners", false,
     type_url::kListener, "lds-sotw"},
    {"/envoy.service.listener.v3.ListenerDiscoveryService/DeltaListeners", true,
     type_url::kListener, "lds-delta"},
    {"/envoy.service.route.v3.RouteDiscoveryService/StreamRoutes", false,
     type_url::kRouteConfiguration, "rds-sotw"},
    {"/envoy.service.route.v3.RouteDiscoveryService/DeltaRoutes", true,
     type_url::kRouteConfiguration, "rds-delta"},
    {"/envoy.service.cluster.v3.ClusterDiscoveryService/StreamClusters", false, type_url::kCluster,
     "cds-sotw"},
    {"/envoy.service.cluster.v3.ClusterDiscoveryService/DeltaClusters", true, type_url::kCluster,
     "cds-delta"},
    {"/envoy.service.endpoint.v3.EndpointDiscoveryService/StreamEndpoints", false,
     type_url::kClusterLoadAssignment, "eds-sotw"},
    {"/envoy.service.endpoint.v3.EndpointDiscoveryService/DeltaEndpoints", true,
     type_url::kClusterLoadAssignment, "eds-delta"},
    {"/envoy.service.secret.v3.SecretDiscoveryService/StreamSecrets", false, type_url::kSecret,
     "sds-sotw"},
    {"/envoy.service.secret.v3.SecretDiscoveryService/DeltaSecrets", true, type_url::kSecret,
     "sds-delta"},
    {"/envoy.service.runtime.v3.RuntimeDiscoveryService/StreamRuntime", false, type_url::kRuntime,
     "rtds-sotw"},
    {"/envoy.service.runtime.v3.RuntimeDiscoveryService/DeltaRuntime", true, type_url::kRuntime,
     "rtds-delta"},
    {"/envoy.service.route.v3.ScopedRoutesDiscoveryService/StreamScopedRoutes", false,
     kScopedRoutes, "srds-sotw"},
    {"/envoy.service.route.v3.ScopedRoutesDiscoveryService/DeltaScopedRoutes", true, kScopedRoutes,
     "srds-delta"},
    {"/envoy.service.route.v3.VirtualHostDiscoveryService/DeltaVirtualHosts", true, kVirtualHost,
     "vhds-delta"},
    {"/envoy.service.extension.v3.ExtensionConfigDiscoveryService/StreamExtensionConfigs", false,
     kExtensionConfig, "ecds-sotw"},
    {"/envoy.service.extension.v3.ExtensionConfigDiscoveryService/DeltaExtensionConfigs", true,
     kExtensionConfig, "ecds-delta"},
};

// Ends a call at once with an error.
class Refused : public grpc::ServerGenericBidiReactor {
 public:
  Refused(grpc::StatusCode code, const std::string& message) {
    Finish(grpc::Status(code, message));
  }
  void OnDone() override { delete this; }
};

// Ends a call to a method this server does not implement.
class Unimplemented : public Refused {
 public:
  explicit Unimplemented(const std::string& method)
      : Refused(grpc::StatusCode::UNIMPLEMENTED,
                absl::StrCat("holdfast does not implement ", method)) {}
};

// gRPC takes durations as int milliseconds.
int ChannelArgMs(absl::Duration duration) {
  return static_cast<int>(std::clamp<int64_t>(absl::ToInt64Milliseconds(duration), 1, INT_MAX));
}

}  // namespace

class XdsServer::Service : public grpc::CallbackGenericService {
 public:
  Service(const StreamContext& context, bool csds) : context_(context), csds_(csds) {}

  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* ctx) override {
    const bool fetch = ctx->method() == CsdsCall::kFetchMethod;
    if (fetch || ctx->method() == CsdsCall::kStreamMethod) return StartCsds(fetch);
    for (const Method& method : kMethods) {
      if (ctx->method() != method.path) continue;
      // The certificate is read only when identities are checked.
      PeerCertificate cert;
      if (context_.identity != nullptr && context_.identity->enabled()) {
        cert = PeerCertificateFrom(*ctx->auth_context());
      }
      return XdsStream::Start(context_, std::string(method.kind),
                              method.delta ? &MakeDeltaProtocol : &MakeSotwProtocol,
                              std::string(method.type_url), ctx->peer(), std::move(cert));
    }
    return new Unimplemented(ctx->method());
  }

 private:
  grpc::ServerGenericBidiReactor* StartCsds(bool fetch) {
    // Every proxy's configuration is not for every proxy to read: where
    // certificates prove identities, CSDS is off (the admin endpoint, with
    // its token, answers the same questions).
    if (!csds_ || (context_.identity != nullptr && context_.identity->enabled())) {
      return new Refused(grpc::StatusCode::PERMISSION_DENIED,
                         csds_ ? "CSDS is not served while --xds-client-identity is on"
                               : "CSDS is turned off (--xds-csds=false)");
    }
    return new CsdsCall(context_.proxies, /*streaming=*/!fetch);
  }

  const StreamContext context_;
  const bool csds_;
};

// One grpc::Server on the xDS port, and the streams it serves.
struct XdsServer::Generation {
  int number = 0;
  int port = 0;
  // Its listening sockets' inodes, to watch their accept queue and to shut
  // down only them.
  std::vector<ino_t> listening_inodes;
  StreamCount open_streams;
  std::unique_ptr<Service> service;
  std::unique_ptr<grpc::Server> server;
};

XdsServer::XdsServer(const XdsServerOptions& options, const StreamContext& context)
    : options_(options),
      context_(context),
      first_request_(options.first_request_timeout, *context.clock) {
  MetricsRegistry* registry = options.metrics;
  if (registry == nullptr) {
    own_metrics_ = std::make_unique<MetricsRegistry>();
    registry = own_metrics_.get();
  }
  metrics_ = Metrics{
      registry->GetGauge("holdfast_xds_accepting",
                         "1 while the xDS port accepts connections, 0 while it does not"),
      registry->GetCounter("holdfast_xds_listener_restarts_total",
                           "New xDS listeners started after one stopped accepting"),
      registry->GetGauge("holdfast_xds_listener_generations",
                         "gRPC servers on the xDS port: the listening one and older ones still "
                         "serving their streams"),
      registry->GetGauge("holdfast_open_fds", "File descriptors open in this process"),
      registry->GetGauge("holdfast_open_fds_limit",
                         "The process's open-files limit (RLIMIT_NOFILE soft limit)"),
      registry->GetCounter("holdfast_xds_first_request_timeouts_total",
                           "xDS streams ended because they sent no request in time"),
      registry->GetGauge("holdfast_xds_streams_awaiting_request",
                         "xDS streams open that have not sent a request yet (not proxies yet)"),
  };
  first_request_.CountEndsIn(metrics_.first_request_timeouts);
}

absl::StatusOr<std::unique_ptr<XdsServer>> XdsServer::Start(const XdsServerOptions& options,
                                                            const StreamContext& context) {
  auto server = std::unique_ptr<XdsServer>(new XdsServer(options, context));
  MetricsRegistry* metrics =
      options.metrics != nullptr ? options.metrics : server->own_metrics_.get();
  absl::StatusOr<std::unique_ptr<XdsCredentials>> credentials =
      XdsCredentials::Create(options.tls, *context.clock, metrics);
  if (!credentials.ok()) return credentials.status();
  server->credentials_ = *std::move(credentials);
  const ListenerObservation before = server->Observe();
  absl::StatusOr<std::unique_ptr<Generation>> first =
      server->StartGeneration(options.listen_address);
  if (!first.ok()) return first.status();
  server->port_ = (*first)->port;
  {
    absl::MutexLock lock(&server->mu_);
    server->generations_.push_back(std::move(*first));
    server->monitor_ = std::make_unique<ListenerMonitor>(options.listener, before);
  }
  server->metrics_.accepting->Set(1);
  server->metrics_.generations->Set(1);
  server->RecordDescriptors(before.descriptors);
  XdsServer* raw = server.get();
  server->checker_.Start(options.check_interval, [raw] { raw->Check(); });
  return server;
}

absl::StatusOr<std::unique_ptr<XdsServer::Generation>> XdsServer::StartGeneration(
    const std::string& address) {
  auto generation = std::make_unique<Generation>();
  StreamContext context = context_;
  context.first_request = &first_request_;
  context.open_streams = &generation->open_streams;
  generation->service = std::make_unique<Service>(context, options_.csds);

  grpc::ServerBuilder builder;
  builder.AddListeningPort(address, credentials_->server_credentials(), &generation->port);
  builder.RegisterCallbackGenericService(generation->service.get());
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, options_.keepalive_time_ms);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, options_.keepalive_timeout_ms);
  // Proxies may ping us as often as every 10 s without being told off.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10'000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  // What proxies send us is requests and ACKs, a few KB at a time; probing
  // the bandwidth-delay product to grow our receive window for them would
  // cost a PING round trip on many of the fleet's ACKs and buy nothing.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  // In gRPC 1.51 this covers the TLS handshake and waiting for the client's
  // HTTP/2 SETTINGS: a silent TCP connection is closed when it expires
  // (default two minutes).
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS,
                             ChannelArgMs(options_.handshake_timeout));
  // A connection that completed HTTP/2 but never opens a stream, or has had
  // none open for as long (gRPC sends GOAWAY, then closes it).
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS,
                             ChannelArgMs(options_.first_request_timeout));
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, options_.max_streams_per_connection);
  builder.SetMaxReceiveMessageSize(16 << 20);
  generation->server = builder.BuildAndStart();
  if (generation->server == nullptr || generation->port == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen for xDS on ", address));
  }
  for (const ListeningSocket& socket : FindListeningSockets(generation->port)) {
    generation->listening_inodes.push_back(socket.inode);
  }
  return generation;
}

ListenerObservation XdsServer::Observe() const {
  ListenerObservation observation;
  observation.now = context_.clock->Monotonic();
  observation.failures = AcceptFailuresSoFar();
  observation.descriptors = CountOpenDescriptors();
  absl::MutexLock lock(&mu_);
  if (!generations_.empty() && !generations_.back()->listening_inodes.empty()) {
    observation.queued = AcceptQueueLength(generations_.back()->listening_inodes);
  }
  return observation;
}

void XdsServer::Check() {
  credentials_->CheckFiles();
  first_request_.ExpireOverdue();  // each stream ended is counted as it ends
  metrics_.awaiting_request->Set(static_cast<double>(first_request_.size()));
  const ListenerObservation observation = Observe();
  RecordDescriptors(observation.descriptors);
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_) return;
    const bool was_accepting = monitor_->state(observation.now).accepting;
    const ListenerAction action = monitor_->Observe(observation);
    const ListenerState state = monitor_->state(observation.now);
    if (was_accepting && !state.accepting) {
      LogWarning("xds: port %d is %s", port_, state.detail);
    }
    Act(action);
    metrics_.accepting->Set(monitor_->state(observation.now).accepting ? 1 : 0);
  }
  EndIdleGenerations();
}

void XdsServer::RecordDescriptors(const DescriptorUsage& descriptors) {
  metrics_.open_fds->Set(static_cast<double>(descriptors.open));
  metrics_.open_fds_limit->Set(static_cast<double>(descriptors.limit));
}

void XdsServer::Act(ListenerAction action) {
  switch (action) {
    case ListenerAction::kNone:
      return;
    case ListenerAction::kStopListening:
      StopListening();
      return;
    case ListenerAction::kStartListening:
      StartListening();
      return;
  }
}

void XdsServer::StopListening() {
  const Generation& current = *generations_.back();
  for (const ListeningSocket& socket : FindListeningSockets(port_)) {
    // Only this generation's sockets; none found at its start: any on the port.
    if (!current.listening_inodes.empty() &&
        std::find(current.listening_inodes.begin(), current.listening_inodes.end(), socket.inode) ==
            current.listening_inodes.end()) {
      continue;
    }
    // SHUT_RD on a listening socket stops it listening (the kernel resets
    // the connections queued on it, whose clients then retry), so that the
    // port's connections go to the next listener only. The descriptor stays
    // gRPC's, closed when its server shuts down.
    if (shutdown(socket.fd, SHUT_RD) != 0) {
      LogWarning("xds: cannot shut down listening socket %d: %s", socket.fd, strerror(errno));
      continue;
    }
    LogInfo("xds: shut down the listening socket of port %d that stopped accepting", port_);
  }
}

void XdsServer::StartListening() {
  const uint64_t failures_before = AcceptFailuresSoFar().count;
  absl::StatusOr<std::unique_ptr<Generation>> next = StartGeneration(ListenAddress());
  if (!next.ok()) {
    monitor_->StartFailed(next.status().message());
    LogWarning("xds: %s; trying again in %s", next.status().message(),
               absl::FormatDuration(options_.check_interval));
    return;
  }
  (*next)->number = generations_.back()->number + 1;
  LogInfo(
      "xds: port %d accepts connections again (listener %d; streams opened before keep being "
      "served by the earlier ones)",
      port_, (*next)->number);
  generations_.push_back(std::move(*next));
  monitor_->Started(failures_before);
  metrics_.restarts->Increment();
  metrics_.generations->Set(static_cast<double>(generations_.size()));
}

void XdsServer::EndIdleGenerations() {
  std::vector<std::unique_ptr<Generation>> idle;
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_ || generations_.size() < 2) return;
    auto listening = std::prev(generations_.end());
    for (auto it = generations_.begin(); it != listening;) {
      if ((*it)->open_streams.open() > 0) {
        ++it;
        continue;
      }
      idle.push_back(std::move(*it));
      it = generations_.erase(it);
      listening = std::prev(generations_.end());
    }
    metrics_.generations->Set(static_cast<double>(generations_.size()));
  }
  // Outside mu_: Wait() returns when the generation's last callback has.
  // A stream opened on one of its connections meanwhile is cancelled, and
  // its client reconnects to the listening generation.
  for (const std::unique_ptr<Generation>& generation : idle) {
    generation->server->Shutdown(std::chrono::system_clock::now());
    generation->server->Wait();
    generation->open_streams.AwaitNone();
    LogInfo("xds: ended listener %d of port %d, whose streams have all ended", generation->number,
            port_);
  }
}

std::string XdsServer::ListenAddress() const {
  const std::string& address = options_.listen_address;
  return absl::StrCat(address.substr(0, address.rfind(':')), ":", port_);
}

XdsListenerStatus XdsServer::ListenerStatus() const {
  absl::MutexLock lock(&mu_);
  if (monitor_ == nullptr || shut_down_) return {};
  ListenerState state = monitor_->state(context_.clock->Monotonic());
  if (state.accepting) return {};
  return {false, absl::StrCat("xDS port ", port_, " is ", state.detail)};
}

size_t XdsServer::generations() const {
  absl::MutexLock lock(&mu_);
  return generations_.size();
}

XdsServer::~XdsServer() { Shutdown(absl::ZeroDuration()); }

void XdsServer::Shutdown(absl::Duration grace) {
  checker_.Stop();
  std::vector<std::unique_ptr<Generation>> generations;
  {
    absl::MutexLock lock(&mu_);
    shut_down_ = true;
    generations.swap(generations_);
  }
  const auto deadline = std::chrono::system_clock::now() + absl::ToChronoMilliseconds(grace);
  for (const std::unique_ptr<Generation>& generation : generations) {
    generation->server->Shutdown(deadline);
  }
  for (const std::unique_ptr<Generation>& generation : generations) {
    generation->server->Wait();
    generation->open_streams.AwaitNone();
  }
}

}  // namespace holdfast
