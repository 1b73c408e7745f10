#pragma once

#include <cstdint>
#include <functional>

#include "absl/time/time.h"
#include "src/common/poller.h"

namespace holdfast {

// Hands freed heap memory back to the kernel once things go quiet.
//
// glibc keeps freed memory in its arenas unless it sits at the very top of
// the heap, and tcmalloc returns free spans only slowly, so a translation's
// temporaries or a fleet that disconnected stay in the resident set: about a
// third of an idle replica's heap. `activity` is any value that changes when the process did
// something worth trimming after (a publication, a stream coming or going).
// Checked every `interval`: once it has changed since the last trim and then
// held still for a whole interval, the heap is trimmed. Trimming walks the
// free lists with each arena's lock held (a few ms for hundreds of MB), so
// it waits for a quiet moment, except that under activity that never stops
// it still trims every `max_wait`.
class MemoryTrimmer {
 public:
  explicit MemoryTrimmer(std::function<uint64_t()> activity, absl::Duration interval,
                         absl::Duration max_wait)
      : activity_(std::move(activity)),
        checks_per_max_wait_(static_cast<int>(max_wait / interval)),
        interval_(interval) {}
  void Start() {
    poller_.Start(interval_, [this] { Check(); });
  }
  void Stop() { poller_.Stop(); }
  // One check; true if it trimmed. Called by Start()'s thread, or by tests.
  bool Check();

 private:
  std::function<uint64_t()> activity_;
  const int checks_per_max_wait_;
  const absl::Duration interval_;
  // Tick-thread state.
  bool trimmed_once_ = false;
  uint64_t trimmed_at_ = 0;  // activity at the last trim
  uint64_t last_seen_ = 0;   // activity at the last check
  int busy_checks_ = 0;      // checks since the last trim that saw activity
  Poller poller_;
};

// Returns freed heap memory to the kernel: tcmalloc's free spans when the
// process allocates with tcmalloc, else malloc_trim on glibc, else nothing.
void ReleaseFreeMemory();
// Whether the process allocates with tcmalloc (the shipped binary does).
bool AllocatorIsTcmalloc();

}  // namespace holdfast
