#include "src/xds/subscription.h"

#include <algorithm>

namespace holdfast {

void Subscription::ApplySotw(const Names& names) {
  const bool first = !seen_request_;
  seen_request_ = true;
  if (names.empty()) {
    if (first) legacy_wildcard_ = wildcard_ = true;
    if (!legacy_wildcard_) {
      wildcard_ = false;  // an explicit empty list unsubscribes everything
      names_.clear();
    }
    return;
  }
  legacy_wildcard_ = false;
  // Clients repeat the whole list in every ACK: don't rebuild an unchanged set.
  if (!wildcard_ && static_cast<size_t>(names.size()) == names_.size() &&
      std::all_of(names.begin(), names.end(),
                  [this](const std::string& n) { return names_.contains(n); })) {
    return;
  }
  wildcard_ = false;
  names_.clear();
  for (const std::string& name : names) {
    if (name == "*") {
      wildcard_ = true;
    } else {
      names_.insert(name);
    }
  }
}

void Subscription::ApplyDelta(const Names& subscribe, const Names& unsubscribe) {
  const bool first = !seen_request_;
  seen_request_ = true;
  if (first && subscribe.empty()) legacy_wildcard_ = wildcard_ = true;
  for (const std::string& name : subscribe) {
    if (name == "*") {
      wildcard_ = true;
    } else {
      names_.insert(name);
    }
  }
  for (const std::string& name : unsubscribe) {
    if (name == "*") {
      wildcard_ = legacy_wildcard_ = false;
    } else {
      names_.erase(name);
    }
  }
}

}  // namespace holdfast
