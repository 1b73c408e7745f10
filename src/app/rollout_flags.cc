#include "src/app/rollout_flags.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "src/app/etcd_flags.h"

namespace holdfast {
namespace {

absl::Status ParseCanaryMetadata(const std::string& flag, absl::string_view text,
                                 RolloutPolicy* policy) {
  const size_t eq = text.find('=');
  if (eq == absl::string_view::npos || eq == 0) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " ", text, ": want KEY=VALUE"));
  }
  policy->metadata_key = std::string(text.substr(0, eq));
  policy->metadata_value = std::string(text.substr(eq + 1));
  return absl::OkStatus();
}

// One SETTING=VALUE of a --rollout-group.
absl::Status ApplyGroupSetting(const std::string& flag, absl::string_view setting,
                               RolloutPolicy* policy) {
  std::pair<absl::string_view, absl::string_view> kv =
      absl::StrSplit(setting, absl::MaxSplits('=', 1));
  const auto [key, value] = kv;
  const std::string where = absl::StrCat(flag, ": ", key);
  if (key == "canary-percent") {
    if (!absl::SimpleAtoi(value, &policy->canary_percent) || policy->canary_percent < 0 ||
        policy->canary_percent > 100) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": want 0 to 100, got \"", value, "\""));
    }
    return absl::OkStatus();
  }
  if (key == "canary-metadata") return ParseCanaryMetadata(where, value, policy);
  if (key == "bake" || key == "ack-timeout") {
    absl::StatusOr<absl::Duration> duration = ParseFlagDuration(where, std::string(value));
    if (!duration.ok()) return duration.status();
    (key == "bake" ? policy->bake : policy->ack_timeout) = *duration;
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      where, ": unknown setting (canary-percent, canary-metadata, bake, ack-timeout)"));
}

absl::Status ParseGroup(const std::string& text, const RolloutPolicy& timing,
                        RolloutPolicies* policies) {
  const std::string flag = absl::StrCat("--rollout-group ", text);
  // Group names may hold colons (SPIFFE IDs); settings do not.
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": want GROUP:SETTING=VALUE,... or GROUP:off"));
  }
  const std::string group = text.substr(0, colon);
  if (policies->groups.contains(group)) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": group ", group, " named twice"));
  }
  RolloutPolicy policy{.bake = timing.bake, .ack_timeout = timing.ack_timeout};
  const absl::string_view settings = absl::string_view(text).substr(colon + 1);
  if (settings != "off") {
    for (absl::string_view setting : absl::StrSplit(settings, ',', absl::SkipEmpty())) {
      if (absl::Status applied = ApplyGroupSetting(flag, setting, &policy); !applied.ok()) {
        return applied;
      }
    }
    if (!policy.enabled()) {
      return absl::InvalidArgumentError(absl::StrCat(
          flag, ": chooses no canary (set canary-percent or canary-metadata, or write off)"));
    }
  }
  policies->groups.emplace(group, std::move(policy));
  return absl::OkStatus();
}

}  // namespace

void AddRolloutFlags(CLI::App* serve, RolloutFlags* flags) {
  serve
      ->add_option("--rollout-canary-percent", flags->canary_percent,
                   "Staged rollout: this percentage of proxies (by a stable hash of the node id) "
                   "gets each new snapshot first")
      ->check(CLI::Range(0, 100));
  serve->add_option("--rollout-canary-metadata", flags->canary_metadata,
                    "Staged rollout: proxies whose node metadata has KEY set to the string VALUE "
                    "are canaries too (KEY=VALUE)");
  serve
      ->add_option("--rollout-bake", flags->bake,
                   "How long every canary must hold a new snapshot, ACKed and not NACKed, before "
                   "every proxy gets it")
      ->capture_default_str();
  serve
      ->add_option("--rollout-ack-timeout", flags->ack_timeout,
                   "Canaries that have not all ACKed a new snapshot by then hold the rollout")
      ->capture_default_str();
  serve->add_option("--rollout-group", flags->groups,
                    "A node group's own staged rollout, GROUP:SETTING=VALUE,... (canary-percent, "
                    "canary-metadata=KEY=VALUE, bake, ack-timeout; timing from --rollout-bake and "
                    "--rollout-ack-timeout unless set), or GROUP:off for none; repeatable");
}

absl::StatusOr<RolloutPolicies> ParseRolloutFlags(const RolloutFlags& flags) {
  RolloutPolicies policies;
  RolloutPolicy& fallback = policies.fallback;
  fallback.canary_percent = flags.canary_percent;
  if (!flags.canary_metadata.empty()) {
    if (absl::Status parsed =
            ParseCanaryMetadata("--rollout-canary-metadata", flags.canary_metadata, &fallback);
        !parsed.ok()) {
      return parsed;
    }
  }
  absl::StatusOr<absl::Duration> bake = ParseFlagDuration("--rollout-bake", flags.bake);
  if (!bake.ok()) return bake.status();
  absl::StatusOr<absl::Duration> timeout =
      ParseFlagDuration("--rollout-ack-timeout", flags.ack_timeout);
  if (!timeout.ok()) return timeout.status();
  fallback.bake = *bake;
  fallback.ack_timeout = *timeout;
  for (const std::string& group : flags.groups) {
    if (absl::Status parsed = ParseGroup(group, fallback, &policies); !parsed.ok()) return parsed;
  }
  return policies;
}

}  // namespace holdfast
