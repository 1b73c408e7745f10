#include "src/common/parallel_for.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "src/common/read_file.h"

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

int ThreadsFor(size_t items, int configured) {
  constexpr size_t kWorthThreads = 64;
  if (items < kWorthThreads) return 1;
  return configured > 0 ? configured : UsableCores();
}

int UsableCores() {
  int cores = static_cast<int>(std::thread::hardware_concurrency());
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0) cores = CPU_COUNT(&allowed);
  if (absl::StatusOr<std::string> cpu_max = ReadRegularFile("/sys/fs/cgroup/cpu.max", 4096);
      cpu_max.ok()) {
    if (std::optional<double> quota = CpuQuotaCores(*cpu_max)) {
      cores = std::min(cores, static_cast<int>(std::ceil(*quota)));
    }
  }
  return std::max(cores, 1);
}

std::optional<double> CpuQuotaCores(absl::string_view cpu_max) {
  std::vector<absl::string_view> fields =
      absl::StrSplit(absl::StripAsciiWhitespace(cpu_max), ' ', absl::SkipEmpty());
  double quota = 0, period = 0;
  if (fields.size() != 2 || !absl::SimpleAtod(fields[0], &quota) ||
      !absl::SimpleAtod(fields[1], &period) || quota <= 0 || period <= 0) {
    return std::nullopt;  // "max", or not a quota
  }
  return quota / period;
}

}  // namespace holdfast
