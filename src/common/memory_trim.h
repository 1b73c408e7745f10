#pragma once

#include <cstdint>
#include <functional>

#include "absl/time/time.h"
#include "src/common/poller.h"

namespace holdfast {

// Hands freed heap memory back to the kernel now and then.
//
// glibc keeps freed memory in its arenas unless it sits at the very top of
// the heap, so a translation's temporaries or a fleet that disconnected stay
// in the resident set for the life of the process: about a third of an idle
// replica's heap. After `activity` (any value that changes when the process
// did something worth trimming after, e.g. a publication or a stream closing)
// has changed, the next tick trims. Trimming walks the free lists with each
// arena's lock held, a few ms for hundreds of MB, so it runs at most once
// per `interval` and never while nothing happened.
class MemoryTrimmer {
 public:
  explicit MemoryTrimmer(std::function<uint64_t()> activity) : activity_(std::move(activity)) {}
  void Start(absl::Duration interval);
  void Stop() { poller_.Stop(); }
  // Trims if the activity value changed since the last trim; true if it did.
  bool MaybeTrim();

 private:
  std::function<uint64_t()> activity_;
  uint64_t trimmed_at_ = 0;  // the activity value at the last trim (tick thread only)
  bool trimmed_once_ = false;
  Poller poller_;
};

// Returns freed heap memory to the kernel (malloc_trim on glibc; nothing
// elsewhere).
void ReleaseFreeMemory();

}  // namespace holdfast
