#include "src/translate/rollout_policies.h"

#include "absl/strings/str_cat.h"

namespace holdfast {
namespace {

RolloutPolicy PolicyOf(const GatewayObject& object) {
  const auto& spec = std::get<RolloutPolicySpec>(*object.spec);
  return {.canary_percent = static_cast<int>(spec.canary_percent),
          .metadata_key = spec.metadata_key,
          .metadata_value = spec.metadata_value,
          .bake = spec.bake,
          .ack_timeout = spec.ack_timeout,
          .origin = absl::StrCat(kind::kRolloutPolicy, " ", object.meta.ns, "/", object.meta.name)};
}

}  // namespace

ConfiguredRollouts CollectRolloutPolicies(const SortedObjects& effective, StatusMap& statuses) {
  ConfiguredRollouts rollouts;
  auto [begin, end] = RangeOfKind(effective, kind::kRolloutPolicy);
  for (auto it = begin; it != end; ++it) {
    const GatewayObject& object = **it;
    const auto& spec = std::get<RolloutPolicySpec>(*object.spec);
    RolloutPolicy policy = PolicyOf(object);
    const RolloutPolicy* taken = nullptr;
    if (!spec.node_group) {
      if (rollouts.fallback) taken = &*rollouts.fallback;
      else rollouts.fallback = std::move(policy);
    } else if (auto [at, added] = rollouts.groups.emplace(*spec.node_group, policy); !added) {
      taken = &at->second;
    }
    if (taken != nullptr) {
      ObjectStatus& status = statuses[object.key()];
      status.Reject(spec.node_group ? "spec.nodeGroup" : "spec",
                    absl::StrCat(spec.node_group ? absl::StrCat("node group \"", *spec.node_group,
                                                                "\"")
                                                 : std::string("every node group without a policy "
                                                               "of its own"),
                                 " already has a rollout policy: ", taken->origin),
                    object.meta.location);
    }
  }
  return rollouts;
}

}  // namespace holdfast
