#pragma once
// The gateway configuration model: what users write. Each kind is a plain
// value type; decoding (decode.h) fills it and reports field-path errors,
// validation beyond shape (references, conflicts, cycles) is the
// translator's job.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "absl/time/time.h"
#include "src/model/object.h"
#include "src/model/service.h"

namespace holdfast {

// ---- Upstream -------------------------------------------------------------

struct UpstreamHost {
  std::string address;
  uint32_t port = 0;
  uint32_t weight = 1;
};

struct UpstreamTls {
  std::string ca_file;  // empty: no server verification (discouraged, warned)
  std::string sni;
};

struct CircuitBreakers {
  std::optional<uint32_t> max_connections;
  std::optional<uint32_t> max_pending_requests;
  std::optional<uint32_t> max_requests;
  std::optional<uint32_t> max_retries;
};

struct HealthCheck {
  std::string path = "/";  // HTTP GET health check
  absl::Duration interval = absl::Seconds(10);
  absl::Duration timeout = absl::Seconds(2);
  uint32_t healthy_threshold = 2;
  uint32_t unhealthy_threshold = 3;
};

struct OutlierDetection {
  uint32_t consecutive_5xx = 5;
  absl::Duration interval = absl::Seconds(10);
  absl::Duration base_ejection_time = absl::Seconds(30);
  uint32_t max_ejection_percent = 10;
};

enum class LoadBalancing { kRoundRobin, kLeastRequest, kRandom, kRingHash };

struct UpstreamSpec {
  std::vector<UpstreamHost> hosts;
  // Instead of hosts: the endpoints of a Kubernetes Service port (service.h).
  std::optional<ServiceRef> service;
  std::optional<UpstreamTls> tls;
  absl::Duration connect_timeout = absl::Seconds(5);
  LoadBalancing load_balancing = LoadBalancing::kRoundRobin;
  // Speak HTTP/2 to the hosts (gRPC backends). Unset: HTTP/1.1, or for a
  // Service, HTTP/2 when its port's appProtocol says h2c or grpc.
  std::optional<bool> http2;
  std::optional<CircuitBreakers> circuit_breakers;
  std::optional<HealthCheck> health_check;
  std::optional<OutlierDetection> outlier_detection;
};

// ---- Routes ---------------------------------------------------------------

struct StringMatch {
  enum class Kind { kExact, kPrefix, kSuffix, kRegex, kPresent };
  Kind kind = Kind::kExact;
  std::string value;
};

struct HeaderMatch {
  std::string name;
  StringMatch match;
  bool invert = false;
};

struct QueryParamMatch {
  std::string name;
  StringMatch match;
};

struct RouteMatch {
  // Path: exactly one of prefix (default "/"), exact, regex.
  StringMatch path{StringMatch::Kind::kPrefix, "/"};
  std::vector<HeaderMatch> headers;
  std::vector<QueryParamMatch> query_params;
  std::vector<std::string> methods;
};

struct WeightedUpstream {
  ObjectRef upstream;
  uint32_t weight = 1;
};

struct Redirect {
  std::string host;
  std::string path;
  std::string prefix_rewrite;
  bool https = false;
  uint32_t port = 0;    // 0: the request's port is kept
  uint32_t code = 301;  // 301, 302, 303, 307, 308
};

struct DirectResponse {
  uint32_t status = 200;
  std::string body;
};

struct Delegate {
  std::vector<ObjectRef> route_tables;
  std::optional<Selector> selector;
};

struct RetryPolicy {
  std::string retry_on = "5xx,connect-failure,reset";
  uint32_t num_retries = 1;
  std::optional<absl::Duration> per_try_timeout;
};

struct HeaderEdits {
  std::vector<std::pair<std::string, std::string>> add;  // appended, in order
  std::vector<std::pair<std::string, std::string>> set;  // overwrite
  std::vector<std::string> remove;
};

// A copy of each request (or of a share of them) sent to another upstream;
// its answer is ignored. Envoy only: gRPC clients do not mirror.
struct RequestMirror {
  ObjectRef upstream;
  uint32_t per_million = 1'000'000;  // share of requests mirrored
};

struct CorsPolicy {
  std::vector<StringMatch> allow_origins;
  std::vector<std::string> allow_methods;
  std::vector<std::string> allow_headers;
  std::vector<std::string> expose_headers;
  std::optional<absl::Duration> max_age;
  bool allow_credentials = false;
};

struct RouteOptions {
  std::string prefix_rewrite;
  std::string host_rewrite;
  std::optional<absl::Duration> timeout;
  std::optional<RetryPolicy> retries;
  HeaderEdits request_headers;
  HeaderEdits response_headers;
  std::optional<CorsPolicy> cors;
  std::vector<RequestMirror> mirrors;
};

using RouteAction = std::variant<ObjectRef /*single upstream*/, std::vector<WeightedUpstream>,
                                 Redirect, DirectResponse, Delegate>;

struct Route {
  std::string name;
  RouteMatch match;
  RouteAction action;
  RouteOptions options;
  std::string path;  // field path of this route in its object, for statuses
  SourceLocation location;
};

// ---- Virtual services, route tables, gateways -----------------------------

struct VirtualServiceSpec {
  std::vector<std::string> domains;
  std::vector<Route> routes;
};

struct RouteTableSpec {
  int32_t weight = 0;  // lower first among tables delegated to together
  std::vector<Route> routes;
};

// A certificate and its key: files on the proxy, or a Secret object.
struct GatewayCertificate {
  std::string cert_file;
  std::string key_file;
  ObjectRef secret;  // alternative to files: a Secret object (certificate, key)
  bool empty() const { return cert_file.empty() && secret.name.empty(); }
};

// The certificate for clients whose TLS server name (SNI) is one of these.
struct SniCertificate {
  std::vector<std::string> server_names;  // "shop.example.com", "*.example.com"
  GatewayCertificate certificate;
};

struct GatewayTls {
  // For clients that send no server name or one no `sni` entry lists;
  // empty when only `sni` is set (such clients are then refused).
  GatewayCertificate certificate;
  std::vector<SniCertificate> sni;
};

struct GatewaySpec {
  std::string bind_address = "0.0.0.0";
  uint32_t port = 8080;
  std::optional<GatewayTls> tls;
  std::vector<ObjectRef> virtual_services;
  std::optional<Selector> virtual_service_selector;
};

// TLS material referenced by gateways (kind Secret).
struct SecretSpec {
  std::string certificate;  // PEM
  std::string private_key;  // PEM
};

// ---- RolloutPolicy ----------------------------------------------------------

// How a new configuration rolls out to the proxies of a node group
// (src/rollout): canaries first, everyone after a bake time. Not
// translated into resources; the snapshot carries it.
struct RolloutPolicySpec {
  // The node group it is for; unset: every group without a policy of its own.
  std::optional<std::string> node_group;
  // Canaries: this percentage of node ids by a stable hash, and/or nodes
  // whose metadata has `metadata_key` set to the string `metadata_value`.
  // Neither: no canaries, the group gets every snapshot at once.
  uint32_t canary_percent = 0;
  std::string metadata_key;
  std::string metadata_value;
  absl::Duration bake = absl::Seconds(60);
  absl::Duration ack_timeout = absl::Seconds(30);
};

using ObjectSpec = std::variant<UpstreamSpec, VirtualServiceSpec, RouteTableSpec, GatewaySpec,
                                SecretSpec, RolloutPolicySpec>;

// An object's spec, immutable once made and shared by every copy of the
// object: sources, the Gateway API conversion and the translator keep
// objects by value, and copying 10,000 virtual services' routes several
// times per change was a third of a change's time. Read it as a variant:
// std::get<VirtualServiceSpec>(*object.spec).
class SharedSpec {
 public:
  SharedSpec() : spec_(Empty()) {}
  template <typename Spec>
  SharedSpec(Spec spec)  // NOLINT: implicit, as assigning the variant was
      : spec_(std::make_shared<const ObjectSpec>(std::move(spec))), index_(spec_->index()) {}

