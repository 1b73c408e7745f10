#pragma once

#include <cstddef>
#include <functional>

namespace holdfast {

// Runs `body(i)` for every i in [0, n) on up to `threads` threads, the
// caller's among them, each taking the next index until none is left;
// returns once every call has returned. For CPU-bound items that share
// nothing mutable: `body` must be safe to call concurrently with itself.
// The threads live for this call only, so nothing is left running after it.
void ParallelFor(size_t n, int threads, const std::function<void(size_t)>& body);

}  // namespace holdfast
