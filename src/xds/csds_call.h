#pragma once

#include "grpcpp/generic/async_generic_service.h"
#include "grpcpp/support/byte_buffer.h"
#include "src/common/thread_handoff.h"
#include "src/xds/proxy_state.h"

namespace holdfast {

// One call of envoy.service.status.v3.ClientStatusDiscoveryService on the
// generic xDS server: FetchClientStatus answers one request,
// StreamClientStatus answers each request until the client half-closes.
// Answers come from AnswerClientStatus over the proxies connected now; a
// request that cannot be parsed or whose node matchers are invalid ends the
// call with INVALID_ARGUMENT, one whose answer would be too large with
// RESOURCE_EXHAUSTED. Deletes itself when done.
class CsdsCall : public grpc::ServerGenericBidiReactor {
 public:
  static constexpr absl::string_view kFetchMethod =
      "/envoy.service.status.v3.ClientStatusDiscoveryService/FetchClientStatus";
  static constexpr absl::string_view kStreamMethod =
      "/envoy.service.status.v3.ClientStatusDiscoveryService/StreamClientStatus";

  CsdsCall(const ProxyRegistry* proxies, bool streaming);

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnDone() override {
    TakeOver(this);
    delete this;
  }

 private:
  const ProxyRegistry* proxies_;
  const bool streaming_;
  grpc::ByteBuffer request_;
  grpc::ByteBuffer response_;
};

}  // namespace holdfast
