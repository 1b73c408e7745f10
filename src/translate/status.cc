#include "src/translate/status.h"

namespace holdfast {

const char* StatusStateName(StatusState state) {
  switch (state) {
    case StatusState::kAccepted:
      return "Accepted";
    case StatusState::kWarning:
      return "Warning";
    case StatusState::kRejected:
      return "Rejected";
  }
  return "?";
}

void ObjectStatus::Warn(std::string path, std::string message, SourceLocation where) {
  if (state == StatusState::kAccepted) state = StatusState::kWarning;
  // The same route is translated for Envoy and for gRPC: report once.
  for (const FieldError& r : reasons) {
    if (r.path == path && r.message == message) return;
  }
  reasons.push_back({std::move(path), std::move(message), where.file.empty() ? location : where});
}

void ObjectStatus::Reject(std::string path, std::string message, SourceLocation where) {
  state = StatusState::kRejected;
  reasons.push_back({std::move(path), std::move(message), where.file.empty() ? location : where});
}

StatusMap MergeStatuses(StatusMap statuses, const StatusMap& more) {
  for (const auto& [key, extra] : more) {
    auto it = statuses.find(key);
    if (it == statuses.end()) {
      statuses[key] = extra;
      continue;
    }
    for (const FieldError& reason : extra.reasons) {
      if (extra.state == StatusState::kRejected) {
        it->second.Reject(reason.path, reason.message, reason.location);
      } else {
        it->second.Warn(reason.path, reason.message, reason.location);
      }
    }
  }
  return statuses;
}

}  // namespace holdfast
