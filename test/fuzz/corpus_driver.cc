// Runs a fuzz target over every file of the corpus directories (or single
// files) given on the command line, so the corpus is a regression test in
// ordinary builds (libFuzzer builds link the target with -fsanitize=fuzzer
// instead).
//
//   <target>_corpus [--budget-ms N] DIR_OR_FILE...
//
// Each input has a time budget (default 1000 ms: the slowest input takes
// about 12 ms in a release build and 50 ms in the AddressSanitizer Debug
// build CI runs the corpora in, leaving room for a loaded machine): an input
// that takes longer fails the run, naming the file, and one still running at
// twice the budget is caught by a watchdog that does the same, so a hang
// fails instead of stalling the run.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

using Clock = std::chrono::steady_clock;

// Watches the input being run; exits the process if it overruns its budget.
class Watchdog {
 public:
  explicit Watchdog(std::chrono::milliseconds budget) : budget_(budget) {
    thread_ = std::thread([this] { Watch(); });
  }
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void Start(const std::string& file) {
    std::lock_guard<std::mutex> lock(mu_);
    file_ = file;
    started_ = Clock::now();
    running_ = true;
  }
  void Stop() {
    std::lock_guard<std::mutex> lock(mu_);
    running_ = false;
  }

 private:
  void Watch() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!done_) {
      cv_.wait_for(lock, std::chrono::milliseconds(50));
      if (running_ && Clock::now() - started_ > 2 * budget_) {
        std::fprintf(stderr, "corpus input %s still running after %lld ms (budget %lld ms)\n",
                     file_.c_str(), static_cast<long long>(2 * budget_.count()),
                     static_cast<long long>(budget_.count()));
        std::fflush(stderr);
        std::_Exit(1);
      }
    }
  }

  const std::chrono::milliseconds budget_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  bool running_ = false;
  std::string file_;
  Clock::time_point started_;
  std::thread thread_;
};

std::vector<std::filesystem::path> CorpusFiles(const std::vector<std::string>& paths) {
  std::vector<std::filesystem::path> files;
  for (const std::string& path : paths) {
    if (!std::filesystem::is_directory(path)) {
      files.push_back(path);  // one input, as libFuzzer takes it to reproduce a crash
      continue;
    }
    for (const auto& entry : std::filesystem::recursive_directory_iterator(path)) {
      if (entry.is_regular_file()) files.push_back(entry.path());
    }
  }
  return files;
}

}  // namespace

int main(int argc, char** argv) {
  std::chrono::milliseconds budget(1000);
  std::vector<std::string> dirs;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--budget-ms") == 0 && i + 1 < argc) {
      budget = std::chrono::milliseconds(std::atoll(argv[++i]));
    } else {
      dirs.push_back(argv[i]);
    }
  }
  std::vector<std::filesystem::path> files = CorpusFiles(dirs);
  int over = 0;
  {
    Watchdog watchdog(budget);
    for (const std::filesystem::path& path : files) {
      std::ifstream in(path, std::ios::binary);
      std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      watchdog.Start(path.string());
      Clock::time_point start = Clock::now();
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(data.data()), data.size());
      auto took = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start);
      watchdog.Stop();
      if (took > budget) {
        ++over;
        std::fprintf(stderr, "corpus input %s took %.3f ms, over its budget of %lld ms\n",
                     path.c_str(), took.count() / 1000.0, static_cast<long long>(budget.count()));
      }
    }
  }
  std::printf("ran %zu corpus inputs, %d over budget\n", files.size(), over);
  return !files.empty() && over == 0 ? 0 : 1;
}
