#pragma once

#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace holdfast {

// Which proxies of a node group get a new snapshot first, and how long it
// must hold there before everyone gets it (docs/operations.md, "Staged
// rollout"). Off unless canaries are chosen. Made from serve's --rollout-*
// flags or from a RolloutPolicy object in the configuration, which a
// snapshot carries (Snapshot::rollouts) so that it takes effect with the
// configuration it came with, on every replica alike.
struct RolloutPolicy {
  // A proxy is a canary when a stable hash of its node id, mod 100, is
  // below this (0: none by hash), or when its node metadata has
  // `metadata_key` set to the string `metadata_value`.
  int canary_percent = 0;
  std::string metadata_key;
  std::string metadata_value;
  // Every canary must have ACKed the new snapshot and none NACKed it, and
  // this long must have passed since the canaries were offered it.
  absl::Duration bake = absl::Seconds(60);
  // Canaries that have not all ACKed by then hold the rollout.
  absl::Duration ack_timeout = absl::Seconds(30);
  // Where it was set, for people: "flags", "RolloutPolicy ns/name".
  std::string origin;

  bool enabled() const { return canary_percent > 0 || !metadata_key.empty(); }
  std::string Origin() const { return origin.empty() ? "flags" : origin; }
  // Whether both choose the same canaries.
  bool SameCanaries(const RolloutPolicy& other) const;
  bool operator==(const RolloutPolicy&) const = default;
};

// The policies the configuration sets (RolloutPolicy objects, translated):
// one for every node group without its own (`fallback`, a policy with no
// nodeGroup) and one per named group. Laid over the flags' (Overlay).
struct ConfiguredRollouts {
  std::optional<RolloutPolicy> fallback;
  std::map<std::string, RolloutPolicy> groups;

  bool empty() const { return !fallback && groups.empty(); }
  bool operator==(const ConfiguredRollouts&) const = default;
};

// A canonical text of `rollouts` (JSON, keys sorted): part of a snapshot's
// version and of its file. "" when empty.
std::string EncodeRollouts(const ConfiguredRollouts& rollouts);
// The inverse of EncodeRollouts; an error says what is malformed.
absl::StatusOr<ConfiguredRollouts> DecodeRollouts(const std::string& text);

// The staged rollouts of a replica: one for each node group named here,
// with its own policy (disabled: that group gets every snapshot at once),
// and one, `fallback`, for every other group.
struct RolloutPolicies {
  RolloutPolicy fallback;
  std::map<std::string, RolloutPolicy> groups;

  // Whether any rollout chooses canaries.
  bool enabled() const;
  // The rollout that serves node group `group`: its name, or "".
  std::string RolloutOf(const std::string& group) const {
    return groups.contains(group) ? group : "";
  }
  // The policy of rollout `name` (as RolloutOf says).
  const RolloutPolicy& PolicyOf(const std::string& name) const;
  bool operator==(const RolloutPolicies&) const = default;
};

// The flags' policies with the configuration's over them: a configured
// fallback replaces the flags' fallback, a configured group's policy
// replaces or adds that group's.
RolloutPolicies Overlay(const RolloutPolicies& flags, const ConfiguredRollouts& configured);

}  // namespace holdfast
