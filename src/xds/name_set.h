#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace holdfast {

// An immutable set of resource names that streams subscribe to.
//
// A fleet's proxies mostly ask for the same names, so sets are interned by
// NameSetPool: streams with equal subscriptions share one NameSet, equal
// sets are the same object (compare pointers), and a stream's subscription
// costs a pointer instead of a copy of every name.
class NameSet {
 public:
  // Sorted, without duplicates.
  const std::vector<std::string>& names() const { return names_; }
  size_t size() const { return names_.size(); }
  bool empty() const { return names_.empty(); }
  bool contains(absl::string_view name) const { return index_.contains(name); }

 private:
  friend class NameSetPool;
  explicit NameSet(std::vector<std::string> sorted_unique);

  std::vector<std::string> names_;
  absl::flat_hash_set<absl::string_view> index_;  // views into names_
};

using NameSetPtr = std::shared_ptr<const NameSet>;

// Interns NameSets. Thread-safe. Holds sets weakly: a set lives as long as
// some stream subscribes to it.
class NameSetPool {
 public:
  // The set of `names` (any order, duplicates allowed).
  NameSetPtr Intern(std::vector<std::string> names);
  // The empty set.
  NameSetPtr Empty() { return Intern({}); }
  size_t live_sets();

 private:
  absl::Mutex mu_;
  absl::flat_hash_map<uint64_t, std::vector<std::weak_ptr<const NameSet>>> sets_
      ABSL_GUARDED_BY(mu_);
  size_t entries_ ABSL_GUARDED_BY(mu_) = 0;
  size_t sweep_at_ ABSL_GUARDED_BY(mu_) = 64;
};

}  // namespace holdfast
