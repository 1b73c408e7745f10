#include "src/xds/sotw_session.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace holdfast {

using envoy::service::discovery::v3::DiscoveryRequest;

SotwSession::SotwSession(std::string fixed_type_url, const Clock& clock, ProxyState* proxy,
                         XdsStats* stats)
    : fixed_type_url_(std::move(fixed_type_url)), clock_(clock), proxy_(proxy), stats_(stats) {}

absl::Status SotwSession::OnRequest(const DiscoveryRequest& request) {
  std::string type = request.type_url().empty() ? fixed_type_url_ : request.type_url();
  if (type.empty()) return absl::InvalidArgumentError("DiscoveryRequest.type_url is empty");
  if (!fixed_type_url_.empty() && type != fixed_type_url_) {
    return absl::InvalidArgumentError(absl::StrCat("type_url ", type, " on a stream for ",
                                                   fixed_type_url_));
  }
  TypeState& state = types_[type];
  const std::string& nonce = request.response_nonce();
  if (!nonce.empty()) {
    if (nonce != state.sent_nonce) {
      // A reply to a response that has since been superseded: the client
      // will reply to the newer one too.
      stats_->StaleRequest(type);
      return absl::OkStatus();
    }
    if (request.has_error_detail()) {
      proxy_->RecordNack(type, NackRecord{state.sent_version, nonce, request.error_detail().code(),
                                          request.error_detail().message(), clock_.Now()});
      stats_->Nack(type);
    } else {
      proxy_->RecordAck(type, request.version_info(), clock_.Now());
      stats_->Ack(type);
    }
  }
  state.subscription.ApplySotw(request.resource_names());
  state.dirty = true;
  return absl::OkStatus();
}

void SotwSession::OnSnapshot(SnapshotPtr snapshot) {
  snapshot_ = std::move(snapshot);
  for (auto& [type, state] : types_) state.dirty = true;
}

std::optional<SotwSession::Desired> SotwSession::Compute(const std::string& type,
                                                         const TypeState& state) const {
  const ResourceMap& available = snapshot_->Resources(type);
  Desired desired;
  if (state.subscription.wildcard()) {
    desired.version = snapshot_->TypeVersion(type);
    if (desired.version == state.sent_version) return std::nullopt;
    desired.resources.reserve(available.size() + state.subscription.names().size());
    for (const auto& [name, resource] : available) desired.resources.push_back(resource);
  } else {
    for (const std::string& name : state.subscription.names()) {
      auto it = available.find(name);
      if (it != available.end()) desired.resources.push_back(it->second);
    }
    desired.version = VersionOf(desired.resources);
    // Full-state types answer a changed subscription even when the resources
    // are the same: the answer tells the client that new names do not exist,
    // instead of leaving it to wait out its does-not-exist timer.
    const bool tell_absent = IsFullStateType(type) && !state.sent_version.empty() &&
                             state.subscription.names() != state.sent_subscription;
    if (desired.version == state.sent_version && !tell_absent) return std::nullopt;
    // Nothing to say about names that do not exist yet, unless the type's
    // responses are full state or the client holds something now gone.
    if (desired.resources.empty() && !IsFullStateType(type) && state.sent_version.empty()) {
      return std::nullopt;
    }
  }
  return desired;
}

bool SotwSession::AnyPending(std::initializer_list<absl::string_view> types) const {
  for (absl::string_view type : types) {
    auto it = types_.find(std::string(type));
    if (it != types_.end() && Compute(it->first, it->second).has_value()) return true;
  }
  return false;
}

std::optional<Response> SotwSession::NextResponse() {
  if (snapshot_ == nullptr) return std::nullopt;  // never answer before there is config

  std::vector<std::string> order;
  for (const auto& [type, state] : types_) {
    if (state.dirty) order.push_back(type);
  }
  std::stable_sort(order.begin(), order.end(), [](const std::string& a, const std::string& b) {
    return AdsTypeRank(a) < AdsTypeRank(b);
  });

  for (const std::string& type : order) {
    TypeState& state = types_[type];
    std::optional<Desired> desired = Compute(type, state);
    if (!desired.has_value()) {
      state.dirty = false;
      continue;
    }
    if (type == type_url::kCluster &&
        AnyPending({type_url::kClusterLoadAssignment, type_url::kListener,
                    type_url::kRouteConfiguration})) {
      // Make before break: keep clusters the client still has until the
      // listeners and routes that may use them have been updated.
      ResourceMap merged = state.sent;
      bool removes = false;
      for (const ResourcePtr& r : desired->resources) merged[r->name()] = r;
      removes = merged.size() > desired->resources.size();
      if (removes) {
        Desired kept;
        for (const auto& [name, resource] : merged) kept.resources.push_back(resource);
        kept.version = VersionOf(kept.resources);
        if (kept.version == state.sent_version) continue;  // stay dirty, send the rest first
        Response response = Emit(type, state, std::move(kept));
        state.dirty = true;  // the removal is still owed
        return response;
      }
    }
    Response response = Emit(type, state, std::move(*desired));
    state.dirty = false;
    return response;
  }
  return std::nullopt;
}

Response SotwSession::Emit(const std::string& type, TypeState& state, Desired desired) {
  Response response;
  response.type_url = type;
  response.version = std::move(desired.version);
  response.nonce = absl::StrCat(++nonce_counter_);
  state.sent_version = response.version;
  state.sent_nonce = response.nonce;
  state.sent_subscription = state.subscription.names();
  state.sent.clear();
  for (const ResourcePtr& r : desired.resources) state.sent.emplace(r->name(), r);
  response.resources = std::move(desired.resources);
  proxy_->RecordSent(type, response.version);
  return response;
}

}  // namespace holdfast
