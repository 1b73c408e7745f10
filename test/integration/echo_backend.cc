// echo_backend: a gRPC Echo server used as an xDS endpoint in integration
// tests. It listens on 127.0.0.1:0 (insecure), writes the chosen port to
// --port-file atomically, and answers every Call with its --name, so a test
// can tell from client output which endpoint served an RPC.
//
//   echo_backend --name NAME --port-file FILE
//
// Exits on SIGTERM/SIGINT.

#include <csignal>
#include <cstdio>
#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "holdfast/test/echo.grpc.pb.h"
#include "port_file.h"

namespace holdfast::test {
namespace {

class EchoService final : public Echo::Service {
 public:
  explicit EchoService(std::string name) : name_(std::move(name)) {}

  grpc::Status Call(grpc::ServerContext* /*context*/, const EchoRequest* request,
                    EchoReply* reply) override {
    reply->set_backend(name_);
    reply->set_message(request->message());
    return grpc::Status::OK;
  }

 private:
  const std::string name_;
};

struct Flags {
  std::string name;
  std::string port_file;
};

absl::Status ParseFlags(int argc, char** argv, Flags& flags) {
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    if (i + 1 >= argc) return absl::InvalidArgumentError(absl::StrCat("missing value for ", arg));
    if (arg == "--name") {
      flags.name = argv[++i];
    } else if (arg == "--port-file") {
      flags.port_file = argv[++i];
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag ", arg));
    }
  }
  if (flags.name.empty() || flags.port_file.empty()) {
    return absl::InvalidArgumentError("usage: echo_backend --name NAME --port-file FILE");
  }
  return absl::OkStatus();
}

// Blocks the signals we exit on so a dedicated sigwait() can own them; the
// gRPC threads inherit the mask.
sigset_t BlockExitSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

int Run(int argc, char** argv) {
  Flags flags;
  if (absl::Status s = ParseFlags(argc, argv, flags); !s.ok()) {
    std::fprintf(stderr, "echo_backend: %s\n", std::string(s.message()).c_str());
    return 2;
  }
  const sigset_t exit_signals = BlockExitSignals();

  EchoService service(flags.name);
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    std::fprintf(stderr, "echo_backend: cannot listen on 127.0.0.1:0\n");
    return 1;
  }
  if (absl::Status s = WriteFileAtomically(flags.port_file, absl::StrCat(port, "\n")); !s.ok()) {
    std::fprintf(stderr, "echo_backend: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  std::fprintf(stderr, "echo_backend %s listening on 127.0.0.1:%d\n", flags.name.c_str(), port);

  int signal = 0;
  sigwait(&exit_signals, &signal);
  server->Shutdown();
  return 0;
}

}  // namespace
}  // namespace holdfast::test

int main(int argc, char** argv) { return holdfast::test::Run(argc, argv); }
