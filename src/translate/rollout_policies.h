#pragma once

#include "src/model/types.h"
#include "src/snapshot/rollout_policy.h"
#include "src/translate/object_index.h"
#include "src/translate/status.h"

namespace holdfast {

// The rollout policies of the objects in effect (RolloutPolicy objects):
// one per node group, and at most one without a group (every other group).
// When two name the same group, the first by key keeps it and the other is
// Rejected, naming the one that has it: a policy never changes because an
// object was added beside it.
ConfiguredRollouts CollectRolloutPolicies(const SortedObjects& effective, StatusMap& statuses);

}  // namespace holdfast
