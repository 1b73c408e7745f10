#pragma once

#include <algorithm>
#include <cstdint>

#include "absl/time/time.h"
#include "src/common/random.h"

namespace holdfast {

// Jittered exponential backoff: each delay is drawn uniformly from the upper
// half of a window that doubles after every failure, up to `max`. The jitter
// keeps a fleet of replicas that lost their store at the same moment from
// retrying in lockstep. Thread-compatible.
class Backoff {
 public:
  // Draws from `random`, which must outlive the backoff.
  Backoff(absl::Duration initial, absl::Duration max, Random& random)
      : initial_(initial), max_(max), window_(initial), random_(random) {}
  // Draws from Random::Real().
  Backoff(absl::Duration initial, absl::Duration max) : Backoff(initial, max, Random::Real()) {}

  absl::Duration Next() {
    absl::Duration window = window_;
    window_ = std::min(window_ * 2, max_);
    double fraction = 0.5 + 0.5 * random_.Fraction();
    return window * fraction;
  }
  void Reset() { window_ = initial_; }

 private:
  const absl::Duration initial_;
  const absl::Duration max_;
  absl::Duration window_;
  Random& random_;
};

}  // namespace holdfast
