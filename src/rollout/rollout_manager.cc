#include "src/rollout/rollout_manager.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "src/common/log.h"
#include "src/rollout/rollout.h"
#include "src/xds/stream.h"

namespace holdfast {
namespace {

// The rollouts `policies` call for, by name ("": every group without its
// own); none when no policy chooses canaries.
std::map<std::string, RolloutPolicy> RolloutsOf(const RolloutPolicies& policies) {
  if (!policies.enabled()) return {};
  std::map<std::string, RolloutPolicy> rollouts = {{"", policies.fallback}};
  rollouts.insert(policies.groups.begin(), policies.groups.end());
  return rollouts;
}

std::string Named(const std::string& rollout) {
  return rollout.empty() ? "the rollout of every group without its own"
                         : absl::StrCat("the rollout of group ", rollout);
}

}  // namespace

RolloutManager::RolloutManager(Options options, SnapshotCache* staged, SnapshotCache* serving,
                               const ProxyRegistry* proxies, CanaryRouter* router,
                               const Clock& clock, MetricsRegistry* metrics)
    : options_(std::move(options)),
      staged_(staged),
      serving_(serving),
      proxies_(proxies),
      router_(router),
      clock_(clock),
      metrics_(metrics),
      feed_(staged->default_group()) {}

RolloutManager::~RolloutManager() { Stop(); }

void RolloutManager::Start() {
  {
    // The flags' rollouts exist from the start (their pages and actions
    // answer before the first snapshot); the first snapshot's policies are
    // laid over them when it comes.
    absl::MutexLock offer(&offer_mu_);
    Reconcile(options_.flags);
  }
  watch_ = staged_->Watch(staged_->default_group(),
                          [this](const Published& published) { Offer(published.snapshot); });
  Offer(staged_->Current(staged_->default_group()).snapshot);
}

void RolloutManager::Stop() {
  watch_.reset();
  Controllers controllers;
  {
    absl::MutexLock lock(&mu_);
    controllers = controllers_;
  }
  for (const auto& [name, controller] : controllers) controller->Stop();
}

void RolloutManager::Offer(SnapshotPtr snapshot) {
  if (snapshot == nullptr) return;
  absl::MutexLock offer(&offer_mu_);
  const RolloutPolicies wanted = Overlay(options_.flags, snapshot->rollouts());
  bool changed;
  {
    absl::MutexLock lock(&mu_);
    changed = first_offer_ || !(wanted == policies_);
  }
  if (changed) Reconcile(wanted);
  first_offer_ = false;
  // Only Reconcile, under offer_mu_, changes the rollouts.
  const bool staged_rollouts = wanted.enabled();
  // The feed always holds the latest, so that a rollout made later starts
  // its bake from it; without rollouts the snapshot is served at once.
  if (!staged_rollouts) serving_->Set(serving_->default_group(), snapshot);
  feed_.Set(feed_.default_group(), std::move(snapshot));
}

std::shared_ptr<RolloutController> RolloutManager::MakeController(const std::string& name,
                                                                  const RolloutPolicy& policy) {
  const std::string key = name.empty() ? serving_->default_group() : name;
  auto controller = std::make_shared<RolloutController>(
      RolloutController::Options{.policy = policy,
                                 .group = name,
                                 .state_dir = options_.state_dir,
                                 .restore_stable = first_offer_,
                                 .initial_stable = serving_->Current(key).snapshot,
                                 .check_interval = options_.check_interval,
                                 .shared = options_.shared,
                                 .replica_id = options_.replica_id,
                                 .ledger_interval = options_.ledger_interval},
      &feed_, serving_, proxies_, clock_, metrics_);
  if (held_listener_) {
    controller->OnHeldStatuses([listener = held_listener_, name](StatusMap statuses) {
      listener(name, std::move(statuses));
    });
  }
  LogInfo("%s starts (%s)", Named(name), policy.Origin());
  controller->Start();
  return controller;
}

void RolloutManager::Reconcile(const RolloutPolicies& wanted) {
  const std::map<std::string, RolloutPolicy> rollouts = RolloutsOf(wanted);
  Controllers current;
  {
    absl::MutexLock lock(&mu_);
    current = controllers_;
  }
  // New rollouts publish their stages before any stream is sent to them.
  Controllers next;
  for (const auto& [name, policy] : rollouts) {
    auto it = current.find(name);
    if (it == current.end()) {
      next[name] = MakeController(name, policy);
    } else {
      it->second->SetPolicy(policy);
      next[name] = it->second;
    }
  }
  {
    absl::MutexLock lock(&mu_);
    controllers_ = next;
    policies_ = wanted;
  }
  router_->SetRule(
      rollouts.empty()
          ? CanaryRouter::Rule()
          : [wanted](const envoy::config::core::v3::Node& node,
                     const std::string& group) -> std::optional<std::string> {
              const std::string name = wanted.RolloutOf(group);
              const RolloutPolicy& policy = wanted.PolicyOf(name);
              if (policy.enabled() && IsCanary(policy, node)) return name;
              return std::nullopt;
            });
  // Streams have moved off the rollouts that are gone; their keys go, so
  // their groups see the default group's snapshot again.
  for (const auto& [name, controller] : current) {
    if (next.contains(name)) continue;
    LogInfo("%s ends: its policy was removed", Named(name));
    controller->Retire();
    if (!name.empty()) serving_->Remove(name);
    serving_->Remove(CanaryKey(name));
    if (held_listener_) held_listener_(name, {});
  }
}

std::shared_ptr<RolloutController> RolloutManager::Find(const std::string& group) const {
  absl::MutexLock lock(&mu_);
  auto it = controllers_.find(group);
  return it == controllers_.end() ? nullptr : it->second;
}

void RolloutManager::CheckNow() {
  Controllers controllers;
  {
    absl::MutexLock lock(&mu_);
    controllers = controllers_;
  }
  for (const auto& [name, controller] : controllers) controller->Check();
}

nlohmann::json RolloutManager::NoRollout(const std::string& group) const {
  return {{"enabled", false},
          {"done", false},
          {"error", group.empty() ? std::string("no staged rollout: no policy chooses canaries")
                                  : absl::StrCat("node group ", group,
                                                 " has no rollout of its own")}};
}

nlohmann::json RolloutManager::ToJson() const {
  Controllers controllers;
  {
    absl::MutexLock lock(&mu_);
    controllers = controllers_;
  }
  if (controllers.empty()) return NoRollout("");
  nlohmann::json page = controllers.at("")->ToJson();
  page["enabled"] = true;
  nlohmann::json groups = nlohmann::json::object();
  for (const auto& [name, controller] : controllers) {
    if (!name.empty()) groups[name] = controller->ToJson();
  }
  page["groups"] = std::move(groups);
  return page;
}

nlohmann::json RolloutManager::Promote(const std::string& group) {
  std::shared_ptr<RolloutController> controller = Find(group);
  return controller != nullptr ? controller->Promote() : NoRollout(group);
}

nlohmann::json RolloutManager::Abort(const std::string& group) {
  std::shared_ptr<RolloutController> controller = Find(group);
  return controller != nullptr ? controller->Abort() : NoRollout(group);
}

}  // namespace holdfast
