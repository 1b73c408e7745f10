#include "src/common/memory_trim.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace holdfast {

void ReleaseFreeMemory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

void MemoryTrimmer::Start(absl::Duration interval) {
  poller_.Start(interval, [this] { MaybeTrim(); });
}

bool MemoryTrimmer::MaybeTrim() {
  uint64_t activity = activity_();
  if (trimmed_once_ && activity == trimmed_at_) return false;
  ReleaseFreeMemory();
  trimmed_at_ = activity;
  trimmed_once_ = true;
  return true;
}

}  // namespace holdfast
