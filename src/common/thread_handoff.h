#pragma once

// ThreadSanitizer sees an order between threads only through the
// synchronization it instruments. gRPC hands a reactor between its threads
// (created on one, each callback on whichever thread runs it) with atomics
// inside libgrpc, which Debian builds without TSan, so TSan cannot see that
// a callback comes after the call that started its operation. A reactor
// states that order itself: HandOff(this) right before each call that
// starts an operation (StartRead, StartWrite, Finish), TakeOver(this) first
// in each callback. Both are empty outside TSan builds.

#if defined(__SANITIZE_THREAD__)
#define HOLDFAST_THREAD_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define HOLDFAST_THREAD_SANITIZER 1
#endif
#endif

#ifdef HOLDFAST_THREAD_SANITIZER
#include <sanitizer/tsan_interface.h>
#endif

namespace holdfast {

inline void HandOff([[maybe_unused]] void* reactor) {
#ifdef HOLDFAST_THREAD_SANITIZER
  __tsan_release(reactor);
#endif
}

inline void TakeOver([[maybe_unused]] void* reactor) {
#ifdef HOLDFAST_THREAD_SANITIZER
  __tsan_acquire(reactor);
#endif
}

}  // namespace holdfast
