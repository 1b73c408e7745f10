#include "bench/floor/floor_server.h"

#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/server_builder.h"
#include "grpcpp/support/byte_buffer.h"
#include "src/common/protowire.h"

namespace xds_floor {
namespace {

using holdfast::AppendLengthDelimited;
using holdfast::ResourcePtr;
using holdfast::WireReader;
namespace type_url = holdfast::type_url;

constexpr absl::string_view kTypeUrls[kTypeCount] = {
    type_url::kCluster, type_url::kClusterLoadAssignment, type_url::kListener,
    type_url::kRouteConfiguration};
constexpr absl::string_view kSotwMethod =
    "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources";
constexpr absl::string_view kDeltaMethod =
    "/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources";

int TypeOf(absl::string_view url) {
  for (int type = 0; type < kTypeCount; ++type) {
    if (kTypeUrls[type] == url) return type;
  }
  return -1;
}

// FNV-1a over a list of names, each followed by a separator.
constexpr uint64_t kHashStart = 14695981039346656037ull;
uint64_t HashName(uint64_t hash, absl::string_view name) {
  for (unsigned char c : name) hash = (hash ^ c) * 1099511628211ull;
  return (hash ^ 0x100) * 1099511628211ull;
}

// A response: the per-stream header, then the shared body, not copied.
grpc::ByteBuffer Assemble(const std::string& header, Body body) {
  grpc::Slice slices[2] = {grpc::Slice(header), grpc::Slice()};
  if (body->empty()) return grpc::ByteBuffer(slices, 1);
  auto* owner = new Body(std::move(body));
  slices[1] = grpc::Slice(
      const_cast<char*>((*owner)->data()), (*owner)->size(),
      [](void* p) { delete static_cast<Body*>(p); }, owner);
  return grpc::ByteBuffer(slices, 2);
}

Body Concat(const std::vector<ResourcePtr>& resources, bool delta) {
  auto body = std::make_shared<std::string>();
  for (const ResourcePtr& r : resources) r->AppendWire(delta, body.get());
  return body;
}

class Unimplemented : public grpc::ServerGenericBidiReactor {
 public:
  Unimplemented() { Finish(grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "ADS only")); }
  void OnDone() override { delete this; }
};

}  // namespace

FleetState::FleetState(const FleetParams& params)
    : params_(params), endpoints_(params.clusters), changed_at_(params.clusters, 0) {
  std::vector<ResourcePtr> sets[kTypeCount];
  for (int i = 0; i < params.clusters; ++i) {
    sets[kClusters].push_back(ClusterResource(i));
    endpoints_[i] = LoadAssignmentResource(params, i, 0);
  }
  for (int j = 0; j < params.listeners; ++j) sets[kListeners].push_back(ListenerResource(j));
  sets[kRoutes].push_back(RouteConfigResource(params));
  for (Type type : {kClusters, kListeners, kRoutes}) {
    for (bool delta : {false, true}) static_[type][delta] = Concat(sets[type], delta);
  }
}

int FleetState::ClusterIndex(absl::string_view name) const {
  int i = -1;
  if (!absl::StartsWith(name, "cluster-") || !absl::SimpleAtoi(name.substr(8), &i)) return -1;
  return i >= 0 && i < params_.clusters && ClusterName(i) == name ? i : -1;
}

absl::Status FleetState::Change(int gen, const std::vector<int>& clusters) {
  std::vector<ResourcePtr> encoded;
  for (int i : clusters) {
    if (i < 0 || i >= params_.clusters) return absl::InvalidArgumentError("bad cluster");
    encoded.push_back(LoadAssignmentResource(params_, i, gen));
  }
  absl::MutexLock lock(&mu_);
  const int64_t seq = seq_.load() + 1;
  for (size_t k = 0; k < clusters.size(); ++k) {
    endpoints_[clusters[k]] = std::move(encoded[k]);
    changed_at_[clusters[k]] = seq;
  }
  shared_.clear();
  seq_.store(seq);
  return absl::OkStatus();
}

