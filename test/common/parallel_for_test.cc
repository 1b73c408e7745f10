#include "src/common/parallel_for.h"

#include <sched.h>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"

namespace holdfast {
namespace {

TEST(ParallelForTest, CallsEveryIndexOnceAcrossThreads) {
  for (int threads : {1, 2, 4}) {
    for (size_t n : {0, 1, 3, 1000}) {
      std::vector<std::atomic<int>> calls(n);
      absl::Mutex mu;
      std::set<std::thread::id> workers;
      ParallelFor(n, threads, [&](size_t i) {
        calls[i].fetch_add(1);
        absl::MutexLock lock(&mu);
        workers.insert(std::this_thread::get_id());
      });
      for (size_t i = 0; i < n; ++i) EXPECT_EQ(calls[i].load(), 1) << i << " of " << n;
      EXPECT_LE(workers.size(), static_cast<size_t>(threads));
      if (n == 0) EXPECT_TRUE(workers.empty());
    }
  }
}

TEST(ParallelForTest, WorksOnOtherThreadsWhenAsked) {
  // Each item waits for both to be inside at once, which happens only if a
  // second thread runs one; run one after the other, the first gives up
  // after a minute and the test fails.
  std::atomic<int> inside{0};
  std::atomic<bool> met{false};
  ParallelFor(2, 2, [&](size_t) {
    inside.fetch_add(1);
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::minutes(1);
    while (!met.load() && std::chrono::steady_clock::now() < give_up) {
      if (inside.load() == 2) met.store(true);
      std::this_thread::yield();
    }
  });
  EXPECT_TRUE(met.load());
}

TEST(ThreadsForTest, FewItemsOneThreadElseConfiguredElseUsableCores) {
  EXPECT_EQ(ThreadsFor(10, 8), 1);
  EXPECT_EQ(ThreadsFor(1000, 8), 8);
  EXPECT_EQ(ThreadsFor(1000, 0), UsableCores());
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
  EXPECT_GE(UsableCores(), 1);
  EXPECT_LE(UsableCores(), CPU_COUNT(&allowed)) << "never more than the affinity allows";
}

TEST(ThreadsForTest, CpuQuotaCoresReadsCgroupCpuMax) {
  EXPECT_EQ(CpuQuotaCores("150000 100000\n"), 1.5);
  EXPECT_EQ(CpuQuotaCores("50000 100000"), 0.5);
  EXPECT_EQ(CpuQuotaCores("max 100000\n"), std::nullopt);
  EXPECT_EQ(CpuQuotaCores(""), std::nullopt);
  EXPECT_EQ(CpuQuotaCores("100000"), std::nullopt);
  EXPECT_EQ(CpuQuotaCores("-1 100000"), std::nullopt);
  EXPECT_EQ(CpuQuotaCores("100000 0"), std::nullopt);
}

}  // namespace
}  // namespace holdfast
