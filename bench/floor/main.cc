// xds_floor: the fleet benchmark's floor (bench/README.md, server kind
// `floor`). Serves hfpeer's resources for hfpeer's flags over ADS, state of
// the world and delta, on holdfast's gRPC library and transport settings,
// doing nothing but push pre-encoded responses and count ACKs: what any
// server on this library costs at least.
//
//   xds_floor [--xds-listen 127.0.0.1:0] [--admin-listen 127.0.0.1:0] [--ports-file F]
//             [--clusters 1000] [--routes 1000] [--endpoints 3] [--listeners 2]
//
// HTTP on --admin-listen:
//   GET  /readyz                        200 once serving
//   GET  /stats                         streams, requests, ACKs, NACKs, responses, bytes (JSON)
//   POST /change?gen=G&clusters=1,2     those clusters' endpoints move to generation G
#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "bench/floor/admin_http.h"
#include "bench/floor/floor_server.h"
#include "src/common/memory_trimmer.h"

namespace xds_floor {
namespace {

struct Flags {
  std::string xds_listen = "127.0.0.1:0";
  std::string admin_listen = "127.0.0.1:0";
  std::string ports_file;
  FleetParams params;
};

bool ParseFlags(int argc, char** argv, Flags* flags) {
  for (int k = 1; k < argc; ++k) {
    std::string name = argv[k], value;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    } else if (k + 1 < argc) {
      value = argv[++k];
    } else {
      return false;
    }
    int* number = name == "--clusters"    ? &flags->params.clusters
                  : name == "--routes"    ? &flags->params.routes
                  : name == "--endpoints" ? &flags->params.endpoints_per_cluster
                  : name == "--listeners" ? &flags->params.listeners
                                          : nullptr;
    if (number != nullptr) {
      if (!absl::SimpleAtoi(value, number) || *number < 0) return false;
    } else if (name == "--xds-listen") {
      flags->xds_listen = value;
    } else if (name == "--admin-listen") {
      flags->admin_listen = value;
    } else if (name == "--ports-file") {
      flags->ports_file = value;
    } else {
      return false;
    }
  }
  return flags->params.clusters > 0;
}

// POST /change?gen=G&clusters=1,2
HttpReply Change(FloorServer& server, absl::string_view target) {
  int gen = -1;
  std::vector<int> clusters;
  const size_t query = target.find('?');
  if (query == absl::string_view::npos) return {400, "want ?gen=G&clusters=...\n"};
  for (absl::string_view param : absl::StrSplit(target.substr(query + 1), '&')) {
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(param, '=');
    if (kv.first == "gen" && !absl::SimpleAtoi(kv.second, &gen)) return {400, "bad gen\n"};
    if (kv.first != "clusters") continue;
    for (absl::string_view id : absl::StrSplit(kv.second, ',')) {
      int i;
      if (!absl::SimpleAtoi(id, &i)) return {400, absl::StrCat("bad cluster ", id, "\n")};
      clusters.push_back(i);
    }
  }
  if (gen < 1 || clusters.empty()) return {400, "want gen >= 1 and clusters\n"};
  absl::Status status = server.Change(gen, clusters);
  if (!status.ok()) return {400, absl::StrCat(status.message(), "\n")};
  return {200, "ok\n"};
}

std::string Stats(const FloorServer& server) {
  const Counters& c = server.counters();
  return absl::StrCat("{\"streams\":", c.streams.load(), ",\"requests\":", c.requests.load(),
                      ",\"acks\":", c.acks.load(), ",\"nacks\":", c.nacks.load(),
                      ",\"responses\":", c.responses.load(),
                      ",\"bytes_sent\":", c.bytes_sent.load(),
                      ",\"endpoint_changes\":", server.seq(), "}\n");
}

bool WritePortsFile(const std::string& path, int xds, int admin) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << "{\"xds\":" << xds << ",\"admin\":" << admin << "}\n";
    if (!out) return false;
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  return !ec;
}

int Run(int argc, char** argv) {
  Flags flags;
  if (!ParseFlags(argc, argv, &flags)) {
    std::fprintf(stderr, "usage: see the comment at the top of bench/floor/main.cc\n");
    return 2;
  }
  // Signals are taken by this thread; block them before gRPC starts threads.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  std::unique_ptr<FloorServer> server = FloorServer::Start(flags.params, flags.xds_listen);
  if (server == nullptr) {
    std::fprintf(stderr, "cannot listen for xDS on %s\n", flags.xds_listen.c_str());
    return 1;
  }
  FloorServer& floor = *server;
  auto admin = AdminHttp::Start(
      flags.admin_listen, [&floor](absl::string_view method, absl::string_view target) {
        if (target == "/readyz") return HttpReply{200, "ok\n"};
        if (target == "/stats") return HttpReply{200, Stats(floor)};
        if (absl::StartsWith(target, "/change")) {
          return method == "POST" ? Change(floor, target) : HttpReply{405, "POST only\n"};
        }
        return HttpReply{404, "not found\n"};
      });
  if (admin == nullptr) {
    std::fprintf(stderr, "cannot listen for HTTP on %s\n", flags.admin_listen.c_str());
    return 1;
  }
  // As holdfast: freed heap back to the kernel after a quiet second (a
  // change, or a stream coming or going, is activity).
  holdfast::MemoryTrimmer trimmer(
      [&floor] { return floor.seq() * 1'000'003 + floor.counters().streams.load(); },
      absl::Seconds(1), absl::Seconds(30));
  trimmer.Start();
  if (!flags.ports_file.empty() &&
      !WritePortsFile(flags.ports_file, server->port(), admin->port())) {
    std::fprintf(stderr, "cannot write %s\n", flags.ports_file.c_str());
    return 1;
  }
  std::fprintf(stderr,
               "xds_floor: xds port %d, admin port %d, %d clusters %d routes %d "
               "endpoints/cluster %d listeners\n",
               server->port(), admin->port(), flags.params.clusters, flags.params.routes,
               flags.params.endpoints_per_cluster, flags.params.listeners);
  int signal_number = 0;
  sigwait(&signals, &signal_number);
  trimmer.Stop();
  admin.reset();
  std::fprintf(stderr, "xds_floor: %s", Stats(floor).c_str());
  return 0;
}

}  // namespace
}  // namespace xds_floor

int main(int argc, char** argv) { return xds_floor::Run(argc, argv); }
