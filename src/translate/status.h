#pragma once

#include <map>
#include <string>
#include <vector>

#include "src/model/field_errors.h"
#include "src/model/object.h"

namespace holdfast {

enum class StatusState { kAccepted, kWarning, kRejected };
const char* StatusStateName(StatusState state);

// What holdfast made of one object: Accepted (served as written), Warning
// (served, with parts replaced or ignored, as the reasons say) or Rejected
// (not served as written; an earlier accepted version may be served instead).
struct ObjectStatus {
  ObjectKey key;
  StatusState state = StatusState::kAccepted;
  std::vector<FieldError> reasons;
  // Rejected, and its last accepted version is what is served.
  bool serving_last_good = false;
  SourceLocation location;

  void Warn(std::string path, std::string message, SourceLocation where = {});
  void Reject(std::string path, std::string message, SourceLocation where = {});
};

using StatusMap = std::map<ObjectKey, ObjectStatus>;

// `statuses` with the reasons of `more` added (such as problems found
// outside the translation: unreadable files).
StatusMap MergeStatuses(StatusMap statuses, const StatusMap& more);

}  // namespace holdfast
