#include "src/xds/name_set.h"

#include <algorithm>

#include "absl/hash/hash.h"

namespace holdfast {

NameSet::NameSet(std::vector<std::string> sorted_unique) : names_(std::move(sorted_unique)) {
  index_.reserve(names_.size());
  for (const std::string& name : names_) index_.insert(name);
}

NameSetPtr NameSetPool::Intern(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  const uint64_t hash = absl::HashOf(names);

  absl::MutexLock lock(&mu_);
  std::vector<std::weak_ptr<const NameSet>>& bucket = sets_[hash];
  for (const std::weak_ptr<const NameSet>& weak : bucket) {
    if (NameSetPtr set = weak.lock(); set != nullptr && set->names_ == names) return set;
  }
  // Built under the lock so that two streams interning the same new set get
  // the same object.
  NameSetPtr set(new NameSet(std::move(names)));
  bucket.push_back(set);
  if (++entries_ >= sweep_at_) {
    entries_ = 0;
    for (auto it = sets_.begin(); it != sets_.end();) {
      std::erase_if(it->second, [](const auto& w) { return w.expired(); });
      entries_ += it->second.size();
      if (it->second.empty()) {
        sets_.erase(it++);
      } else {
        ++it;
      }
    }
    sweep_at_ = std::max<size_t>(64, entries_ * 2);
  }
  return set;
}

size_t NameSetPool::live_sets() {
  absl::MutexLock lock(&mu_);
  size_t live = 0;
  for (const auto& [hash, bucket] : sets_) {
    for (const auto& weak : bucket) live += weak.expired() ? 0 : 1;
  }
  return live;
}

}  // namespace holdfast
