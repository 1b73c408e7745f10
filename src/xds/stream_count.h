#pragma once

#include <cstdint>

#include "absl/synchronization/mutex.h"

namespace holdfast {

// The streams of one server generation that are not done yet. A stream's
// Closed() is its last act, under a lock, so whoever sees the count reach
// zero (AwaitNone) also sees everything those streams did. gRPC orders a
// server's Wait() after every OnDone too, but inside libgrpc, where neither
// a reader of this code nor ThreadSanitizer can see it.
class StreamCount {
 public:
  void Opened() {
    absl::MutexLock lock(&mu_);
    ++open_;
  }
  void Closed() {
    absl::MutexLock lock(&mu_);
    --open_;
  }
  int64_t open() const {
    absl::MutexLock lock(&mu_);
    return open_;
  }
  // Returns once every opened stream has closed.
  void AwaitNone() const {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](const int64_t* open) { return *open == 0; }, &open_));
  }

 private:
  mutable absl::Mutex mu_;
  int64_t open_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace holdfast
