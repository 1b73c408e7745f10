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

// Held at a version no resource has: the client holds the name, and it is
// sent again.
constexpr char kResendVersion[] = "";

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

  RecordReply(type, state, request);
  if (absl::Status allowed =
          limits_.CheckNames(state.subscription.size() + request.resource_names_subscribe().size());
      !allowed.ok()) {
    return allowed;  // checked before the work, which grows with the names
  }
  ChangeSubscription(type, state, request, first);
  // A bare ACK or NACK owes nothing new: snapshots mark the session dirty
  // themselves when they arrive.
  if (first || !request.resource_names_subscribe().empty() ||
      !request.resource_names_unsubscribe().empty()) {
    state.dirty = true;
    state.asked_at = clock_.Now();
  }
  return absl::OkStatus();
}

void DeltaSession::RecordReply(const std::string& type, TypeState& state,
                               const DeltaDiscoveryRequest& request) {
  uint64_t nonce = 0;
  if (request.response_nonce().empty() || !absl::SimpleAtoi(request.response_nonce(), &nonce)) {
    return;
  }
  auto in_flight = state.in_flight.find(nonce);
  if (in_flight == state.in_flight.end()) return;
  if (request.has_error_detail()) {
    proxy_->RecordNack(type, NackRecord{in_flight->second.version, request.response_nonce(),
                                        request.error_detail().code(),
                                        request.error_detail().message(), clock_.Now()});
    stats_->Nack(type);
  } else {
    const absl::Time now = clock_.Now();
    proxy_->RecordAck(type, in_flight->second.version, in_flight->second.view, now);
    stats_->Ack(type, now - in_flight->second.owed_since);
  }
  // Replies come in order: earlier nonces will not be answered anymore.
  state.in_flight.erase(state.in_flight.begin(), std::next(in_flight));
}

void DeltaSession::ChangeSubscription(const std::string& type, TypeState& state,
                                      const DeltaDiscoveryRequest& request, bool first) {
  const auto& subscribe = request.resource_names_subscribe();
  const auto& unsubscribe = request.resource_names_unsubscribe();
  // A (re)subscribed name is sent even if the client holds it: subscribing
  // is how a client asks for a resource again. One it holds is still removed
  // if it is gone. (Asked before the change, which moves what is held.)
  std::vector<bool> held;
  held.reserve(subscribe.size());
  for (const std::string& name : subscribe) {
    held.push_back(!first && Held(type, state, name).has_value());
  }
  const bool had_wildcard = state.subscription.wildcard();
  if (state.base_follows_subscription && state.subscription.AddsWildcard(subscribe, unsubscribe)) {
    // Every name is asked for now: remember what the client held before.
    state.subscription.Settle();
    state.base_selection = SelectionOf(state);
    state.base_follows_subscription = false;
  }
  state.subscription.ApplyDelta(subscribe, unsubscribe);
  // Without the wildcard the client forgets what only the wildcard gave it:
  // it holds what it still asks for.
  if (had_wildcard && !state.subscription.wildcard()) state.base_follows_subscription = true;
  // An unsubscribed name is forgotten by the client.
  for (const std::string& name : unsubscribe) {
    if (!state.subscription.Wants(name)) state.overrides[name] = std::nullopt;
  }
  if (first) return;
  for (int i = 0; i < subscribe.size(); ++i) {
    const std::string& name = subscribe[i];
    if (name == "*" || !state.subscription.Wants(name)) continue;
    state.overrides[name] = held[i] ? std::optional<std::string>(kResendVersion) : std::nullopt;
  }
}

void DeltaSession::OnSnapshot(SnapshotPtr snapshot) {
  snapshot_ = std::move(snapshot);
  for (auto& [type, state] : types_) {
    state.dirty = true;
    // The change is shared with every stream of the same names once settled.
    state.subscription.Settle();
  }
}

Selection DeltaSession::SelectionOf(const TypeState& state) const {
  return Selection{state.subscription.wildcard(), state.subscription.names_ptr()};
}

bool DeltaSession::SelectedAtBase(const TypeState& state, absl::string_view name) const {
  return state.base_follows_subscription ? state.subscription.Wants(name)
                                         : state.base_selection.Selects(name);
}

