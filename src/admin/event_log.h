#pragma once

#include <cstddef>
#include <deque>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "src/common/clock.h"

namespace holdfast {

// What happened to a replica lately, for people: publications, leadership
// changes, store outages and recoveries. Bounded (the oldest go first), so
// a flapping store cannot grow it. Thread-safe.
class EventLog {
 public:
  struct Event {
    absl::Time at;
    std::string kind;  // "publication", "leadership", "store", "serving"
    std::string message;
  };

  explicit EventLog(const Clock& clock, size_t capacity = 200)
      : clock_(clock), capacity_(capacity) {}

  // Records at `at`, or now when InfinitePast().
  void Record(std::string kind, std::string message, absl::Time at = absl::InfinitePast());
  // Newest first.
  std::vector<Event> Recent() const;
  nlohmann::json ToJson() const;

 private:
  const Clock& clock_;
  const size_t capacity_;
  mutable absl::Mutex mu_;
  std::deque<Event> events_ ABSL_GUARDED_BY(mu_);  // oldest first
};

}  // namespace holdfast
