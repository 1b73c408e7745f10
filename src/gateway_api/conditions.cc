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

}  // namespace holdfast::gateway_api
