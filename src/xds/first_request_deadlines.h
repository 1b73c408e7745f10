#pragma once

#include <cstdint>
#include <functional>
#include <map>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "src/common/clock.h"
#include "src/common/metrics.h"

namespace holdfast {

// Streams that have not sent their first request yet, with the time by
// which they must. Every open stream costs memory and, when it is the only
// one on its connection, a file descriptor; a client that opens streams and
// says nothing would otherwise hold both forever.
class FirstRequestDeadlines {
 public:
  // Ends one stream; returns false if it had sent its request meanwhile or
  // was already ending.
  using Expire = std::function<bool()>;

  FirstRequestDeadlines(absl::Duration timeout, const Clock& clock)
      : timeout_(timeout), clock_(clock) {}

  void Add(uint64_t stream_id, Expire expire);
  // The stream sent its first request, or ended.
  void Remove(uint64_t stream_id);
  // Expires every stream past its deadline and forgets it; returns how many
  // it ended. Calls `expire` without the lock held.
  size_t ExpireOverdue();

  // Counts in `counter` each stream an `expire` ends. Call before the first
  // Add.
  void CountEndsIn(Counter* counter) { ended_ = counter; }
  // Called by an `expire` just before it ends its stream: its client can see
  // the end at once, and a count made after could be read before it.
  void NoteEnding() {
    if (ended_ != nullptr) ended_->Increment();
  }

  absl::Duration timeout() const { return timeout_; }
  size_t size() const;

 private:
  struct Pending {
    absl::Duration deadline;  // on clock_.Monotonic()
    Expire expire;
  };

  const absl::Duration timeout_;
  const Clock& clock_;
  Counter* ended_ = nullptr;
  mutable absl::Mutex mu_;
  std::map<uint64_t, Pending> pending_ ABSL_GUARDED_BY(mu_);
};

}  // namespace holdfast
