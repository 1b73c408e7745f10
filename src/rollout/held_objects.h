#pragma once

#include "absl/strings/string_view.h"
#include "src/snapshot/snapshot.h"
#include "src/translate/status.h"

namespace holdfast {

// The statuses a held rollout puts on gateway objects: every object behind
// a resource that `candidate` adds or changes over `stable`
// (OriginsOfChange), of `rejected_type` or, when it is empty (a timeout,
// the operator), of any type, is Rejected with `reason`, serving its last
// good version where `stable` has one. Laid over the translation's
// statuses (ConfigPipeline::SetOverlay).
StatusMap HeldObjectStatuses(const Snapshot& stable, const Snapshot& candidate,
                             absl::string_view rejected_type, absl::string_view reason);

}  // namespace holdfast
