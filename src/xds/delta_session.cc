#include "src/xds/delta_session.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace holdfast {
namespace {

using envoy::service::discovery::v3::DeltaDiscoveryRequest;

const ResourceListPtr& NoResources() {
  static const ResourceListPtr* empty = new ResourceListPtr(std::make_shared<ResourceList>());
  return *empty;
}

}  // namespace

DeltaSession::DeltaSession(std::string fixed_type_url, const Clock& clock, ProxyState* proxy,
                           XdsStats* stats, ViewCache* views, StreamLimits limits)
    : fixed_type_url_(std::move(fixed_type_url)),
      limits_(limits),
      clock_(clock),
      proxy_(proxy),
      stats_(stats),
      views_(views) {}

absl::Status DeltaSession::OnRequest(const DeltaDiscoveryRequest& request) {
  std::string type = request.type_url().empty() ? fixed_type_url_ : request.type_url();
  if (type.empty()) return absl::InvalidArgumentError("DeltaDiscoveryRequest.type_url is empty");
  if (!fixed_type_url_.empty() && type != fixed_type_url_) {
    return absl::InvalidArgumentError(
        absl::StrCat("type_url ", type, " on a stream for ", fixed_type_url_));
  }
  auto it = types_.find(type);
  const bool first = it == types_.end();
  if (first) {
    if (absl::Status allowed = limits_.CheckNewType(type, types_.size()); !allowed.ok()) {
      return allowed;
    }
    it = types_.try_emplace(type, &views_->names()).first;
  }
  TypeState& state = it->second;
  if (first) {
    // What the client kept from an earlier stream: not re-sent if unchanged.
    for (const auto& [name, version] : request.initial_resource_versions()) {
      state.overrides[name] = version;
    }
  }

  uint64_t nonce = 0;
  if (!request.response_nonce().empty() && absl::SimpleAtoi(request.response_nonce(), &nonce)) {
    auto in_flight = state.in_flight.find(nonce);
    if (in_flight != state.in_flight.end()) {
      if (request.has_error_detail()) {
        proxy_->RecordNack(type, NackRecord{in_flight->second, request.response_nonce(),
                                            request.error_detail().code(),
                                            request.error_detail().message(), clock_.Now()});
        stats_->Nack(type);
      } else {
        proxy_->RecordAck(type, in_flight->second, clock_.Now());
        stats_->Ack(type);
      }
      // Replies come in order: earlier nonces will not be answered anymore.
      state.in_flight.erase(state.in_flight.begin(), std::next(in_flight));
    }
  }

  if (absl::Status allowed = limits_.CheckNames(state.subscription.names().size() +
                                                request.resource_names_subscribe().size());
      !allowed.ok()) {
    return allowed;  // checked before the work, which grows with the names
  }
  state.subscription.ApplyDelta(request.resource_names_subscribe(),
                                request.resource_names_unsubscribe());
  // An unsubscribed name is forgotten by the client.
  for (const std::string& name : request.resource_names_unsubscribe()) {
    if (!state.subscription.Wants(name)) state.overrides[name] = std::nullopt;
  }
  // A (re)subscribed name is sent even if the client says it holds it:
  // subscribing is how a client asks for a resource again.
  for (const std::string& name : request.resource_names_subscribe()) {
    if (!first && name != "*") state.overrides[name] = std::nullopt;
  }
  // A bare ACK or NACK owes nothing new: snapshots mark the session dirty
  // themselves when they arrive.
  if (first || !request.resource_names_subscribe().empty() ||
      !request.resource_names_unsubscribe().empty()) {
    state.dirty = true;
  }
  return absl::OkStatus();
}

void DeltaSession::OnSnapshot(SnapshotPtr snapshot) {
  snapshot_ = std::move(snapshot);
  for (auto& [type, state] : types_) state.dirty = true;
}

Selection DeltaSession::SelectionOf(const TypeState& state) const {
  return Selection{state.subscription.wildcard(), state.subscription.names_ptr()};
}

std::optional<absl::string_view> DeltaSession::Held(const std::string& type, const TypeState& state,
                                                    const std::string& name) const {
  if (auto it = state.overrides.find(name); it != state.overrides.end()) {
    if (!it->second.has_value()) return std::nullopt;
    return absl::string_view(*it->second);
  }
  if (state.base == nullptr || !state.base_selection.Selects(name)) return std::nullopt;
  const ResourceMap& base = state.base->Resources(type);
  auto it = base.find(name);
  if (it == base.end()) return std::nullopt;
  return absl::string_view(it->second->version());
}

