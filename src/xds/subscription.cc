#include "src/xds/subscription.h"

#include <algorithm>
#include <vector>

namespace holdfast {

Subscription::Subscription(NameSetPool* pool) : pool_(pool), names_(pool->Empty()) {}

bool Subscription::ApplySotw(absl::Span<const absl::string_view> names) {
  const bool first = !seen_request_;
  seen_request_ = true;
  if (names.empty()) {
    const bool was_wildcard = wildcard_;
    const bool had_names = !names_->empty();
    if (first) legacy_wildcard_ = wildcard_ = true;
    if (!legacy_wildcard_) {
      wildcard_ = false;  // an explicit empty list unsubscribes everything
      names_ = pool_->Empty();
    }
    return wildcard_ != was_wildcard || (had_names && names_->empty());
  }
  legacy_wildcard_ = false;
  // Clients repeat the whole list in every ACK, so an unchanged list is the
  // common case: in sorted order (as Envoy and most clients send it) it is a
  // plain comparison, otherwise one lookup per name; no allocation either way.
  if (!wildcard_ &&
      std::equal(names.begin(), names.end(), names_->names().begin(), names_->names().end())) {
    return false;
  }
  const bool has_star = std::find(names.begin(), names.end(), "*") != names.end();
  if (has_star == wildcard_ &&
      static_cast<size_t>(names.size()) == names_->size() + (has_star ? 1 : 0) &&
      std::all_of(names.begin(), names.end(),
                  [this](absl::string_view n) { return n == "*" || names_->contains(n); })) {
    return false;
  }
  const bool was_wildcard = wildcard_;
  const NameSetPtr before = names_;
  wildcard_ = has_star;
  std::vector<std::string> named;
  named.reserve(names.size());
  for (absl::string_view name : names) {
    if (name != "*") named.emplace_back(name);
  }
  names_ = pool_->Intern(std::move(named));
  return wildcard_ != was_wildcard || names_ != before;
}

bool Subscription::AddsWildcard(const Names& subscribe, const Names& unsubscribe) const {
  auto has_star = [](const Names& names) {
    return std::find(names.begin(), names.end(), "*") != names.end();
  };
  const bool legacy = !seen_request_ && subscribe.empty();
  return !wildcard_ && !has_star(unsubscribe) && (legacy || has_star(subscribe));
}

void Subscription::ApplyDelta(const Names& subscribe, const Names& unsubscribe) {
  const bool first = !seen_request_;
  seen_request_ = true;
  if (first && subscribe.empty()) legacy_wildcard_ = wildcard_ = true;
  for (const std::string& name : subscribe) {
    if (name == "*") {
      wildcard_ = true;
    } else if (!dropped_.erase(name) && !names_->contains(name)) {
      added_.insert(name);
    }
  }
  // Unsubscribing wins over subscribing the same name in one request.
  for (const std::string& name : unsubscribe) {
    if (name == "*") {
      wildcard_ = legacy_wildcard_ = false;
    } else if (!added_.erase(name) && names_->contains(name)) {
      dropped_.insert(name);
    }
  }
  // Folding costs every name; once the pending changes are as many as the
  // settled names, the requests that named them have paid for it. A first
  // request always settles, so streams that start alike share their views.
  if (added_.size() + dropped_.size() >= names_->size()) Settle();
}

void Subscription::Settle() {
  if (settled()) return;
  std::vector<std::string> named;
  named.reserve(size());
  ForEachName([&named](const std::string& name) { named.push_back(name); });
  names_ = pool_->Intern(std::move(named));
  added_.clear();
  dropped_.clear();
}

void Subscription::ForEachName(absl::FunctionRef<void(const std::string&)> visit) const {
  for (const std::string& name : names_->names()) {
    if (!dropped_.contains(name)) visit(name);
  }
  for (const std::string& name : added_) visit(name);
}

}  // namespace holdfast
