#pragma once

#include <cstdint>

#include "absl/random/random.h"
#include "absl/time/time.h"

namespace holdfast {

// Jittered exponential backoff: each delay is drawn uniformly from the upper
// half of a window that doubles after every failure, up to `max`. The jitter
// keeps a fleet of replicas that lost their store at the same moment from
// retrying in lockstep.
class Backoff {
 public:
  Backoff(absl::Duration initial, absl::Duration max) : initial_(initial), max_(max), window_(initial) {}

  absl::Duration Next() {
    absl::Duration window = window_;
    window_ = std::min(window_ * 2, max_);
    double fraction = absl::Uniform(rng_, 0.5, 1.0);
    return window * fraction;
  }
  void Reset() { window_ = initial_; }

 private:
  const absl::Duration initial_;
  const absl::Duration max_;
  absl::Duration window_;
  absl::BitGen rng_;
};

}  // namespace holdfast
