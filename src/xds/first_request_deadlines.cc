#include "src/xds/first_request_deadlines.h"

#include <vector>

namespace holdfast {

void FirstRequestDeadlines::Add(uint64_t stream_id, Expire expire) {
  Pending pending{clock_.Monotonic() + timeout_, std::move(expire)};
  absl::MutexLock lock(&mu_);
  pending_.emplace(stream_id, std::move(pending));
}

void FirstRequestDeadlines::Remove(uint64_t stream_id) {
  absl::MutexLock lock(&mu_);
  pending_.erase(stream_id);
}

size_t FirstRequestDeadlines::ExpireOverdue() {
  const absl::Duration now = clock_.Monotonic();
  std::vector<Expire> overdue;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (it->second.deadline > now) {
        ++it;
        continue;
      }
      overdue.push_back(std::move(it->second.expire));
      it = pending_.erase(it);
    }
  }
  // Ending a stream takes the stream's lock, which its own thread may hold
  // while it calls Remove: never under mu_.
  size_t ended = 0;
  for (Expire& expire : overdue) ended += expire() ? 1 : 0;
  return ended;
}

size_t FirstRequestDeadlines::size() const {
  absl::MutexLock lock(&mu_);
  return pending_.size();
}

}  // namespace holdfast
