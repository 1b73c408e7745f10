#include "src/app/serve.h"

#include <signal.h>

#include <filesystem>
#include <fstream>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "grpc/support/log.h"
#include "nlohmann/json.hpp"
#include "src/app/server.h"
#include "src/common/descriptors.h"
#include "src/common/log.h"

namespace holdfast {
namespace {

// gRPC logs some failures on every attempt: a TLS handshake that fails, on
// every reconnect (every 2 s at most), for as long as it fails. holdfast
// reports those failures itself (/debug/store, once in its own log), so a
// gRPC error is logged as a warning when its call site has been quiet for
// kGrpcLogQuiet, and repeats before that only as debug messages.
constexpr absl::Duration kGrpcLogQuiet = absl::Minutes(1);

void LogGrpcMessage(gpr_log_func_args* args) {
  NoteGrpcLogMessage(args->message);  // how a dead xDS listener is noticed
  if (args->severity != GPR_LOG_SEVERITY_ERROR) {
    LogDebug("grpc: %s (%s:%d)", args->message, args->file, args->line);
    return;
  }
  static absl::Mutex* const mu = new absl::Mutex;
  static auto* const last_seen = new absl::flat_hash_map<std::pair<std::string, int>, absl::Time>;
  absl::Time now = absl::Now();
  bool repeat;
  {
    absl::MutexLock lock(mu);
    absl::Time& seen = (*last_seen)[{args->file, args->line}];
    repeat = now - seen < kGrpcLogQuiet;
    seen = now;
  }
  Logf(repeat ? LogLevel::kDebug : LogLevel::kWarning, "grpc: %s (%s:%d)", args->message,
       args->file, args->line);
}

absl::Status WritePortsFile(const std::string& path, const Server& server) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    nlohmann::json ports = {{"xds", server.xds_port()}, {"admin", server.admin_port()}};
    if (server.webhook_port() != 0) ports["webhook"] = server.webhook_port();
    out << ports.dump() << "\n";
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", tmp));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot rename ", tmp, ": ", ec.message()));
  return absl::OkStatus();
}

}  // namespace

int RunServe(const ServeOptions& options) {
  // Signals are taken synchronously by this thread; block them before any
  // other thread exists so none of those receives them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  gpr_set_log_function(LogGrpcMessage);
  RaiseOpenFilesLimitAndLog();

  absl::StatusOr<std::unique_ptr<Server>> server = Server::Start(options);
  if (!server.ok()) {
    LogError("%s", server.status().message());
    return absl::IsInvalidArgument(server.status()) ? 2 : 1;
  }
  if (!options.ports_file.empty()) {
    absl::Status written = WritePortsFile(options.ports_file, **server);
    if (!written.ok()) {
      LogError("%s", written.message());
      return 1;
    }
  }
  int signal_number = 0;
  sigwait(&signals, &signal_number);
  LogInfo("received signal %d, shutting down", signal_number);
  (*server)->Stop();
  return 0;
}

}  // namespace holdfast
