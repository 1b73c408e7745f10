#include "src/xds/sotw_session.h"

#include <algorithm>

#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"

namespace holdfast {
SotwSession::SotwSession(std::string fixed_type_url, const Clock& clock, ProxyState* proxy,
                         XdsStats* stats, ViewCache* views, StreamLimits limits)
    : fixed_type_url_(std::move(fixed_type_url)),
      limits_(limits),
      clock_(clock),
      proxy_(proxy),
      stats_(stats),
      views_(views) {}

absl::Status SotwSession::OnRequest(const SotwRequest& request) {
  std::string type = request.type_url.empty() ? fixed_type_url_ : std::string(request.type_url);
  if (type.empty()) return absl::InvalidArgumentError("DiscoveryRequest.type_url is empty");
  if (!fixed_type_url_.empty() && type != fixed_type_url_) {
    return absl::InvalidArgumentError(
        absl::StrCat("type_url ", type, " on a stream for ", fixed_type_url_));
  }
  auto it = types_.find(type);
  if (it == types_.end()) {
    if (absl::Status allowed = limits_.CheckNewType(type, types_.size()); !allowed.ok()) {
      return allowed;
    }
    it = types_.try_emplace(type, &views_->names()).first;
  }
  TypeState& state = it->second;
  // Most requests are ACKs repeating the names of the last one: compare
  // their bytes (by digest) instead of reading every name again.
  const uint64_t names_digest = absl::HashOf(request.names_wire);
  const bool same_names = state.names_digest == names_digest;
  std::vector<absl::string_view> names;
  if (!same_names) {
    if (absl::Status status = ReadResourceNames(request.names_wire, &names); !status.ok()) {
      return status;
    }
    if (absl::Status allowed = limits_.CheckNames(names.size()); !allowed.ok()) return allowed;
  }
  const absl::string_view nonce = request.response_nonce;
  if (!nonce.empty()) {
    if (nonce != state.sent_nonce) {
      // A reply to a response that has since been superseded: the client
      // will reply to the newer one too.
      stats_->StaleRequest(type);
      return absl::OkStatus();
    }
    if (request.has_error_detail) {
      proxy_->RecordNack(type, NackRecord{state.sent_version, std::string(nonce),
                                          request.error_code, request.error_message, clock_.Now()});
      stats_->Nack(type);
    } else {
      const absl::Time now = clock_.Now();
      proxy_->RecordAck(type, std::string(request.version_info),
                        HeldView{state.sent_snapshot, state.sent_selection}, now);
      stats_->Ack(type, now - state.sent_owed_since);
    }
  }
  const bool changed = !same_names && state.subscription.ApplySotw(names);
  state.names_digest = names_digest;
  // An ACK or NACK of the latest response owes nothing new: snapshots mark
  // the session dirty themselves when they arrive.
  if (changed || nonce.empty()) {
    state.dirty = true;
    state.asked_at = clock_.Now();
  }
  return absl::OkStatus();
}

void SotwSession::OnSnapshot(SnapshotPtr snapshot) {
  snapshot_ = std::move(snapshot);
  for (auto& [type, state] : types_) state.dirty = true;
}

Selection SotwSession::SelectionOf(const TypeState& state) const {
  return Selection{state.subscription.wildcard(), state.subscription.names_ptr()};
}

std::optional<SotwSession::Desired> SotwSession::Compute(const std::string& type,
                                                         const TypeState& state) const {
  if (IsIncrementalSotwType(type)) return ComputeIncremental(type, state);
  const Selection selection = SelectionOf(state);
  ResourceListPtr list = views_->Selected(snapshot_, type, selection);
  // The version is the digest of exactly what the client should hold.
  if (list->digest == state.sent_version) {
    // Full-state types answer a changed subscription even when the resources
    // are the same: the answer tells the client that new names do not exist,
    // instead of leaving it to wait out its does-not-exist timer.
    const bool tell_absent = IsFullStateType(type) && !selection.wildcard &&
                             state.sent_snapshot != nullptr && selection != state.sent_selection;
    if (!tell_absent) return std::nullopt;
  }
  // Nothing to say about names that do not exist yet, unless the type's
  // responses are full state or the client holds something now gone.
  if (list->resources.empty() && !selection.wildcard && !IsFullStateType(type) &&
      state.sent_version.empty()) {
    return std::nullopt;
  }
  return Desired{list->digest, std::move(list)};
}

std::optional<SotwSession::Desired> SotwSession::ComputeIncremental(const std::string& type,
                                                                    const TypeState& state) const {
  const Selection selection = SelectionOf(state);
  ResourceListPtr list;
  if (state.sent_snapshot == nullptr) {
    list = views_->Selected(snapshot_, type, selection);  // the first answer: everything asked for
  } else if (selection == state.sent_selection) {
    if (state.sent_snapshot == snapshot_) return std::nullopt;
    list = views_->Changed(state.sent_snapshot, snapshot_, type, selection);
  } else {
    // The subscription changed: what changed since the last response, and
    // every newly asked-for name. Per stream, but only when it re-subscribes.
    auto own = std::make_shared<ResourceList>();
    const ResourceMap& before = state.sent_snapshot->Resources(type);
    auto consider = [&](const std::string& name, const ResourcePtr& resource) {
      if (!state.sent_selection.Selects(name)) {
        own->resources.push_back(resource);
        return;
      }
      auto old = before.find(name);
      if (old == before.end() || old->second->version() != resource->version()) {
        own->resources.push_back(resource);
      }
    };
    const ResourceMap& available = snapshot_->Resources(type);
    if (selection.wildcard) {
      for (const auto& [name, resource] : available) consider(name, resource);
    } else {
      for (const std::string& name : selection.names->names()) {
        if (auto it = available.find(name); it != available.end()) consider(name, it->second);
      }
    }
    own->digest = VersionOf(own->resources);
    list = std::move(own);
  }
  // A wildcard's first answer is sent even when empty, so the client knows.
  const bool first_wildcard = state.sent_snapshot == nullptr && selection.wildcard;
  if (list->resources.empty() && !first_wildcard) return std::nullopt;
  return Desired{snapshot_->TypeVersion(type), std::move(list)};
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

  for (const std::string* type_ptr : DirtyTypesInAdsOrder(types_)) {
    const std::string& type = *type_ptr;
    TypeState& state = types_.find(type)->second;
    std::optional<Desired> desired = Compute(type, state);
    if (!desired.has_value()) {
      state.dirty = false;
      if (IsIncrementalSotwType(type) && state.sent_snapshot != nullptr) {
        // Nothing asked for differs from this snapshot: the client is up to
        // date with it, and with the names it asks for now (a name it
        // dropped and asks for again later is then sent again).
        state.sent_snapshot = snapshot_;
        state.sent_selection = SelectionOf(state);
      }
      continue;
    }
    if (type == type_url::kCluster && state.sent != nullptr &&
        AnyPending({type_url::kClusterLoadAssignment, type_url::kListener,
                    type_url::kRouteConfiguration})) {
      // Make before break: keep clusters the client still has until the
      // listeners and routes that may use them have been updated.
      const std::vector<ResourcePtr>& held = state.sent->resources;
      const std::vector<ResourcePtr>& wanted = desired->list->resources;
      auto kept = std::make_shared<ResourceList>();
      auto h = held.begin();
      auto w = wanted.begin();
      while (h != held.end() || w != wanted.end()) {
        if (w == wanted.end() || (h != held.end() && (*h)->name() < (*w)->name())) {
          kept->resources.push_back(*h++);
        } else {
          if (h != held.end() && (*h)->name() == (*w)->name()) ++h;
          kept->resources.push_back(*w++);
        }
      }
      if (kept->resources.size() > wanted.size()) {
        kept->digest = VersionOf(kept->resources);
        if (kept->digest == state.sent_version) continue;  // stay dirty, send the rest first
        std::string version = kept->digest;
        Response response = Emit(type, state, Desired{std::move(version), std::move(kept)});
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
  state.sent_owed_since = std::max(snapshot_->created(), state.asked_at);
  state.sent_snapshot = snapshot_;
  state.sent_selection = SelectionOf(state);
  state.sent = desired.list;
  response.list = std::move(desired.list);
  proxy_->RecordSent(type, response.version, HeldView{state.sent_snapshot, state.sent_selection},
                     clock_.Now());
  return response;
}

}  // namespace holdfast
