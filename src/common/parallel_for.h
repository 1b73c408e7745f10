#pragma once

#include <cstddef>
#include <functional>
#include <optional>

#include "absl/strings/string_view.h"

namespace holdfast {

// Runs `body(i)` for every i in [0, n) on up to `threads` threads, the
// caller's among them, each taking the next index until none is left;
// returns once every call has returned. For CPU-bound items that share
// nothing mutable: `body` must be safe to call concurrently with itself.
// The threads live for this call only, so nothing is left running after it.
void ParallelFor(size_t n, int threads, const std::function<void(size_t)>& body);

// How many threads to run `items` independent CPU-bound items on: one below
// a few dozen (starting threads costs more than it saves), else
// `configured` if positive, else UsableCores().
int ThreadsFor(size_t items, int configured);

// The cores this process may run on: those of its CPU affinity (taskset,
// cpusets), and no more than its cgroup's CPU quota (/sys/fs/cgroup/cpu.max
// as a container sees it) rounded up. More threads than that take turns on
// the same cores, which made a one-core run of two decode threads slower
// than one thread alone.
int UsableCores();

// The quota in cores of a cgroup v2 `cpu.max` ("150000 100000" -> 1.5);
// nullopt for "max" (no quota) or text that is not one.
std::optional<double> CpuQuotaCores(absl::string_view cpu_max);

}  // namespace holdfast