std::pair<int64_t, Body> FleetState::EndpointsSince(int64_t from,
                                                    const EndpointSubscription* partial,
                                                    bool delta) {
  absl::MutexLock lock(&mu_);
  const int64_t seq = seq_.load();
  Body* shared = nullptr;
  if (partial == nullptr) {
    shared = &shared_[{from, delta}];
    if (*shared != nullptr) return {seq, *shared};
  }
  auto body = std::make_shared<std::string>();
  for (int i = 0; i < params_.clusters; ++i) {
    bool send = changed_at_[i] > from;
    if (partial != nullptr) send = partial->names[i] && (send || partial->owed[i]);
    if (send) endpoints_[i]->AppendWire(delta, body.get());
  }
  if (shared != nullptr) *shared = body;
  return {seq, std::move(body)};
}

// One ADS stream on the callback API; at most one write in flight. A change
// that arrives meanwhile is picked up when the write completes, merged with
// any later ones.
class FloorServer::Stream : public grpc::ServerGenericBidiReactor {
 public:
  Stream(FleetState* state, Counters* counters, bool delta)
      : state_(state), counters_(counters), delta_(delta) {}

  void Begin(std::shared_ptr<Stream> self, std::function<void()> on_done) {
    self_ = std::move(self);
    on_done_ = std::move(on_done);
    counters_->streams.fetch_add(1);
    StartRead(&read_buffer_);
  }

  // Endpoints changed.
  void Wake() {
    absl::MutexLock lock(&mu_);
    MaybeWriteLocked();
  }

