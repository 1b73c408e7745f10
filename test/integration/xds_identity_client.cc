// xds_identity_client: a scripted ADS client over mutual TLS, for the
// identity and certificate-rotation tests. It opens one
// StreamAggregatedResources stream with a client certificate, asks for every
// cluster as node --node-id, ACKs every response, and prints, flushed:
//   response <version_info> <cluster names, comma-separated>
//   status <numeric-code> <message on one line>     (when the stream ends)
//
//   xds_identity_client --target 127.0.0.1:PORT --ca PEM --cert PEM --key PEM
//                       --node-id ID [--cluster NAME]
//
// It runs until its stream ends or it is killed.

#include <grpcpp/grpcpp.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "envoy/config/cluster/v3/cluster.pb.h"
#include "envoy/service/discovery/v3/ads.grpc.pb.h"

namespace {

using envoy::service::discovery::v3::AggregatedDiscoveryService;
using envoy::service::discovery::v3::DiscoveryRequest;
using envoy::service::discovery::v3::DiscoveryResponse;

constexpr char kClusterType[] = "type.googleapis.com/envoy.config.cluster.v3.Cluster";

struct Flags {
  std::string target, ca, cert, key, node_id, cluster;
};

bool ParseFlags(int argc, char** argv, Flags* flags) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string name = argv[i];
    std::string* out = name == "--target"    ? &flags->target
                       : name == "--ca"      ? &flags->ca
                       : name == "--cert"    ? &flags->cert
                       : name == "--key"     ? &flags->key
                       : name == "--node-id" ? &flags->node_id
                       : name == "--cluster" ? &flags->cluster
                                             : nullptr;
    if (out == nullptr) return false;
    *out = argv[i + 1];
  }
  return !flags->target.empty() && !flags->ca.empty() && !flags->node_id.empty();
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string ClusterNames(const DiscoveryResponse& response) {
  std::vector<std::string> names;
  for (const auto& any : response.resources()) {
    envoy::config::cluster::v3::Cluster cluster;
    if (any.UnpackTo(&cluster)) names.push_back(cluster.name());
  }
  return absl::StrJoin(names, ",");
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  if (!ParseFlags(argc, argv, &flags)) {
    std::fprintf(stderr,
                 "usage: xds_identity_client --target HOST:PORT --ca PEM [--cert PEM --key PEM] "
                 "--node-id ID [--cluster NAME]\n");
    return 2;
  }
  grpc::SslCredentialsOptions tls{ReadFile(flags.ca), ReadFile(flags.key), ReadFile(flags.cert)};
  auto stub = AggregatedDiscoveryService::NewStub(
      grpc::CreateChannel(flags.target, grpc::SslCredentials(tls)));
  grpc::ClientContext context;
  auto stream = stub->StreamAggregatedResources(&context);
  DiscoveryRequest request;
  request.set_type_url(kClusterType);
  request.mutable_node()->set_id(flags.node_id);
  request.mutable_node()->set_cluster(flags.cluster);
  stream->Write(request);
  DiscoveryResponse response;
  while (stream->Read(&response)) {
    std::printf("response %s %s\n", response.version_info().c_str(),
                ClusterNames(response).c_str());
    std::fflush(stdout);
    DiscoveryRequest ack;
    ack.set_type_url(kClusterType);
    ack.set_version_info(response.version_info());
    ack.set_response_nonce(response.nonce());
    stream->Write(ack);
  }
  grpc::Status status = stream->Finish();
  std::printf("status %d %s\n", static_cast<int>(status.error_code()),
              absl::StrReplaceAll(status.error_message(), {{"\n", " "}}).c_str());
  std::fflush(stdout);
  return 0;
}