std::optional<absl::string_view> DeltaSession::Held(const std::string& type, const TypeState& state,
                                                    const std::string& name) const {
  if (auto it = state.overrides.find(name); it != state.overrides.end()) {
    if (!it->second.has_value()) return std::nullopt;
    return absl::string_view(*it->second);
  }
  if (state.base == nullptr || !SelectedAtBase(state, name)) return std::nullopt;
  const ResourceMap& base = state.base->Resources(type);
  auto it = base.find(name);
  if (it == base.end()) return std::nullopt;
  return absl::string_view(it->second->version());
}

DeltaSession::Diff DeltaSession::Compute(const std::string& type, const TypeState& state) const {
  if (!state.subscription.settled()) return ComputePerStream(type, state);
  const Selection selection = SelectionOf(state);
  if (state.base == nullptr && state.overrides.empty()) {
    // The client holds nothing yet: everything it asks for, shared by every
    // stream that asks for the same names.
    return Diff{views_->Selected(snapshot_, type, selection), {}};
  }
  if (state.base == nullptr || !state.overrides.empty() ||
      (!state.base_follows_subscription && selection != state.base_selection)) {
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
  if (state.base == snapshot_ && state.base_follows_subscription) {
    return ComputeOverrides(type, state);
  }
  const Subscription& subscription = state.subscription;
  auto updated = std::make_shared<ResourceList>();
  std::vector<std::string> removed;
  const ResourceMap& available = snapshot_->Resources(type);
  auto consider = [&](const std::string& name, const ResourcePtr& resource) {
    std::optional<absl::string_view> held = Held(type, state, name);
    if (!held.has_value() || *held != resource->version()) updated->resources.push_back(resource);
  };
  if (subscription.wildcard()) {
    for (const auto& [name, resource] : available) consider(name, resource);
  } else {
    subscription.ForEachName([&](const std::string& name) {
      if (auto it = available.find(name); it != available.end()) consider(name, it->second);
    });
  }
  // Removals: names the client holds and still asks for that are gone.
  auto gone = [&](const std::string& name) {
    return subscription.Wants(name) && !available.contains(name);
  };
  if (state.base != nullptr) {
    for (const auto& [name, resource] : state.base->Resources(type)) {
      if (SelectedAtBase(state, name) && !state.overrides.contains(name) && gone(name)) {
        removed.push_back(name);
      }
    }
  }
  for (const auto& [name, version] : state.overrides) {
    if (version.has_value() && gone(name)) removed.push_back(name);
  }
  return Sorted(std::move(updated), std::move(removed));
}

DeltaSession::Diff DeltaSession::ComputeOverrides(const std::string& type,
                                                  const TypeState& state) const {
  auto updated = std::make_shared<ResourceList>();
  std::vector<std::string> removed;
  const ResourceMap& available = snapshot_->Resources(type);
  for (const auto& [name, held] : state.overrides) {
    if (!state.subscription.Wants(name)) continue;
    auto it = available.find(name);
    if (it == available.end()) {
      if (held.has_value()) removed.push_back(name);
    } else if (!held.has_value() || *held != it->second->version()) {
      updated->resources.push_back(it->second);
    }
  }
  return Sorted(std::move(updated), std::move(removed));
}

// Names in order, so that equal answers are equal bytes.
DeltaSession::Diff DeltaSession::Sorted(std::shared_ptr<ResourceList> updated,
                                        std::vector<std::string> removed) {
  std::sort(updated->resources.begin(), updated->resources.end(),
            [](const ResourcePtr& a, const ResourcePtr& b) { return a->name() < b->name(); });
  std::sort(removed.begin(), removed.end());
  updated->digest = VersionOf(updated->resources);
  return Diff{std::move(updated), std::move(removed)};
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
  state.base_follows_subscription = true;
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
    HeldView view{snapshot_, SelectionOf(state)};
    state.in_flight[nonce_counter_] = {response.version,
                                       std::max(snapshot_->created(), state.asked_at), view};
    // A client that never replies must not grow this without bound.
    if (state.in_flight.size() > kMaxInFlight) state.in_flight.erase(state.in_flight.begin());
    state.answered = true;
    state.dirty = !deferred.empty();
    proxy_->RecordSent(type, response.version, std::move(view), clock_.Now());
    return response;
  }
  return std::nullopt;
}

}  // namespace holdfast