  void OnReadDone(bool ok) override {
    absl::MutexLock lock(&mu_);
    if (!ok) {  // the client half-closed or the stream broke
      FinishLocked(grpc::Status::OK);
      return;
    }
    counters_->requests.fetch_add(1);
    grpc::Slice slice;
    if (!read_buffer_.TrySingleSlice(&slice).ok()) (void)read_buffer_.DumpToSingleSlice(&slice);
    read_buffer_.Clear();
    const absl::string_view bytes(reinterpret_cast<const char*>(slice.begin()), slice.size());
    if (!(delta_ ? OnDeltaRequest(bytes) : OnSotwRequest(bytes))) {
      FinishLocked(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "malformed request"));
      return;
    }
    MaybeWriteLocked();
    StartRead(&read_buffer_);
  }

  void OnWriteDone(bool ok) override {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    if (pending_finish_.has_value()) {
      Finish(*pending_finish_);
      pending_finish_.reset();
      return;
    }
    if (ok) MaybeWriteLocked();
  }

  void OnDone() override {
    counters_->streams.fetch_sub(1);
    on_done_();
    std::shared_ptr<Stream> self = std::move(self_);
  }

 private:
  void CountAck(absl::string_view nonce, bool error) {
    if (!nonce.empty()) (error ? counters_->nacks : counters_->acks).fetch_add(1);
  }

  // A wildcard type (clusters, listeners): everything, once.
  void SubscribeAll(int type) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!want_[type]) want_[type] = owed_[type] = true;
  }

  void SetRoutes(bool wanted) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (wanted && !want_[kRoutes]) owed_[kRoutes] = true;
    want_[kRoutes] = wanted;
  }

  void SetEndpoint(int i, bool wanted) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    EndpointSubscription& sub = endpoints_;
    if (sub.names.empty()) {
      sub.names.assign(state_->clusters(), false);
      sub.owed.assign(state_->clusters(), false);
    }
    if (i < 0 || sub.names[i] == wanted) return;
    sub.names[i] = wanted;
    sub.count += wanted ? 1 : -1;
    // Until the first response, that one carries everything subscribed.
    sub.owed[i] = wanted && sub.sent_seq >= 0;
    sub.any_owed = sub.any_owed || sub.owed[i];
    want_[kEndpoints] = sub.count > 0;
  }

  // DiscoveryRequest: resource_names = 3, type_url = 4, response_nonce = 5,
  // error_detail = 6. A request repeats every name; they are read only when
  // the list changed.
  bool OnSotwRequest(absl::string_view bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    absl::string_view type_url, nonce;
    bool error = false;
    uint64_t names_hash = kHashStart;
    WireReader reader(bytes);
    while (reader.Next()) {
      if (reader.field() == 3) names_hash = HashName(names_hash, reader.bytes());
      if (reader.field() == 4) type_url = reader.bytes();
      if (reader.field() == 5) nonce = reader.bytes();
      if (reader.field() == 6) error = true;
    }
    if (!reader.ok()) return false;
    CountAck(nonce, error);
    const int type = TypeOf(type_url);
    if (type == kClusters || type == kListeners) SubscribeAll(type);
    if (type != kEndpoints && type != kRoutes) return true;
    if (names_hash == names_hash_[type]) return true;
    names_hash_[type] = names_hash;
    std::vector<bool> next(state_->clusters(), false);
    bool routes = false;
    for (WireReader names(bytes); names.Next();) {
      if (names.field() != 3) continue;
      if (type == kRoutes) routes = routes || names.bytes() == kRouteConfigName;
      if (type == kEndpoints) {
        if (int i = state_->ClusterIndex(names.bytes()); i >= 0) next[i] = true;
      }
    }
    if (type == kRoutes) SetRoutes(routes);
    if (type == kEndpoints) {
      for (int i = 0; i < state_->clusters(); ++i) SetEndpoint(i, next[i]);
    }
    return true;
  }

  // DeltaDiscoveryRequest: type_url = 2, resource_names_subscribe = 3,
  // resource_names_unsubscribe = 4, response_nonce = 6, error_detail = 7.
  bool OnDeltaRequest(absl::string_view bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    absl::string_view type_url, nonce;
    bool error = false;
    WireReader reader(bytes);
    while (reader.Next()) {
      if (reader.field() == 2) type_url = reader.bytes();
      if (reader.field() == 6) nonce = reader.bytes();
      if (reader.field() == 7) error = true;
    }
    if (!reader.ok()) return false;
    CountAck(nonce, error);
    const int type = TypeOf(type_url);
    if (type == kClusters || type == kListeners) SubscribeAll(type);  // wildcard, whatever named
    if (type != kEndpoints && type != kRoutes) return true;
    for (WireReader names(bytes); names.Next();) {
      if (names.field() != 3 && names.field() != 4) continue;
      const bool subscribe = names.field() == 3;
      if (type == kRoutes && names.bytes() == kRouteConfigName) SetRoutes(subscribe);
      if (type == kEndpoints) SetEndpoint(state_->ClusterIndex(names.bytes()), subscribe);
    }
    return true;
  }

  // The next response owed, in ADS order: a static type's whole set once,
  // then endpoint changes (and names subscribed since) as they come.
  std::optional<grpc::ByteBuffer> NextWriteLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (Type type : {kClusters, kEndpoints, kListeners, kRoutes}) {
      Body body;
      std::string version = "1";
      if (type != kEndpoints) {
        if (!owed_[type]) continue;
        owed_[type] = false;
        body = state_->StaticBody(type, delta_);
      } else {
        EndpointSubscription& sub = endpoints_;
        if (!want_[kEndpoints] || (sub.sent_seq >= state_->seq() && !sub.any_owed)) continue;
        const bool everything = sub.count == state_->clusters() && !sub.any_owed;
        auto [seq, changed] =
            state_->EndpointsSince(sub.sent_seq, everything ? nullptr : &sub, delta_);
        sub.sent_seq = seq;
        if (sub.any_owed) sub.owed.assign(sub.owed.size(), false);
        sub.any_owed = false;
        if (changed->empty()) continue;
        body = std::move(changed);
        version = absl::StrCat("e", seq);
      }
      // DiscoveryResponse and DeltaDiscoveryResponse alike: version = 1,
      // type_url = 4, nonce = 5.
      std::string header;
      AppendLengthDelimited(1, version, &header);
      AppendLengthDelimited(4, kTypeUrls[type], &header);
      AppendLengthDelimited(5, absl::StrCat(++nonce_), &header);
      counters_->responses.fetch_add(1);
      counters_->bytes_sent.fetch_add(header.size() + body->size());
      return Assemble(header, std::move(body));
    }
    return std::nullopt;
  }

  void MaybeWriteLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (writing_ || finished_) return;
    std::optional<grpc::ByteBuffer> next = NextWriteLocked();
    if (!next.has_value()) return;
    write_buffer_ = std::move(*next);
    writing_ = true;
    StartWrite(&write_buffer_);
  }

  void FinishLocked(const grpc::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finished_) return;
    finished_ = true;
    if (writing_) {
      pending_finish_ = status;
    } else {
      Finish(status);
    }
  }

  FleetState* const state_;
  Counters* const counters_;
  const bool delta_;
  std::shared_ptr<Stream> self_;  // released in OnDone
  std::function<void()> on_done_;
  grpc::ByteBuffer read_buffer_;

  absl::Mutex mu_;
  bool want_[kTypeCount] ABSL_GUARDED_BY(mu_) = {};
  bool owed_[kTypeCount] ABSL_GUARDED_BY(mu_) = {};  // the whole set (static types)
  uint64_t names_hash_[kTypeCount] ABSL_GUARDED_BY(mu_) = {};
  EndpointSubscription endpoints_ ABSL_GUARDED_BY(mu_);
  uint64_t nonce_ ABSL_GUARDED_BY(mu_) = 0;
  grpc::ByteBuffer write_buffer_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<grpc::Status> pending_finish_ ABSL_GUARDED_BY(mu_);
};

