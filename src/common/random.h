#pragma once

#include <cstdint>
#include <random>

#include "absl/base/thread_annotations.h"
#include "absl/random/random.h"
#include "absl/synchronization/mutex.h"

namespace holdfast {

// Source of randomness for retry jitter. Production code takes a Random&
// instead of owning a generator, so tests can make retry schedules
// deterministic, as they make time deterministic with a SimulatedClock.
class Random {
 public:
  virtual ~Random() = default;
  // A number drawn uniformly from [0, 1). Implementations used by more than
  // one thread must be thread-safe (Real() is).
  virtual double Fraction() = 0;

  // The process's source: an absl::BitGen seeded by the operating system.
  // Thread-safe. Never destroyed.
  static Random& Real();
};

namespace random_internal {

class BitGenRandom : public Random {
 public:
  double Fraction() override {
    absl::MutexLock lock(&mu_);
    return absl::Uniform(gen_, 0.0, 1.0);
  }

 private:
  absl::Mutex mu_;
  absl::BitGen gen_ ABSL_GUARDED_BY(mu_);
};

}  // namespace random_internal

inline Random& Random::Real() {
  static Random* const real = new random_internal::BitGenRandom;
  return *real;
}

// Deterministic draws for tests: a Mersenne Twister, whose output the C++
// standard fixes for a given seed.
class SeededRandom : public Random {
 public:
  explicit SeededRandom(uint32_t seed) : gen_(seed) {}
  double Fraction() override { return static_cast<double>(gen_()) / 4294967296.0; }

 private:
  std::mt19937 gen_;
};

// The same draw every time, for tests.
class FixedRandom : public Random {
 public:
  explicit FixedRandom(double fraction) : fraction_(fraction) {}
  double Fraction() override { return fraction_; }

 private:
  const double fraction_;
};

}  // namespace holdfast
