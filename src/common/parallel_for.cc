#include "src/common/parallel_for.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace holdfast {

void ParallelFor(size_t n, int threads, const std::function<void(size_t)>& body) {
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) body(i);
  };
  const size_t helpers = std::min(n, static_cast<size_t>(std::max(threads, 1))) - (n > 0);
  std::vector<std::thread> pool;
  pool.reserve(helpers);
  for (size_t t = 0; t < helpers; ++t) pool.emplace_back(work);
  work();
  for (std::thread& thread : pool) thread.join();
}

}  // namespace holdfast