DeltaSession::Diff DeltaSession::Compute(const std::string& type, const TypeState& state) const {
  const Selection selection = SelectionOf(state);
  if (state.base == nullptr && state.overrides.empty()) {
    // The client holds nothing yet: everything it asks for, shared by every
    // stream that asks for the same names.
    return Diff{views_->Selected(snapshot_, type, selection), {}};
  }
  if (state.base == nullptr || !state.overrides.empty() || selection != state.base_selection) {
    return ComputePerStream(type, state);
  }
  // The common case: the client holds an earlier snapshot's view of the
  // same subscription, and the difference is shared with every stream there.
  if (state.base == snapshot_) return Diff{NoResources(), {}};
  ResourceListPtr changed = views_->Changed(state.base, snapshot_, type, selection);
  Diff diff{changed, changed->removed};
  return diff;
}

DeltaSession::Diff DeltaSession::ComputePerStream(const std::string& type,
                                                  const TypeState& state) const {
  const Selection selection = SelectionOf(state);
  auto updated = std::make_shared<ResourceList>();
  Diff diff{updated, {}};
  const ResourceMap& available = snapshot_->Resources(type);
  auto consider = [&](const std::string& name, const ResourcePtr& resource) {
    std::optional<absl::string_view> held = Held(type, state, name);
    if (!held.has_value() || *held != resource->version()) updated->resources.push_back(resource);
  };
  if (selection.wildcard) {
    for (const auto& [name, resource] : available) consider(name, resource);
  } else {
    for (const std::string& name : selection.names->names()) {
      if (auto it = available.find(name); it != available.end()) consider(name, it->second);
    }
  }
  // Removals: names the client holds and still asks for that are gone.
  auto gone = [&](const std::string& name) {
    return selection.Selects(name) && !available.contains(name);
  };
  if (state.base != nullptr) {
    for (const auto& [name, resource] : state.base->Resources(type)) {
      if (state.base_selection.Selects(name) && !state.overrides.contains(name) && gone(name)) {
        diff.removed.push_back(name);
      }
    }
  }
  for (const auto& [name, version] : state.overrides) {
    if (version.has_value() && gone(name)) diff.removed.push_back(name);
  }
  std::sort(diff.removed.begin(), diff.removed.end());
  updated->digest = VersionOf(updated->resources);
  return diff;
}

bool DeltaSession::AnyPending(std::initializer_list<absl::string_view> types) const {
  for (absl::string_view type : types) {
    auto it = types_.find(std::string(type));
    if (it != types_.end() && !Compute(it->first, it->second).empty()) return true;
  }
  return false;
}

void DeltaSession::Rebase(const std::string& type, TypeState& state,
                          const std::vector<std::string>& still_held) {
  absl::flat_hash_map<std::string, std::optional<std::string>> overrides;
  for (const std::string& name : still_held) {
    std::optional<absl::string_view> held = Held(type, state, name);
    if (held.has_value()) overrides[name] = std::string(*held);
  }
  state.base = snapshot_;
  state.base_selection = SelectionOf(state);
  state.overrides = std::move(overrides);
}

std::optional<Response> DeltaSession::NextResponse() {
  if (snapshot_ == nullptr) return std::nullopt;

  for (const std::string* type_ptr : DirtyTypesInAdsOrder(types_)) {
    const std::string& type = *type_ptr;
    TypeState& state = types_.find(type)->second;
    Diff diff = Compute(type, state);
    std::vector<std::string> deferred;
    if (type == type_url::kCluster && !diff.removed.empty() &&
        AnyPending({type_url::kClusterLoadAssignment, type_url::kListener,
                    type_url::kRouteConfiguration})) {
      deferred = std::move(diff.removed);  // make before break: remove clusters last
      diff.removed.clear();
    }
    // A first wildcard request is answered even when empty, so the client
    // knows its initial fetch is complete.
    const bool owes_first_answer = !state.answered && state.subscription.wildcard();
    if (diff.empty() && !owes_first_answer) {
      // The client already holds what it asks for (but the deferred).
      Rebase(type, state, deferred);
      state.dirty = !deferred.empty();
      continue;
    }

    Response response;
    response.type_url = type;
    response.version = snapshot_->TypeVersion(type);
    response.nonce = absl::StrCat(++nonce_counter_);
    Rebase(type, state, deferred);
    response.list = std::move(diff.updated);
    response.removed = std::move(diff.removed);
    state.in_flight[nonce_counter_] = response.version;
    // A client that never replies must not grow this without bound.
    if (state.in_flight.size() > kMaxInFlight) state.in_flight.erase(state.in_flight.begin());
    state.answered = true;
    state.dirty = !deferred.empty();
    proxy_->RecordSent(type, response.version);
    return response;
  }
  return std::nullopt;
}

}  // namespace holdfast
