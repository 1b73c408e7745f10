// xds_cpp_client: a proxyless gRPC client that resolves its target through
// gRPC C++ core's own xDS client (resolver "xds", built into Debian's
// libgrpc). It is the independent xDS implementation under test: it fetches
// LDS/RDS/CDS/EDS from the server named in the bootstrap (env
// GRPC_XDS_BOOTSTRAP or GRPC_XDS_BOOTSTRAP_CONFIG), validates them, ACKs or
// NACKs, and routes RPCs by them.
//
//   xds_cpp_client --target xds:///echo.test [--interval-ms 100]
//                  [--deadline-ms 1000] [--count N] [--header NAME=VALUE]...
//
// Makes one Echo.Call every interval (forever unless --count), each carrying
// every --header as request metadata (what xDS header matchers see), and
// prints one line per RPC to stdout, flushed:
//   ok <backend-name>
//   error <numeric-code> <message on one line>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/string_view.h"
#include "holdfast/test/echo.grpc.pb.h"

namespace holdfast::test {
namespace {

struct Flags {
  std::string target;
  int interval_ms = 100;
  int deadline_ms = 1000;
  long count = 0;  // 0: forever
  std::vector<std::pair<std::string, std::string>> headers;  // sent with every RPC
};

absl::Status ParseFlags(int argc, char** argv, Flags& flags) {
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    if (i + 1 >= argc) return absl::InvalidArgumentError(absl::StrCat("missing value for ", arg));
    const absl::string_view value = argv[++i];
    bool ok = true;
    if (arg == "--target") {
      flags.target = std::string(value);
    } else if (arg == "--interval-ms") {
      ok = absl::SimpleAtoi(value, &flags.interval_ms) && flags.interval_ms >= 0;
    } else if (arg == "--deadline-ms") {
      ok = absl::SimpleAtoi(value, &flags.deadline_ms) && flags.deadline_ms > 0;
    } else if (arg == "--count") {
      ok = absl::SimpleAtoi(value, &flags.count) && flags.count >= 0;
    } else if (arg == "--header") {
      // gRPC metadata keys are lower case; an upper-case key would make
      // AddMetadata fail the call instead of sending it.
      const size_t eq = value.find('=');
      ok = eq != absl::string_view::npos && eq > 0 &&
           absl::AsciiStrToLower(value.substr(0, eq)) == value.substr(0, eq);
      if (ok) flags.headers.emplace_back(value.substr(0, eq), value.substr(eq + 1));
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag ", arg));
    }
    if (!ok) return absl::InvalidArgumentError(absl::StrCat("bad value for ", arg, ": ", value));
  }
  if (flags.target.empty()) return absl::InvalidArgumentError("--target is required");
  return absl::OkStatus();
}

// One line per RPC: a test reads them as a stream, so a message must not
// break the line structure.
std::string OneLine(absl::string_view text) {
  return absl::StrReplaceAll(text, {{"\n", " "}, {"\r", " "}});
}

int Run(int argc, char** argv) {
  Flags flags;
  if (absl::Status s = ParseFlags(argc, argv, flags); !s.ok()) {
    std::fprintf(stderr, "xds_cpp_client: %s\n", std::string(s.message()).c_str());
    return 2;
  }
  if (std::getenv("GRPC_XDS_BOOTSTRAP") == nullptr &&
      std::getenv("GRPC_XDS_BOOTSTRAP_CONFIG") == nullptr) {
    std::fprintf(stderr, "xds_cpp_client: warning: neither GRPC_XDS_BOOTSTRAP nor "
                         "GRPC_XDS_BOOTSTRAP_CONFIG is set\n");
  }
  // The data-plane channel is insecure; the xDS channel's credentials come
  // from the bootstrap's channel_creds.
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateChannel(flags.target, grpc::InsecureChannelCredentials());
  std::unique_ptr<Echo::Stub> stub = Echo::NewStub(channel);

  for (long n = 0; flags.count == 0 || n < flags.count; ++n) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::milliseconds(flags.deadline_ms));
    for (const auto& [name, value] : flags.headers) context.AddMetadata(name, value);
    EchoRequest request;
    request.set_message(absl::StrCat("rpc ", n));
    EchoReply reply;
    const grpc::Status status = stub->Call(&context, request, &reply);
    if (status.ok()) {
      std::printf("ok %s\n", reply.backend().c_str());
    } else {
      std::printf("error %d %s\n", static_cast<int>(status.error_code()),
                  OneLine(status.error_message()).c_str());
    }
    std::fflush(stdout);
    std::this_thread::sleep_for(std::chrono::milliseconds(flags.interval_ms));
  }
  return 0;
}

}  // namespace
}  // namespace holdfast::test

int main(int argc, char** argv) { return holdfast::test::Run(argc, argv); }
