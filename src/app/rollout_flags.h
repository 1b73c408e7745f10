#pragma once

#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "src/rollout/rollout.h"

namespace holdfast {

// serve's --rollout-* flags, as typed.
struct RolloutFlags {
  int canary_percent = 0;
  std::string canary_metadata;  // KEY=VALUE
  std::string bake = "60s";
  std::string ack_timeout = "30s";
  // GROUP:SETTING=VALUE,... or GROUP:off, one per node group with a
  // rollout of its own (GROUP ends at the last ':').
  std::vector<std::string> groups;
};

void AddRolloutFlags(CLI::App* serve, RolloutFlags* flags);
// The policies the flags describe: the --rollout-canary-* and timing flags
// make the policy of every group not named by --rollout-group (not enabled
// when no canary is chosen); each --rollout-group starts from the timing
// flags. Errors name the flag and the setting.
absl::StatusOr<RolloutPolicies> ParseRolloutFlags(const RolloutFlags& flags);

}  // namespace holdfast
