#include "src/xds/canary_router.h"

#include <vector>

namespace holdfast {

CanaryRouter::Subscription::~Subscription() { router_->Unsubscribe(id_); }

std::optional<std::string> CanaryRouter::CanaryOf(const envoy::config::core::v3::Node& node,
                                                  const std::string& group) const {
  std::shared_ptr<const Rule> rule;
  {
    absl::MutexLock lock(&mu_);
    rule = rule_;
  }
  return rule != nullptr && *rule ? (*rule)(node, group) : std::nullopt;
}

void CanaryRouter::SetRule(Rule rule) {
  absl::MutexLock notify(&notify_mu_);
  std::vector<std::shared_ptr<std::function<void()>>> to_call;
  {
    absl::MutexLock lock(&mu_);
    rule_ = std::make_shared<const Rule>(std::move(rule));
    to_call.reserve(subscribers_.size());
    for (const auto& [id, callback] : subscribers_) to_call.push_back(callback);
  }
  for (const auto& callback : to_call) (*callback)();
}

std::unique_ptr<CanaryRouter::Subscription> CanaryRouter::Subscribe(
    std::function<void()> rule_changed) {
  absl::MutexLock lock(&mu_);
  const uint64_t id = next_id_++;
  subscribers_.emplace(id, std::make_shared<std::function<void()>>(std::move(rule_changed)));
  return std::unique_ptr<Subscription>(new Subscription(this, id));
}

void CanaryRouter::Unsubscribe(uint64_t id) {
  absl::MutexLock notify(&notify_mu_);
  absl::MutexLock lock(&mu_);
  subscribers_.erase(id);
}

}  // namespace holdfast
