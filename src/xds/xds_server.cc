#include "src/xds/xds_server.h"

#include "absl/strings/str_cat.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"
#include "src/common/log.h"

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
    {"/envoy.service.route.v3.ScopedRoutesDiscoveryService/DeltaScopedRoutes", true,
     kScopedRoutes, "srds-delta"},
    {"/envoy.service.route.v3.VirtualHostDiscoveryService/DeltaVirtualHosts", true, kVirtualHost,
     "vhds-delta"},
    {"/envoy.service.extension.v3.ExtensionConfigDiscoveryService/StreamExtensionConfigs", false,
     kExtensionConfig, "ecds-sotw"},
    {"/envoy.service.extension.v3.ExtensionConfigDiscoveryService/DeltaExtensionConfigs", true,
     kExtensionConfig, "ecds-delta"},
};

// Ends a call to a method this server does not implement.
class Unimplemented : public grpc::ServerGenericBidiReactor {
 public:
  explicit Unimplemented(const std::string& method) {
    Finish(grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                        absl::StrCat("holdfast does not implement ", method)));
  }
  void OnDone() override { delete this; }
};

}  // namespace

class XdsServer::Service : public grpc::CallbackGenericService {
 public:
  explicit Service(const StreamContext& context) : context_(context) {}

  grpc::ServerGenericBidiReactor* CreateReactor(
      grpc::GenericCallbackServerContext* ctx) override {
    for (const Method& method : kMethods) {
      if (ctx->method() != method.path) continue;
      return XdsStream::Start(context_, std::string(method.kind),
                              method.delta ? &MakeDeltaProtocol : &MakeSotwProtocol,
                              std::string(method.type_url), ctx->peer());
    }
    return new Unimplemented(ctx->method());
  }

 private:
  const StreamContext context_;
};

absl::StatusOr<std::unique_ptr<XdsServer>> XdsServer::Start(const XdsServerOptions& options,
                                                            const StreamContext& context) {
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      MakeXdsCredentials(options.tls);
  if (!credentials.ok()) return credentials.status();

  auto server = std::unique_ptr<XdsServer>(new XdsServer());
  server->service_ = std::make_unique<Service>(context);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.listen_address, *credentials, &server->port_);
  builder.RegisterCallbackGenericService(server->service_.get());
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, options.keepalive_time_ms);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, options.keepalive_timeout_ms);
  // Proxies may ping us as often as every 10 s without being told off.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10'000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  // What proxies send us is requests and ACKs, a few KB at a time; probing
  // the bandwidth-delay product to grow our receive window for them would
  // cost a PING round trip on many of the fleet's ACKs and buy nothing.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  builder.SetMaxReceiveMessageSize(16 << 20);
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen for xDS on ", options.listen_address));
  }
  return server;
}

XdsServer::~XdsServer() { Shutdown(absl::ZeroDuration()); }

void XdsServer::Shutdown(absl::Duration grace) {
  if (server_ == nullptr) return;
  server_->Shutdown(std::chrono::system_clock::now() + absl::ToChronoMilliseconds(grace));
  server_->Wait();
  server_.reset();
}

}  // namespace holdfast
