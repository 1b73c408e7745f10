#pragma once

#include <string>

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
};

void AddRolloutFlags(CLI::App* serve, RolloutFlags* flags);
// The policy the flags describe (not enabled when no canary is chosen);
// errors name the flag.
absl::StatusOr<RolloutPolicy> ParseRolloutFlags(const RolloutFlags& flags);

}  // namespace holdfast
