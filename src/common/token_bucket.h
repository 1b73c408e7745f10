#pragma once

#include <algorithm>

#include "absl/time/time.h"
#include "src/common/clock.h"

namespace holdfast {

// Allows `rate` events per second on average and `burst` at once. Not
// thread-safe: one owner takes from it.
class TokenBucket {
 public:
  TokenBucket(const Clock& clock, double rate, double burst)
      : clock_(clock), rate_(rate), burst_(burst), tokens_(burst), last_(clock.Monotonic()) {}

  // Takes one token if there is one.
  bool TryTake() {
    const absl::Duration now = clock_.Monotonic();
    tokens_ = std::min(burst_, tokens_ + absl::ToDoubleSeconds(now - last_) * rate_);
    last_ = now;
    if (tokens_ < 1) return false;
    tokens_ -= 1;
    return true;
  }

 private:
  const Clock& clock_;
  const double rate_;
  const double burst_;
  double tokens_;
  absl::Duration last_;
};

}  // namespace holdfast
