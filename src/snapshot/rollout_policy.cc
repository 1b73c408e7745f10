#include "src/snapshot/rollout_policy.h"

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace holdfast {
namespace {

nlohmann::json PolicyJson(const RolloutPolicy& policy) {
  return {{"canary_percent", policy.canary_percent},
          {"metadata_key", policy.metadata_key},
          {"metadata_value", policy.metadata_value},
          {"bake_ms", absl::ToInt64Milliseconds(policy.bake)},
          {"ack_timeout_ms", absl::ToInt64Milliseconds(policy.ack_timeout)},
          {"origin", policy.origin}};
}

absl::StatusOr<RolloutPolicy> PolicyFrom(const nlohmann::json& json, const std::string& where) {
  if (!json.is_object()) return absl::InvalidArgumentError(where + ": not an object");
  RolloutPolicy policy;
  try {
    policy.canary_percent = json.at("canary_percent").get<int>();
    policy.metadata_key = json.at("metadata_key").get<std::string>();
    policy.metadata_value = json.at("metadata_value").get<std::string>();
    policy.bake = absl::Milliseconds(json.at("bake_ms").get<int64_t>());
    policy.ack_timeout = absl::Milliseconds(json.at("ack_timeout_ms").get<int64_t>());
    policy.origin = json.at("origin").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", e.what()));
  }
  return policy;
}

}  // namespace

bool RolloutPolicy::SameCanaries(const RolloutPolicy& other) const {
  return canary_percent == other.canary_percent && metadata_key == other.metadata_key &&
         metadata_value == other.metadata_value;
}

std::string EncodeRollouts(const ConfiguredRollouts& rollouts) {
  if (rollouts.empty()) return "";
  nlohmann::json json = {{"groups", nlohmann::json::object()}};
  if (rollouts.fallback) json["fallback"] = PolicyJson(*rollouts.fallback);
  for (const auto& [group, policy] : rollouts.groups) json["groups"][group] = PolicyJson(policy);
  return json.dump();  // nlohmann's objects are sorted by key
}

absl::StatusOr<ConfiguredRollouts> DecodeRollouts(const std::string& text) {
  ConfiguredRollouts rollouts;
  if (text.empty()) return rollouts;
  nlohmann::json json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object() || !json.contains("groups") || !json["groups"].is_object()) {
    return absl::InvalidArgumentError("rollout policies: not an object with \"groups\"");
  }
  if (json.contains("fallback")) {
    absl::StatusOr<RolloutPolicy> fallback = PolicyFrom(json["fallback"], "rollout fallback");
    if (!fallback.ok()) return fallback.status();
    rollouts.fallback = *std::move(fallback);
  }
  for (const auto& [group, value] : json["groups"].items()) {
    absl::StatusOr<RolloutPolicy> policy = PolicyFrom(value, "rollout of group " + group);
    if (!policy.ok()) return policy.status();
    rollouts.groups.emplace(group, *std::move(policy));
  }
  return rollouts;
}

bool RolloutPolicies::enabled() const {
  if (fallback.enabled()) return true;
  for (const auto& [group, policy] : groups) {
    if (policy.enabled()) return true;
  }
  return false;
}

const RolloutPolicy& RolloutPolicies::PolicyOf(const std::string& name) const {
  auto it = groups.find(name);
  return it == groups.end() ? fallback : it->second;
}

RolloutPolicies Overlay(const RolloutPolicies& flags, const ConfiguredRollouts& configured) {
  RolloutPolicies policies = flags;
  if (configured.fallback) policies.fallback = *configured.fallback;
  for (const auto& [group, policy] : configured.groups) policies.groups[group] = policy;
  return policies;
}

}  // namespace holdfast
