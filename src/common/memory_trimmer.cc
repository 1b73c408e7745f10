#include "src/common/memory_trimmer.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

// gperftools' C entry point, present when the process allocates with
// tcmalloc (the shipped binary links it; tests and sanitizer builds do not).
extern "C" void MallocExtension_ReleaseFreeMemory(void) __attribute__((weak));

namespace holdfast {

bool AllocatorIsTcmalloc() { return MallocExtension_ReleaseFreeMemory != nullptr; }

void ReleaseFreeMemory() {
  if (AllocatorIsTcmalloc()) {
    MallocExtension_ReleaseFreeMemory();
    return;
  }
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

bool MemoryTrimmer::Check() {
  const uint64_t activity = activity_();
  const bool quiet = activity == last_seen_;
  last_seen_ = activity;
  if (trimmed_once_ && activity == trimmed_at_) {
    busy_checks_ = 0;
    return false;  // nothing happened since the last trim
  }
  if (!quiet && ++busy_checks_ < checks_per_max_wait_) return false;
  ReleaseFreeMemory();
  trimmed_once_ = true;
  trimmed_at_ = activity;
  busy_checks_ = 0;
  return true;
}

}  // namespace holdfast
