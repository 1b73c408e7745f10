#include "src/xds/delta_session.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace holdfast {

using envoy::service::discovery::v3::DeltaDiscoveryRequest;

DeltaSession::DeltaSession(std::string fixed_type_url, const Clock& clock, ProxyState* proxy,
                           XdsStats* stats)
    : fixed_type_url_(std::move(fixed_type_url)), clock_(clock), proxy_(proxy), stats_(stats) {}

absl::Status DeltaSession::OnRequest(const DeltaDiscoveryRequest& request) {
  std::string type = request.type_url().empty() ? fixed_type_url_ : request.type_url();
  if (type.empty()) return absl::InvalidArgumentError("DeltaDiscoveryRequest.type_url is empty");
  if (!fixed_type_url_.empty() && type != fixed_type_url_) {
    return absl::InvalidArgumentError(absl::StrCat("type_url ", type, " on a stream for ",
                                                   fixed_type_url_));
  }
  const bool first = !types_.contains(type);
  TypeState& state = types_[type];
  if (first) {
    // What the client kept from an earlier stream: not re-sent if unchanged.
    for (const auto& [name, version] : request.initial_resource_versions()) {
      state.client_has[name] = version;
    }
  }

  uint64_t nonce = 0;
  if (!request.response_nonce().empty() && absl::SimpleAtoi(request.response_nonce(), &nonce)) {
    auto it = state.in_flight.find(nonce);
    if (it != state.in_flight.end()) {
      if (request.has_error_detail()) {
        proxy_->RecordNack(type, NackRecord{it->second, request.response_nonce(),
                                            request.error_detail().code(),
                                            request.error_detail().message(), clock_.Now()});
        stats_->Nack(type);
      } else {
        proxy_->RecordAck(type, it->second, clock_.Now());
        stats_->Ack(type);
      }
      // Replies come in order: earlier nonces will not be answered anymore.
      state.in_flight.erase(state.in_flight.begin(), std::next(it));
    }
  }

  state.subscription.ApplyDelta(request.resource_names_subscribe(),
                                request.resource_names_unsubscribe());
  for (const std::string& name : request.resource_names_unsubscribe()) {
    if (!state.subscription.Wants(name)) state.client_has.erase(name);
  }
  // A (re)subscribed name is sent even if the client says it holds it:
  // subscribing is how a client asks for a resource again.
  for (const std::string& name : request.resource_names_subscribe()) {
    if (!first) state.client_has.erase(name);
  }
  state.dirty = true;
  return absl::OkStatus();
}

void DeltaSession::OnSnapshot(SnapshotPtr snapshot) {
  snapshot_ = std::move(snapshot);
  for (auto& [type, state] : types_) state.dirty = true;
}

DeltaSession::Diff DeltaSession::Compute(const std::string& type, const TypeState& state) const {
  Diff diff;
  const ResourceMap& available = snapshot_->Resources(type);
  auto consider = [&](const ResourcePtr& resource) {
    auto held = state.client_has.find(resource->name());
    if (held == state.client_has.end() || held->second != resource->version()) {
      diff.updated.push_back(resource);
    }
  };
  if (state.subscription.wildcard()) {
    for (const auto& [name, resource] : available) consider(resource);
  } else {
    for (const std::string& name : state.subscription.names()) {
      auto it = available.find(name);
      if (it != available.end()) consider(it->second);
    }
  }
  for (const auto& [name, version] : state.client_has) {
    if (!available.contains(name) && state.subscription.Wants(name)) diff.removed.push_back(name);
  }
  return diff;
}

bool DeltaSession::AnyPending(std::initializer_list<absl::string_view> types) const {
  for (absl::string_view type : types) {
    auto it = types_.find(std::string(type));
    if (it != types_.end() && !Compute(it->first, it->second).empty()) return true;
  }
  return false;
}

std::optional<Response> DeltaSession::NextResponse() {
  if (snapshot_ == nullptr) return std::nullopt;

  std::vector<std::string> order;
  for (const auto& [type, state] : types_) {
    if (state.dirty) order.push_back(type);
  }
  std::stable_sort(order.begin(), order.end(), [](const std::string& a, const std::string& b) {
    return AdsTypeRank(a) < AdsTypeRank(b);
  });

  for (const std::string& type : order) {
    TypeState& state = types_[type];
    Diff diff = Compute(type, state);
    bool deferred = false;
    if (type == type_url::kCluster && !diff.removed.empty() &&
        AnyPending({type_url::kClusterLoadAssignment, type_url::kListener,
                    type_url::kRouteConfiguration})) {
      diff.removed.clear();  // make before break: remove clusters last
      deferred = true;
    }
    // A first wildcard request is answered even when empty, so the client
    // knows its initial fetch is complete.
    const bool owes_first_answer = !state.answered && state.subscription.wildcard();
    if (diff.empty() && !owes_first_answer) {
      state.dirty = deferred;
      continue;
    }

    Response response;
    response.type_url = type;
    response.version = snapshot_->TypeVersion(type);
    response.nonce = absl::StrCat(++nonce_counter_);
    for (const ResourcePtr& r : diff.updated) state.client_has[r->name()] = r->version();
    for (const std::string& name : diff.removed) state.client_has.erase(name);
    response.resources = std::move(diff.updated);
    response.removed = std::move(diff.removed);
    state.in_flight[nonce_counter_] = response.version;
    // A client that never replies must not grow this without bound.
    if (state.in_flight.size() > kMaxInFlight) state.in_flight.erase(state.in_flight.begin());
    state.answered = true;
    state.dirty = deferred;
    proxy_->RecordSent(type, response.version);
    return response;
  }
  return std::nullopt;
}

}  // namespace holdfast
