#include "src/gateway_api/conditions.h"

namespace holdfast::gateway_api {

void SetCondition(std::vector<Condition>& conditions, Condition condition) {
  for (Condition& existing : conditions) {
    if (existing.type == condition.type) {
      existing = std::move(condition);
      return;
    }
  }
  conditions.push_back(std::move(condition));
}

const Condition* FindCondition(const std::vector<Condition>& conditions, const std::string& type) {
  for (const Condition& condition : conditions) {
    if (condition.type == type) return &condition;
  }
  return nullptr;
}

const GatewayApiStatuses::Shared* GatewayApiStatuses::Find(const ObjectKey& key) const {
  auto it = statuses_.find(key);
  return it == statuses_.end() ? nullptr : &it->second;
}

GatewayApiStatus& GatewayApiStatuses::Mutable(const ObjectKey& key) {
  Shared& status = statuses_[key];
  if (status == nullptr) {
    auto made = std::make_shared<GatewayApiStatus>();
    made->key = key;
    status = std::move(made);
  } else if (status.use_count() > 1) {
    status = std::make_shared<GatewayApiStatus>(*status);
  }
  // Every status here was made non-const (Put takes no const ones), and no
  // one else holds this one.
  return const_cast<GatewayApiStatus&>(*status);
}

void GatewayApiStatuses::Put(std::shared_ptr<GatewayApiStatus> status) {
  ObjectKey key = status->key;
  statuses_[std::move(key)] = std::move(status);
}

}  // namespace holdfast::gateway_api