  const ObjectSpec& operator*() const { return *spec_; }
  const ObjectSpec* operator->() const { return spec_.get(); }
  // The variant's index, kept beside the pointer: every comparison of
  // objects by key reads it (GatewayObject::kind()), and reading it through
  // the pointer cost a cache miss per object, a tenth of a translation.
  size_t index() const { return index_; }

 private:
  static const std::shared_ptr<const ObjectSpec>& Empty() {
    static const auto* empty =
        new std::shared_ptr<const ObjectSpec>(std::make_shared<const ObjectSpec>());
    return *empty;
  }
  std::shared_ptr<const ObjectSpec> spec_;
  uint8_t index_ = 0;  // Empty() holds the variant's first alternative
};

// One object of any kind, as decoded.
struct GatewayObject {
  ObjectMeta meta;
  SharedSpec spec;
  const std::string& kind() const;
  ObjectKey key() const { return {kind(), meta.ns, meta.name}; }
  // Digest of the decoded content, for change detection.
  std::string content_digest;
};

// Orders as a.key() < b.key(), without building the keys (sorting 10,000
// virtual services by key built 40,000 strings per translation).
inline bool KeyLess(const GatewayObject& a, const GatewayObject& b) {
  return std::tie(a.kind(), a.meta.ns, a.meta.name) < std::tie(b.kind(), b.meta.ns, b.meta.name);
}

// Whether `key` is `object`'s key, without building it.
inline bool IsKeyOf(const ObjectKey& key, const GatewayObject& object) {
  return key.name == object.meta.name && key.ns == object.meta.ns && key.kind == object.kind();
}

// Finds `object` in a map keyed by ObjectKey, walking forward from `cursor`:
// a walk over objects in key order meets a map in key order in one pass,
// without building a key per object. Returns the map's end if it is absent
// (the cursor then stays where the next object's search starts).
template <typename Map, typename Iterator>
Iterator SeekKeyOf(Map& map, Iterator& cursor, const GatewayObject& object) {
  // Mostly the cursor is at the object already: one equality test, whose
  // first compare (names) also tells most others apart.
  for (; cursor != map.end(); ++cursor) {
    if (IsKeyOf(cursor->first, object)) return cursor;
    if (std::tie(object.kind(), object.meta.ns, object.meta.name) <
        std::tie(cursor->first.kind, cursor->first.ns, cursor->first.name)) {
      break;  // past where it would be
    }
  }
  return map.end();
}

namespace kind {
inline constexpr char kUpstream[] = "Upstream";
inline constexpr char kVirtualService[] = "VirtualService";
inline constexpr char kRouteTable[] = "RouteTable";
inline constexpr char kGateway[] = "Gateway";
inline constexpr char kSecret[] = "Secret";
inline constexpr char kRolloutPolicy[] = "RolloutPolicy";
}  // namespace kind

}  // namespace holdfast
