#include "src/app/rollout_flags.h"

#include "absl/strings/str_cat.h"
#include "src/app/etcd_flags.h"

namespace holdfast {

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
}

absl::StatusOr<RolloutPolicy> ParseRolloutFlags(const RolloutFlags& flags) {
  RolloutPolicy policy;
  policy.canary_percent = flags.canary_percent;
  if (!flags.canary_metadata.empty()) {
    const size_t eq = flags.canary_metadata.find('=');
    if (eq == std::string::npos || eq == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--rollout-canary-metadata ", flags.canary_metadata, ": want KEY=VALUE"));
    }
    policy.metadata_key = flags.canary_metadata.substr(0, eq);
    policy.metadata_value = flags.canary_metadata.substr(eq + 1);
  }
  absl::StatusOr<absl::Duration> bake = ParseFlagDuration("--rollout-bake", flags.bake);
  if (!bake.ok()) return bake.status();
  absl::StatusOr<absl::Duration> timeout =
      ParseFlagDuration("--rollout-ack-timeout", flags.ack_timeout);
  if (!timeout.ok()) return timeout.status();
  policy.bake = *bake;
  policy.ack_timeout = *timeout;
  return policy;
}

}  // namespace holdfast
