#include "src/xds/proxy_state.h"

namespace holdfast {

ProxyState::ProxyState(uint64_t stream_id, std::string stream_kind, std::string peer,
                       absl::Time connected_since) {
  view_.stream_id = stream_id;
  view_.stream_kind = std::move(stream_kind);
  view_.peer = std::move(peer);
  view_.connected_since = connected_since;
}

void ProxyState::SetNode(const envoy::config::core::v3::Node& node, std::string group) {
  auto kept = std::make_shared<envoy::config::core::v3::Node>(node);
  kept->clear_extensions();  // Envoy lists every extension it was built with
  kept->clear_user_agent_build_version();
  kept->clear_client_features();
  absl::MutexLock lock(&mu_);
  view_.node_id = node.id();
  view_.cluster = node.cluster();
  view_.group = std::move(group);
  view_.user_agent = node.user_agent_name();
  view_.node = std::move(kept);
}

void ProxyState::SetCanary(std::string rollout) {
  absl::MutexLock lock(&mu_);
  view_.canary = true;
  view_.rollout = std::move(rollout);
}

void ProxyState::ClearCanary() {
  absl::MutexLock lock(&mu_);
  view_.canary = false;
  view_.rollout.clear();
}

bool ProxyState::IsCanaryOf(absl::string_view rollout) const {
  absl::MutexLock lock(&mu_);
  return view_.canary && view_.rollout == rollout;
}

void ProxyState::SetIdentity(std::string identity) {
  absl::MutexLock lock(&mu_);
  view_.identity = std::move(identity);
}

void ProxyState::RecordSent(const std::string& type_url, const std::string& version, HeldView view,
                            absl::Time at) {
  absl::MutexLock lock(&mu_);
  TypeProgress& progress = view_.types[type_url];
  progress.last_sent_version = version;
  progress.sent = std::move(view);
  progress.sent_at = at;
  ++progress.responses_sent;
}

void ProxyState::RecordAck(const std::string& type_url, const std::string& version, HeldView view,
                           absl::Time at) {
  absl::MutexLock lock(&mu_);
  TypeProgress& progress = view_.types[type_url];
  progress.acked_version = version;
  progress.acked = std::move(view);
  progress.acked_at = at;
  progress.nack.reset();
  ++progress.acks;
}

void ProxyState::RecordNack(const std::string& type_url, NackRecord nack) {
  absl::MutexLock lock(&mu_);
  TypeProgress& progress = view_.types[type_url];
  progress.nack = std::move(nack);
  ++progress.nacks;
}

ProxyView ProxyState::View() const {
  absl::MutexLock lock(&mu_);
  return view_;
}

ProxySync ProxyState::Sync() const {
  absl::MutexLock lock(&mu_);
  return SyncOf(view_);
}

HeldResources ResourcesOf(const HeldView& view, const std::string& type_url) {
  HeldResources out;
  if (view.snapshot == nullptr) return out;
  const ResourceMap& all = view.snapshot->Resources(type_url);
  if (view.selection.wildcard) {
    for (const auto& [name, resource] : all) out.present.emplace(name, resource);
    return out;
  }
  if (view.selection.names == nullptr) return out;
  for (const std::string& name : view.selection.names->names()) {
    auto it = all.find(name);
    if (it == all.end()) {
      out.missing.push_back(name);
    } else {
      out.present.emplace(name, it->second);
    }
  }
  return out;
}

ProxySync SyncOf(const ProxyView& proxy) {
  ProxySync sync = ProxySync::kSynced;
  for (const auto& [type, progress] : proxy.types) {
    if (progress.nack.has_value()) return ProxySync::kNacking;
    if (progress.acked_version != progress.last_sent_version) sync = ProxySync::kPending;
  }
  return sync;
}

absl::string_view ProxySyncName(ProxySync sync) {
  switch (sync) {
    case ProxySync::kSynced:
      return "synced";
    case ProxySync::kPending:
      return "pending";
    case ProxySync::kNacking:
      return "nacking";
  }
  return "?";
}

void ProxyRegistry::Add(std::shared_ptr<ProxyState> proxy, uint64_t stream_id) {
  absl::MutexLock lock(&mu_);
  proxies_[stream_id] = std::move(proxy);
}

void ProxyRegistry::Remove(uint64_t stream_id) {
  absl::MutexLock lock(&mu_);
  proxies_.erase(stream_id);
}

std::vector<std::shared_ptr<ProxyState>> ProxyRegistry::Proxies() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::shared_ptr<ProxyState>> proxies;
  proxies.reserve(proxies_.size());
  for (const auto& [id, proxy] : proxies_) proxies.push_back(proxy);
  return proxies;
}

std::vector<ProxyView> ProxyRegistry::List() const {
  // Views are taken outside the registry's lock: each takes its proxy's.
  std::vector<std::shared_ptr<ProxyState>> proxies = Proxies();
  std::vector<ProxyView> views;
  views.reserve(proxies.size());
  for (const auto& proxy : proxies) views.push_back(proxy->View());
  return views;
}

std::vector<ProxyView> ProxyRegistry::Canaries(absl::string_view rollout) const {
  std::vector<ProxyView> views;
  for (const auto& proxy : Proxies()) {
    if (proxy->IsCanaryOf(rollout)) views.push_back(proxy->View());
  }
  return views;
}

std::map<ProxySync, size_t> ProxyRegistry::CountBySync() const {
  std::vector<std::shared_ptr<ProxyState>> proxies = Proxies();
  std::map<ProxySync, size_t> counts;
  for (const auto& proxy : proxies) ++counts[proxy->Sync()];
  return counts;
}

size_t ProxyRegistry::size() const {
  absl::MutexLock lock(&mu_);
  return proxies_.size();
}

bool ProxyRegistry::RecordRefusal(IdentityRefusalRecord refusal) {
  absl::MutexLock lock(&mu_);
  bool first = true;
  for (const IdentityRefusalRecord& earlier : refusals_) {
    if (earlier.peer == refusal.peer) first = false;
  }
  refusals_.push_back(std::move(refusal));
  while (refusals_.size() > kMaxRefusals) refusals_.pop_front();
  return first;
}

std::vector<IdentityRefusalRecord> ProxyRegistry::Refusals() const {
  absl::MutexLock lock(&mu_);
  return {refusals_.begin(), refusals_.end()};
}

}  // namespace holdfast