class FloorServer::Service : public grpc::CallbackGenericService {
 public:
  explicit Service(FloorServer* server) : server_(server) {}

  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* ctx) override {
    const bool delta = ctx->method() == kDeltaMethod;
    if (!delta && ctx->method() != kSotwMethod) return new Unimplemented();
    auto stream = std::make_shared<Stream>(&server_->state_, &server_->counters_, delta);
    uint64_t id;
    {
      absl::MutexLock lock(&server_->mu_);
      id = server_->next_id_++;
      server_->streams_[id] = stream;
    }
    FloorServer* server = server_;
    stream->Begin(stream, [server, id] {
      absl::MutexLock lock(&server->mu_);
      server->streams_.erase(id);
    });
    return stream.get();
  }

 private:
  FloorServer* const server_;
};

FloorServer::FloorServer(const FleetParams& params) : state_(params) {}

std::unique_ptr<FloorServer> FloorServer::Start(const FleetParams& params,
                                                const std::string& address) {
  auto server = std::unique_ptr<FloorServer>(new FloorServer(params));
  server->service_ = std::make_unique<Service>(server.get());
  // holdfast's transport settings (src/xds/xds_server.cc): keepalive 60 s /
  // 30 s, client pings every 10 s allowed, no BDP probing (so gRPC's static
  // 64 KiB HTTP/2 windows), 100 streams per connection, 16 MiB requests.
  grpc::ServerBuilder builder;
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &server->port_);
  builder.RegisterCallbackGenericService(server->service_.get());
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 60'000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 30'000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10'000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, 20'000);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, 30'000);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, 100);
  builder.SetMaxReceiveMessageSize(16 << 20);
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) return nullptr;
  return server;
}

FloorServer::~FloorServer() {
  if (server_ != nullptr) server_->Shutdown(std::chrono::system_clock::now());
}

absl::Status FloorServer::Change(int gen, const std::vector<int>& clusters) {
  if (absl::Status status = state_.Change(gen, clusters); !status.ok()) return status;
  std::vector<std::shared_ptr<Stream>> streams;
  {
    absl::MutexLock lock(&mu_);
    streams.reserve(streams_.size());
    for (const auto& [id, weak] : streams_) {
      if (auto stream = weak.lock()) streams.push_back(std::move(stream));
    }
  }
  for (const auto& stream : streams) stream->Wake();
  return absl::OkStatus();
}

}  // namespace xds_floor
